package org.tent4j.platform.ascend;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CopyOnWriteArrayList;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferException;
import org.tent4j.spi.platform.DeviceInfo;
import org.tent4j.spi.platform.DevicePlatform;
import org.tent4j.spi.platform.DeviceStream;
import org.tent4j.spi.platform.PointerInfo;
import org.tent4j.platform.common.IpcMappings;
import org.tent4j.platform.common.NativeStream;
import org.tent4j.platform.common.PlatformChecks;
import org.tent4j.platform.ascend.AclRuntime.Block;

/**
 * Ascend NPU memory through AscendCL.
 *
 * <p>Unlike CUDA and HIP, {@code aclrtMemcpy} needs the copy direction, so the platform tells host from device
 * memory itself: memory it allocated or imported is known; anything else is asked of
 * {@code aclrtPointerGetAttributes} when the runtime has it, and taken as host memory otherwise.
 *
 * <p>IPC handles are the NUL-free bytes of the key {@code aclrtIpcMemGetExportKey} returns for exactly the exported
 * range, exported with {@code ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION} because the exporter cannot know
 * the importing process. The exporter closes its keys ({@code aclrtIpcMemClose}) before freeing the memory, as the
 * CANN documentation requires.
 */
final class AscendPlatform implements DevicePlatform {
    private static final Logger LOG = LoggerFactory.getLogger(AscendPlatform.class);

    private final AclRuntime acl;
    private final int deviceCount;
    private volatile List<DeviceInfo> devices;
    /** The runtime's registry of device blocks made through tent4j. */
    private final ConcurrentSkipListMap<Long, Block> deviceBlocks;
    /** Device blocks this instance allocated, freed by {@link #close} if still live. */
    private final Set<Long> ownedBlocks = ConcurrentHashMap.newKeySet();
    private final ConcurrentSkipListMap<Long, Block> importedBlocks = new ConcurrentSkipListMap<>();
    private final Map<Long, Long> hostBlocks = new ConcurrentHashMap<>();
    private final Set<NativeStream> streams = ConcurrentHashMap.newKeySet();
    /** Imports by (device, key): one import per key and device, shared by repeated opens. */
    private final IpcMappings imports = new IpcMappings(this::closeImport);
    private volatile boolean closed;

    AscendPlatform(AclRuntime acl, int deviceCount) {
        this.acl = acl;
        this.deviceCount = deviceCount;
        this.deviceBlocks = acl.deviceBlocks;
    }

    @Override
    public MemoryKind memoryKind() {
        return MemoryKind.NPU;
    }

