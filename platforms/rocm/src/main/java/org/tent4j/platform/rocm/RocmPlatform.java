package org.tent4j.platform.rocm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;

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
import org.tent4j.platform.common.CurrentDevice;
import org.tent4j.platform.common.IpcHandleOffset;
import org.tent4j.platform.common.IpcMappings;
import org.tent4j.platform.common.NativeStream;
import org.tent4j.platform.common.PlatformChecks;

/**
 * ROCm device memory through libamdhip64.
 *
 * <p>IPC handles this platform exports are {@code hipIpcMemHandle_t} (64 bytes) followed by the little-endian
 * offset of the exported range inside its hipMalloc block (8 bytes): a HIP handle names the whole block and
 * {@code hipIpcOpenMemHandle} returns the block's base, so without the offset an importer of a sub-range would land
 * on the wrong bytes.
 */
final class RocmPlatform implements DevicePlatform {
    private static final Logger LOG = LoggerFactory.getLogger(RocmPlatform.class);

    static final int IPC_HANDLE_BYTES = HipRuntime.IPC_HANDLE_BYTES + Long.BYTES;

    private final HipRuntime hip;
    private final int deviceCount;
    private volatile List<DeviceInfo> devices;
    /** hipMalloc blocks made here: base address → block; ordered so an interior address finds its block. */
    private final ConcurrentSkipListMap<Long, Block> deviceBlocks = new ConcurrentSkipListMap<>();
    private final Map<Long, Long> hostBlocks = new ConcurrentHashMap<>();
    private final Set<NativeStream> streams = ConcurrentHashMap.newKeySet();
    /** Opened IPC handles by (device, 64 handle bytes): a handle is mapped once per process and device, repeats share it. */
    private final IpcMappings ipc = new IpcMappings(this::closeHandle);
    private final CurrentDevice currentDevice = new CurrentDevice() {
        @Override
        protected int current() {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(JAVA_INT);
                return hip.getDevice(out) == HipRuntime.SUCCESS ? out.get(JAVA_INT, 0) : -1;
            }
        }

        @Override
        protected void select(int device) {
            int rc = hip.setDevice(device);
            if (rc != HipRuntime.SUCCESS) {
                throw hip.error(rc, "hipSetDevice(" + device + ")");
            }
        }