    @Override
    public List<DeviceInfo> devices() {
        ensureOpen();
        List<DeviceInfo> d = devices;
        if (d == null) {
            synchronized (this) {
                if (devices == null) {
                    List<DeviceInfo> out = new ArrayList<>(deviceCount);
                    String soc = acl.socName();
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment free = arena.allocate(JAVA_LONG);
                        MemorySegment total = arena.allocate(JAVA_LONG);
                        for (int i = 0; i < deviceCount; i++) {
                            acl.useDevice(i);
                            acl.check(acl.getMemInfo(AclRuntime.MEM_ATTR_HBM, free, total),
                                    "aclrtGetMemInfo(ACL_HBM_MEM, npu:" + i + ")");
                            out.add(DeviceInfo.of(i, soc, total.get(JAVA_LONG, 0), ""));
                        }
                    }
                    devices = List.copyOf(out);
                }
                d = devices;
            }
        }
        return d;
    }

    @Override
    public MemorySegment allocate(int device, long size) {
        ensureOpen();
        checkDevice(device);
        PlatformChecks.checkSize(size);
        try (Arena arena = Arena.ofConfined()) {
            acl.useDevice(device);
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = acl.malloc(out, size, AclRuntime.MEM_MALLOC_HUGE_FIRST);
            if (rc != AclRuntime.SUCCESS) {
                throw acl.error(rc, "aclrtMalloc(" + size + " bytes on npu:" + device + ")");
            }
            long address = out.get(ADDRESS, 0).address();
            deviceBlocks.put(address, new Block(size, device, new CopyOnWriteArrayList<>()));
            ownedBlocks.add(address);
            return MemorySegment.ofAddress(address).reinterpret(size);
        }
    }

    @Override
    public void free(MemorySegment deviceMemory) {
        ensureOpen();
        long address = deviceMemory.address();
        Block block = deviceBlocks.remove(address);
        if (block == null) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "aclrtFree(0x" + Long.toHexString(address)
                    + ") refused: not allocated by this ascend platform, or freed already");
        }
        ownedBlocks.remove(address);
        release(address, block);
    }

    private void release(long address, Block block) {
        acl.useDevice(block.device());
        for (String key : block.exportedKeys()) {
            closeKey(key);
        }
        int rc = acl.free(MemorySegment.ofAddress(address));
        if (rc != AclRuntime.SUCCESS) {
            throw acl.error(rc, "aclrtFree(0x" + Long.toHexString(address) + ")");
        }
    }

    private void closeKey(String key) {
        try (Arena arena = Arena.ofConfined()) {
            int rc = acl.ipcMemClose(arena.allocateFrom(key));
            if (rc != AclRuntime.SUCCESS) {
                throw acl.error(rc, "aclrtIpcMemClose(" + key + ")");
            }
        }
    }

    @Override
    public MemorySegment allocateHost(long size) {
        ensureOpen();
        PlatformChecks.checkSize(size);
        try (Arena arena = Arena.ofConfined()) {
            acl.useDevice(0);
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = acl.mallocHost(out, size);
            if (rc != AclRuntime.SUCCESS) {
                throw acl.error(rc, "aclrtMallocHost(" + size + " bytes)");
            }
            long address = out.get(ADDRESS, 0).address();
            hostBlocks.put(address, size);
            return MemorySegment.ofAddress(address).reinterpret(size);
        }
    }

    @Override
    public void freeHost(MemorySegment hostMemory) {
        ensureOpen();
        long address = hostMemory.address();
        if (hostBlocks.remove(address) == null) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "aclrtFreeHost(0x" + Long.toHexString(address)
                    + ") refused: not allocated by this ascend platform, or freed already");
        }
        acl.useDevice(0);
        acl.check(acl.freeHost(MemorySegment.ofAddress(address)), "aclrtFreeHost(0x" + Long.toHexString(address) + ")");
    }

    @Override
    public PointerInfo classify(long address) {
        ensureOpen();
        int device = deviceOf(address);
        if (device >= 0) {
            return PointerInfo.of(Location.device(MemoryKind.NPU, device), false);
        }
        return PointerInfo.of(Location.CPU, isPinnedHost(address));
    }

    private boolean isPinnedHost(long address) {
        for (Map.Entry<Long, Long> e : hostBlocks.entrySet()) {
            if (address >= e.getKey() && address - e.getKey() < e.getValue()) {
                return true;
            }
        }
        return false;
    }

    /** The NPU holding {@code address}, or -1 for host memory. */
    int deviceOf(long address) {
        int d = within(deviceBlocks, address);
        if (d >= 0) {
            return d;
        }
        d = within(importedBlocks, address);
        if (d >= 0 || !acl.hasPointerAttributes()) {
            return d;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attributes = arena.allocate(AclRuntime.PTR_ATTRIBUTES_BYTES, 8);
            int rc = acl.pointerGetAttributes(MemorySegment.ofAddress(address), attributes);
            if (rc != AclRuntime.SUCCESS) {
                throw acl.error(rc, "aclrtPointerGetAttributes(0x" + Long.toHexString(address) + ")");
            }
            int type = attributes.get(JAVA_INT, AclRuntime.PTR_ATTRIBUTES_LOCATION_TYPE);
            return type == AclRuntime.MEM_LOCATION_TYPE_DEVICE || type == AclRuntime.MEM_LOCATION_TYPE_MANAGED
                    ? attributes.get(JAVA_INT, AclRuntime.PTR_ATTRIBUTES_LOCATION_ID) : -1;
        }
    }

    private static int within(ConcurrentSkipListMap<Long, Block> blocks, long address) {
        Map.Entry<Long, Block> e = blocks.floorEntry(address);
        return e != null && address - e.getKey() < e.getValue().size() ? e.getValue().device() : -1;
    }

    static int memcpyKind(int srcDevice, int dstDevice) {
        if (srcDevice < 0) {
            return dstDevice < 0 ? AclRuntime.MEMCPY_HOST_TO_HOST : AclRuntime.MEMCPY_HOST_TO_DEVICE;
        }
        return dstDevice < 0 ? AclRuntime.MEMCPY_DEVICE_TO_HOST : AclRuntime.MEMCPY_DEVICE_TO_DEVICE;
    }

    @Override
    public void copy(MemorySegment dst, MemorySegment src, long length) {
        ensureOpen();
        PlatformChecks.checkCopy(dst, src, length);
        if (length == 0) {
            return;
        }
        int srcDevice = deviceOf(src.address());
        int dstDevice = deviceOf(dst.address());
        acl.useDevice(dstDevice >= 0 ? dstDevice : Math.max(srcDevice, 0));
        int rc = acl.memcpy(dst, dst.byteSize(), src, length, memcpyKind(srcDevice, dstDevice));
        if (rc != AclRuntime.SUCCESS) {
            throw acl.error(rc, "aclrtMemcpy(dst=0x" + Long.toHexString(dst.address()) + ", src=0x"
                    + Long.toHexString(src.address()) + ", " + length + " bytes, kind " + memcpyKind(srcDevice, dstDevice) + ")");
        }
    }

    @Override
    public DeviceStream createStream(int device) {
        ensureOpen();
        checkDevice(device);
        try (Arena arena = Arena.ofConfined()) {
            acl.useDevice(device);
            MemorySegment out = arena.allocate(ADDRESS);
            acl.check(acl.createStream(out), "aclrtCreateStream(npu:" + device + ")");
            AscendStream stream = new AscendStream(acl, this, MemorySegment.ofAddress(out.get(ADDRESS, 0).address()), device,
                    streams::remove);
            streams.add(stream);
            return stream;
        }
    }

    @Override
    public byte[] exportIpcHandle(MemorySegment deviceMemory) {
        ensureOpen();
        long address = deviceMemory.address();
        long length = deviceMemory.byteSize();
        Map.Entry<Long, Block> own = deviceBlocks.floorEntry(address);
        int device = deviceOf(address);
        if (device < 0) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "aclrtIpcMemGetExportKey(0x"
                    + Long.toHexString(address) + ") refused: memory is host memory, not NPU memory");
        }
        try (Arena arena = Arena.ofConfined()) {
            acl.useDevice(device);
            MemorySegment key = arena.allocate(AclRuntime.IPC_KEY_BYTES);
            int rc = acl.ipcMemGetExportKey(MemorySegment.ofAddress(address), length, key, AclRuntime.IPC_KEY_BYTES,
                    AclRuntime.IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
            if (rc != AclRuntime.SUCCESS) {
                throw acl.error(rc, "aclrtIpcMemGetExportKey(0x" + Long.toHexString(address) + ", " + length
                        + " bytes on npu:" + device + ")");
            }
            String k = key.getString(0);
            if (own != null && address - own.getKey() < own.getValue().size()) {
                own.getValue().exportedKeys().add(k);
            }
            return k.getBytes(StandardCharsets.US_ASCII);
        }
    }

    @Override
    public MemorySegment openIpcHandle(byte[] handle, long size, int device) {
        ensureOpen();
        checkDevice(device);
        PlatformChecks.checkSize(size);
        if (handle == null || handle.length == 0 || handle.length >= AclRuntime.IPC_KEY_BYTES) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "ascend IPC key must be 1 to "
                    + (AclRuntime.IPC_KEY_BYTES - 1) + " bytes, got " + (handle == null ? "null" : handle.length));
        }
        String key = new String(handle, StandardCharsets.US_ASCII);
        return imports.open(device + ":" + key, device, 0, size, () -> {
            try (Arena arena = Arena.ofConfined()) {
                acl.useDevice(device);
                MemorySegment out = arena.allocate(ADDRESS);
                MemorySegment k = arena.allocateFrom(key);
                int rc = acl.ipcMemImportByKey(out, k, AclRuntime.IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS);
                if (rc == AclRuntime.ERROR_INVALID_PARAM || rc == AclRuntime.ERROR_RT_PARAM_INVALID) {
                    // CANN releases before the peer-access flag take only 0 here
                    rc = acl.ipcMemImportByKey(out, k, AclRuntime.IPC_MEM_IMPORT_FLAG_DEFAULT);
                }
                if (rc != AclRuntime.SUCCESS) {
                    throw acl.error(rc, "aclrtIpcMemImportByKey(" + key + " on npu:" + device + ")");
                }
                long address = out.get(ADDRESS, 0).address();
                importedBlocks.put(address, new Block(size, device, List.of()));
                return address;
            }
        });
    }

    @Override
    public void closeIpcMapping(MemorySegment mapped) {
        ensureOpen();
        long address = mapped.address();
        if (!imports.close(address)) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "aclrtIpcMemClose(0x"
                    + Long.toHexString(address) + ") refused: not an IPC import of this ascend platform");
        }
    }

    /** The last close of an import: {@code importKey} is {@code "<device>:<key>"}. */
    private void closeImport(String importKey, long address, int device) {
        importedBlocks.remove(address);
        acl.useDevice(device);
        closeKey(importKey.substring(importKey.indexOf(':') + 1));
    }

    private void checkDevice(int device) {
        PlatformChecks.checkDevice(device, deviceCount, "npu", "NPU");
    }

    private void ensureOpen() {
        PlatformChecks.ensureOpen(closed, "ascend");
    }

    int liveAllocations() {
        return ownedBlocks.size() + hostBlocks.size();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (NativeStream s : List.copyOf(streams)) {
            quietly(s::close, "stream");
        }
        imports.closeAll((importKey, address, device) ->
                quietly(() -> closeKey(importKey.substring(importKey.indexOf(':') + 1)), "IPC import"));
        importedBlocks.clear();
        if (!ownedBlocks.isEmpty() || !hostBlocks.isEmpty()) {
            LOG.warn("ascend platform closed with {} device and {} host allocations still live; freeing them",
                    ownedBlocks.size(), hostBlocks.size());
        }
        for (Long address : List.copyOf(ownedBlocks)) {
            ownedBlocks.remove(address);
            Block block = deviceBlocks.remove(address);
            if (block != null) {
                quietly(() -> release(address, block), "device allocation");
            }
        }
        for (Long address : List.copyOf(hostBlocks.keySet())) {
            hostBlocks.remove(address);
            quietly(() -> acl.check(acl.freeHost(MemorySegment.ofAddress(address)),
                    "aclrtFreeHost(0x" + Long.toHexString(address) + ")"), "host allocation");
        }
    }

    private static void quietly(Runnable action, String what) {
        PlatformChecks.quietly(LOG, action, what);
    }
}