        @Override
        protected void selectQuietly(int device) {
            if (hip.setDevice(device) != HipRuntime.SUCCESS) {
                hip.clearLastError();
            }
        }
    };
    private volatile boolean closed;

    private record Block(long size, int device) {
    }

    private final int runtimeMajor;

    RocmPlatform(HipRuntime hip, int deviceCount, int runtimeVersion) {
        this.hip = hip;
        this.deviceCount = deviceCount;
        this.runtimeMajor = HipRuntime.majorVersion(runtimeVersion);
    }

    @Override
    public MemoryKind memoryKind() {
        return MemoryKind.ROCM;
    }

    @Override
    public List<DeviceInfo> devices() {
        ensureOpen();
        List<DeviceInfo> d = devices;
        if (d == null) {
            synchronized (this) {
                if (devices == null) {
                    devices = List.copyOf(probeDevices());
                }
                d = devices;
            }
        }
        return d;
    }

    private List<DeviceInfo> probeDevices() {
        List<DeviceInfo> out = new ArrayList<>(deviceCount);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment name = arena.allocate(256);
            MemorySegment total = arena.allocate(JAVA_LONG);
            MemorySegment pci = arena.allocate(64);
            for (int i = 0; i < deviceCount; i++) {
                name.fill((byte) 0);
                hip.check(hip.deviceGetName(name, (int) name.byteSize(), i), "hipDeviceGetName(rocm:" + i + ")");
                hip.check(hip.deviceTotalMem(total, i), "hipDeviceTotalMem(rocm:" + i + ")");
                pci.fill((byte) 0);
                int rc = hip.deviceGetPciBusId(pci, (int) pci.byteSize(), i);
                String busId = "";
                if (rc == HipRuntime.SUCCESS) {
                    busId = pci.getString(0);
                } else {
                    LOG.debug("hipDeviceGetPCIBusId(rocm:{}) failed: {}", i, hip.describe(rc));
                    hip.clearLastError();
                }
                out.add(new DeviceInfo(i, name.getString(0), total.get(JAVA_LONG, 0), busId));
            }
        }
        return out;
    }

    @Override
    public MemorySegment allocate(int device, long size) {
        ensureOpen();
        checkDevice(device);
        PlatformChecks.checkSize(size);
        int previous = switchTo(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = hip.malloc(out, size);
            if (rc != HipRuntime.SUCCESS) {
                throw hip.error(rc, "hipMalloc(" + size + " bytes on rocm:" + device + ")");
            }
            long address = out.get(ADDRESS, 0).address();
            deviceBlocks.put(address, new Block(size, device));
            return MemorySegment.ofAddress(address).reinterpret(size);
        } finally {
            restore(previous, device);
        }
    }

    @Override
    public void free(MemorySegment deviceMemory) {
        ensureOpen();
        long address = deviceMemory.address();
        if (deviceBlocks.remove(address) == null) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "hipFree(0x" + Long.toHexString(address)
                    + ") refused: not allocated by this rocm platform, or freed already");
        }
        int rc = hip.free(MemorySegment.ofAddress(address));
        if (rc != HipRuntime.SUCCESS) {
            throw hip.error(rc, "hipFree(0x" + Long.toHexString(address) + ")");
        }
    }

    @Override
    public MemorySegment allocateHost(long size) {
        ensureOpen();
        PlatformChecks.checkSize(size);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = hip.hostMalloc(out, size, HipRuntime.HOST_MALLOC_DEFAULT);
            if (rc != HipRuntime.SUCCESS) {
                throw hip.error(rc, "hipHostMalloc(" + size + " bytes)");
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
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "hipHostFree(0x" + Long.toHexString(address)
                    + ") refused: not allocated by this rocm platform, or freed already");
        }
        int rc = hip.hostFree(MemorySegment.ofAddress(address));
        if (rc != HipRuntime.SUCCESS) {
            throw hip.error(rc, "hipHostFree(0x" + Long.toHexString(address) + ")");
        }
    }

    @Override
    public PointerInfo classify(long address) {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attributes = arena.allocate(HipRuntime.POINTER_ATTRIBUTES_BYTES, 8);
            int rc = hip.pointerGetAttributes(attributes, MemorySegment.ofAddress(address));
            if (rc == HipRuntime.ERROR_INVALID_VALUE) {
                // ROCm 5 (and some 6.x) report memory HIP never saw (plain malloc) this way, not as "unregistered"
                hip.clearLastError();
                return new PointerInfo(Location.CPU, false);
            }
            if (rc != HipRuntime.SUCCESS) {
                throw hip.error(rc, "hipPointerGetAttributes(0x" + Long.toHexString(address) + ")");
            }
            int type = attributes.get(JAVA_INT, HipRuntime.POINTER_ATTRIBUTES_TYPE);
            int device = attributes.get(JAVA_INT, HipRuntime.POINTER_ATTRIBUTES_DEVICE);
            PointerInfo info = runtimeMajor >= 6 ? classifyV6(type, device) : classifyV5(type, device);
            if (info == null) {
                throw new TransferException(ErrorCode.INTERNAL, "hipPointerGetAttributes(0x" + Long.toHexString(address)
                        + ") returned unknown memory type " + type + " (ROCm " + runtimeMajor + ")");
            }
            return info;
        }
    }

    static PointerInfo classifyV5(int type, int device) {
        return switch (type) {
            case HipRuntime.V5_MEMORY_TYPE_HOST -> new PointerInfo(Location.CPU, true);
            case HipRuntime.V5_MEMORY_TYPE_DEVICE, HipRuntime.V5_MEMORY_TYPE_ARRAY, HipRuntime.V5_MEMORY_TYPE_UNIFIED ->
                    new PointerInfo(Location.device(MemoryKind.ROCM, device), false);
            default -> null;
        };
    }

    static PointerInfo classifyV6(int type, int device) {
        return switch (type) {
            case HipRuntime.V6_MEMORY_TYPE_UNREGISTERED -> new PointerInfo(Location.CPU, false);
            case HipRuntime.V6_MEMORY_TYPE_HOST -> new PointerInfo(Location.CPU, true);
            case HipRuntime.V6_MEMORY_TYPE_DEVICE, HipRuntime.V6_MEMORY_TYPE_MANAGED, HipRuntime.V6_MEMORY_TYPE_ARRAY,
                 HipRuntime.V6_MEMORY_TYPE_UNIFIED -> new PointerInfo(Location.device(MemoryKind.ROCM, device), false);
            default -> null;
        };
    }

    @Override
    public void copy(MemorySegment dst, MemorySegment src, long length) {
        ensureOpen();
        PlatformChecks.checkCopy(dst, src, length);
        if (length == 0) {
            return;
        }
        int rc = hip.memcpy(dst, src, length, HipRuntime.MEMCPY_DEFAULT);
        if (rc != HipRuntime.SUCCESS) {
            throw hip.error(rc, "hipMemcpy(dst=0x" + Long.toHexString(dst.address()) + ", src=0x"
                    + Long.toHexString(src.address()) + ", " + length + " bytes)");
        }
    }

    @Override
    public DeviceStream createStream(int device) {
        ensureOpen();
        checkDevice(device);
        int previous = switchTo(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = hip.streamCreateWithFlags(out, HipRuntime.STREAM_NON_BLOCKING);
            if (rc != HipRuntime.SUCCESS) {
                throw hip.error(rc, "hipStreamCreateWithFlags(rocm:" + device + ", hipStreamNonBlocking)");
            }
            RocmStream stream = new RocmStream(hip, MemorySegment.ofAddress(out.get(ADDRESS, 0).address()), device,
                    streams::remove);
            streams.add(stream);
            return stream;
        } finally {
            restore(previous, device);
        }
    }

    @Override
    public byte[] exportIpcHandle(MemorySegment deviceMemory) {
        ensureOpen();
        long address = deviceMemory.address();
        long length = deviceMemory.byteSize();
        long base;
        int device;
        Map.Entry<Long, Block> own = deviceBlocks.floorEntry(address);
        if (own != null && address - own.getKey() <= own.getValue().size() - length) {
            base = own.getKey();
            device = own.getValue().device();
        } else {
            PointerInfo where = classify(address);
            if (where.location().kind() != MemoryKind.ROCM) {
                throw new TransferException(ErrorCode.INVALID_ARGUMENT, "hipIpcGetMemHandle(0x"
                        + Long.toHexString(address) + ") refused: memory is " + where.location() + ", not ROCm device memory");
            }
            device = where.location().index();
            base = blockBase(address, length);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = arena.allocate(HipRuntime.IPC_MEM_HANDLE);
            int rc = hip.ipcGetMemHandle(handle, MemorySegment.ofAddress(base));
            if (rc != HipRuntime.SUCCESS) {
                throw hip.error(rc, "hipIpcGetMemHandle(0x" + Long.toHexString(base) + " on rocm:" + device + ")");
            }
            return IpcHandleOffset.encode(handle, HipRuntime.IPC_HANDLE_BYTES, address - base);
        }
    }

    /** The hipMalloc block holding memory this platform did not allocate, through {@code hipMemGetAddressRange}. */
    private long blockBase(long address, long length) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment base = arena.allocate(ADDRESS);
            MemorySegment size = arena.allocate(JAVA_LONG);
            int rc = hip.memGetAddressRange(base, size, MemorySegment.ofAddress(address));
            if (rc != HipRuntime.SUCCESS) {
                throw hip.error(rc, "hipMemGetAddressRange(0x" + Long.toHexString(address) + ")");
            }
            long b = base.get(ADDRESS, 0).address();
            if (address - b > size.get(JAVA_LONG, 0) - length) {
                throw new TransferException(ErrorCode.INVALID_ARGUMENT, "hipIpcGetMemHandle(0x" + Long.toHexString(address)
                        + ", " + length + " bytes) refused: range runs past its hipMalloc block [0x" + Long.toHexString(b)
                        + ", +" + size.get(JAVA_LONG, 0) + ")");
            }
            return b;
        }
    }

    @Override
    public MemorySegment openIpcHandle(byte[] handle, long size, int device) {
        ensureOpen();
        checkDevice(device);
        PlatformChecks.checkSize(size);
        if (handle == null || handle.length != IPC_HANDLE_BYTES) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "rocm IPC handle must be " + IPC_HANDLE_BYTES
                    + " bytes (hipIpcMemHandle_t + offset), got " + (handle == null ? "null" : handle.length));
        }
        long offset = IpcHandleOffset.offset(handle, HipRuntime.IPC_HANDLE_BYTES);
        String key = device + ":" + HexFormat.of().formatHex(handle, 0, HipRuntime.IPC_HANDLE_BYTES);
        return ipc.open(key, device, offset, size, () -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment byValue = arena.allocate(HipRuntime.IPC_MEM_HANDLE);
                byValue.copyFrom(MemorySegment.ofArray(handle).asSlice(0, HipRuntime.IPC_HANDLE_BYTES));
                MemorySegment out = arena.allocate(ADDRESS);
                int previous = switchTo(device);
                int rc;
                try {
                    rc = hip.ipcOpenMemHandle(out, byValue, runtimeMajor >= 6
                            ? HipRuntime.IPC_MEM_LAZY_ENABLE_PEER_ACCESS_V6 : HipRuntime.IPC_MEM_LAZY_ENABLE_PEER_ACCESS_V5);
                } finally {
                    restore(previous, device);
                }
                if (rc != HipRuntime.SUCCESS) {
                    throw hip.error(rc, "hipIpcOpenMemHandle(on rocm:" + device + ", " + size + " bytes at offset "
                            + offset + ")");
                }
                return out.get(ADDRESS, 0).address();
            }
        });
    }

    @Override
    public void closeIpcMapping(MemorySegment mapped) {
        ensureOpen();
        long address = mapped.address();
        if (!ipc.close(address)) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "hipIpcCloseMemHandle(0x"
                    + Long.toHexString(address) + ") refused: not an IPC mapping opened by this rocm platform");
        }
    }

    private void closeHandle(String key, long base, int device) {
        int previous = switchTo(device);
        int rc;
        try {
            rc = hip.ipcCloseMemHandle(MemorySegment.ofAddress(base));
        } finally {
            restore(previous, device);
        }
        if (rc != HipRuntime.SUCCESS) {
            throw hip.error(rc, "hipIpcCloseMemHandle(0x" + Long.toHexString(base) + ")");
        }
    }

    /** Live allocations and mappings, for tests and diagnostics. */
    int liveAllocations() {
        return deviceBlocks.size() + hostBlocks.size();
    }

    int liveIpcMappings() {
        return ipc.openHandleCount();
    }

    private int switchTo(int device) {
        return currentDevice.switchTo(device);
    }

    private void restore(int previous, int device) {
        currentDevice.restore(previous, device);
    }

    private void checkDevice(int device) {
        PlatformChecks.checkDevice(device, deviceCount, "rocm", "ROCm device");
    }

    private void ensureOpen() {
        PlatformChecks.ensureOpen(closed, "rocm");
    }

    /** Releases what this platform still holds: streams, IPC mappings, then allocations (with a warning). */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (NativeStream s : List.copyOf(streams)) {
            quietly(s::close, "stream");
        }
        ipc.closeAll((key, base, device) -> quietly(() -> hip.check(hip.ipcCloseMemHandle(MemorySegment.ofAddress(base)),
                "hipIpcCloseMemHandle(0x" + Long.toHexString(base) + ")"), "IPC mapping"));
        if (!deviceBlocks.isEmpty() || !hostBlocks.isEmpty()) {
            LOG.warn("rocm platform closed with {} device and {} host allocations still live; freeing them",
                    deviceBlocks.size(), hostBlocks.size());
        }
        for (Long address : List.copyOf(deviceBlocks.keySet())) {
            deviceBlocks.remove(address);
            quietly(() -> hip.check(hip.free(MemorySegment.ofAddress(address)),
                    "hipFree(0x" + Long.toHexString(address) + ")"), "device allocation");
        }
        for (Long address : List.copyOf(hostBlocks.keySet())) {
            hostBlocks.remove(address);
            quietly(() -> hip.check(hip.hostFree(MemorySegment.ofAddress(address)),
                    "hipHostFree(0x" + Long.toHexString(address) + ")"), "host allocation");
        }
    }

    private static void quietly(Runnable action, String what) {
        PlatformChecks.quietly(LOG, action, what);
    }
}
