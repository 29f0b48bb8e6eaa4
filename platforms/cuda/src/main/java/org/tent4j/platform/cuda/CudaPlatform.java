package org.tent4j.platform.cuda;

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
 * CUDA device memory through libcudart.
 *
 * <p>IPC handles this platform exports are {@code cudaIpcMemHandle_t} (64 bytes) followed by the little-endian
 * offset of the exported range inside its cudaMalloc block (8 bytes): a CUDA handle always names the whole block and
 * {@code cudaIpcOpenMemHandle} returns the block's base, so without the offset an importer of a sub-range would land
 * on the wrong bytes.
 */
final class CudaPlatform implements DevicePlatform {
    private static final Logger LOG = LoggerFactory.getLogger(CudaPlatform.class);

    static final int IPC_HANDLE_BYTES = CudaRuntime.IPC_HANDLE_BYTES + Long.BYTES;

    private final CudaRuntime cuda;
    private final int deviceCount;
    private volatile List<DeviceInfo> devices;
    /** The runtime's registry of blocks made through tent4j; ordered so an interior address finds its block. */
    private final ConcurrentSkipListMap<Long, CudaRuntime.Block> deviceBlocks;
    /** Device blocks this instance allocated, freed by {@link #close} if still live. */
    private final Set<Long> ownedBlocks = ConcurrentHashMap.newKeySet();
    private final Map<Long, Long> hostBlocks = new ConcurrentHashMap<>();
    private final Set<NativeStream> streams = ConcurrentHashMap.newKeySet();
    /** Opened IPC handles by (device, 64 handle bytes): a handle is mapped once per process and device, repeats share it. */
    private final IpcMappings ipc = new IpcMappings(this::closeHandle);
    private final CurrentDevice currentDevice = new CurrentDevice() {
        @Override
        protected int current() {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(JAVA_INT);
                return cuda.getDevice(out) == CudaRuntime.SUCCESS ? out.get(JAVA_INT, 0) : -1;
            }
        }

        @Override
        protected void select(int device) {
            int rc = cuda.setDevice(device);
            if (rc != CudaRuntime.SUCCESS) {
                throw cuda.error(rc, "cudaSetDevice(" + device + ")");
            }
        }

        @Override
        protected void selectQuietly(int device) {
            if (cuda.setDevice(device) != CudaRuntime.SUCCESS) {
                cuda.clearLastError();
            }
        }
    };
    private volatile boolean closed;

    CudaPlatform(CudaRuntime cuda, int deviceCount) {
        this.cuda = cuda;
        this.deviceCount = deviceCount;
        this.deviceBlocks = cuda.deviceBlocks;
    }

    @Override
    public MemoryKind memoryKind() {
        return MemoryKind.CUDA;
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
            MemorySegment props = arena.allocate(CudaRuntime.DEVICE_PROP_BYTES, 8);
            MemorySegment pci = arena.allocate(64);
            for (int i = 0; i < deviceCount; i++) {
                props.fill((byte) 0);
                cuda.check(cuda.getDeviceProperties(props, i), "cudaGetDeviceProperties(cuda:" + i + ")");
                String name = props.asSlice(CudaRuntime.DEVICE_PROP_NAME, CudaRuntime.DEVICE_PROP_NAME_BYTES).getString(0);
                long total = props.get(JAVA_LONG, CudaRuntime.DEVICE_PROP_TOTAL_GLOBAL_MEM);
                pci.fill((byte) 0);
                int rc = cuda.deviceGetPciBusId(pci, (int) pci.byteSize(), i);
                String busId = "";
                if (rc == CudaRuntime.SUCCESS) {
                    busId = pci.getString(0);
                } else {
                    LOG.debug("cudaDeviceGetPCIBusId(cuda:{}) failed: {}", i, cuda.describe(rc));
                    cuda.clearLastError();
                }
                out.add(new DeviceInfo(i, name, total, busId));
            }
        }
        return out;
    }

    /** A device attribute ({@code cudaDeviceAttr}), e.g. compute capability. */
    int attribute(int attribute, int device) {
        checkDevice(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = arena.allocate(JAVA_INT);
            cuda.check(cuda.deviceGetAttribute(value, attribute, device),
                    "cudaDeviceGetAttribute(attribute " + attribute + ", cuda:" + device + ")");
            return value.get(JAVA_INT, 0);
        }
    }

    @Override
    public MemorySegment allocate(int device, long size) {
        ensureOpen();
        checkDevice(device);
        PlatformChecks.checkSize(size);
        int previous = switchTo(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = cuda.malloc(out, size);
            if (rc != CudaRuntime.SUCCESS) {
                throw cuda.error(rc, "cudaMalloc(" + size + " bytes on cuda:" + device + ")");
            }
            long address = out.get(ADDRESS, 0).address();
            deviceBlocks.put(address, new CudaRuntime.Block(size, device));
            ownedBlocks.add(address);
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
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "cudaFree(0x" + Long.toHexString(address)
                    + ") refused: not allocated by this cuda platform, or freed already");
        }
        ownedBlocks.remove(address);
        int rc = cuda.free(MemorySegment.ofAddress(address));
        if (rc != CudaRuntime.SUCCESS) {
            throw cuda.error(rc, "cudaFree(0x" + Long.toHexString(address) + ")");
        }
    }

    @Override
    public MemorySegment allocateHost(long size) {
        ensureOpen();
        PlatformChecks.checkSize(size);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = cuda.mallocHost(out, size);
            if (rc != CudaRuntime.SUCCESS) {
                throw cuda.error(rc, "cudaMallocHost(" + size + " bytes)");
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
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "cudaFreeHost(0x" + Long.toHexString(address)
                    + ") refused: not allocated by this cuda platform, or freed already");
        }
        int rc = cuda.freeHost(MemorySegment.ofAddress(address));
        if (rc != CudaRuntime.SUCCESS) {
            throw cuda.error(rc, "cudaFreeHost(0x" + Long.toHexString(address) + ")");
        }
    }

    @Override
    public PointerInfo classify(long address) {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attributes = arena.allocate(CudaRuntime.POINTER_ATTRIBUTES_BYTES, 8);
            int rc = cuda.pointerGetAttributes(attributes, MemorySegment.ofAddress(address));
            if (rc == CudaRuntime.ERROR_INVALID_VALUE) {
                // CUDA before 11.0 reports memory it never saw (plain malloc) this way instead of "unregistered"
                cuda.clearLastError();
                return new PointerInfo(Location.CPU, false);
            }
            if (rc != CudaRuntime.SUCCESS) {
                throw cuda.error(rc, "cudaPointerGetAttributes(0x" + Long.toHexString(address) + ")");
            }
            int type = attributes.get(JAVA_INT, CudaRuntime.POINTER_ATTRIBUTES_TYPE);
            int device = attributes.get(JAVA_INT, CudaRuntime.POINTER_ATTRIBUTES_DEVICE);
            return switch (type) {
                case CudaRuntime.MEMORY_TYPE_UNREGISTERED -> new PointerInfo(Location.CPU, false);
                case CudaRuntime.MEMORY_TYPE_HOST -> new PointerInfo(Location.CPU, true);
                case CudaRuntime.MEMORY_TYPE_DEVICE, CudaRuntime.MEMORY_TYPE_MANAGED ->
                        new PointerInfo(Location.device(MemoryKind.CUDA, device), false);
                default -> throw new TransferException(ErrorCode.INTERNAL, "cudaPointerGetAttributes(0x"
                        + Long.toHexString(address) + ") returned unknown memory type " + type);
            };
        }
    }

    @Override
    public void copy(MemorySegment dst, MemorySegment src, long length) {
        ensureOpen();
        PlatformChecks.checkCopy(dst, src, length);
        if (length == 0) {
            return;
        }
        int rc = cuda.memcpy(dst, src, length, CudaRuntime.MEMCPY_DEFAULT);
        if (rc != CudaRuntime.SUCCESS) {
            throw cuda.error(rc, "cudaMemcpy(dst=0x" + Long.toHexString(dst.address()) + ", src=0x"
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
            int rc = cuda.streamCreateWithFlags(out, CudaRuntime.STREAM_NON_BLOCKING);
            if (rc != CudaRuntime.SUCCESS) {
                throw cuda.error(rc, "cudaStreamCreateWithFlags(cuda:" + device + ", cudaStreamNonBlocking)");
            }
            CudaStream stream = new CudaStream(cuda, MemorySegment.ofAddress(out.get(ADDRESS, 0).address()), device,
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
        Map.Entry<Long, CudaRuntime.Block> own = deviceBlocks.floorEntry(address);
        if (own != null && address - own.getKey() <= own.getValue().size() - length) {
            base = own.getKey();
            device = own.getValue().device();
        } else {
            PointerInfo where = classify(address);
            if (where.location().kind() != MemoryKind.CUDA) {
                throw new TransferException(ErrorCode.INVALID_ARGUMENT, "cudaIpcGetMemHandle(0x"
                        + Long.toHexString(address) + ") refused: memory is " + where.location() + ", not CUDA device memory");
            }
            device = where.location().index();
            int previous = switchTo(device);
            long[] range;
            try {
                range = cuda.driverAddressRange(address);
            } finally {
                restore(previous, device);
            }
            if (range == null || address - range[0] > range[1] - length) {
                throw new TransferException(ErrorCode.INVALID_ARGUMENT, "cudaIpcGetMemHandle(0x"
                        + Long.toHexString(address) + ", " + length + " bytes) refused: the memory was not allocated by"
                        + " this platform and its cudaMalloc block cannot be found (" + CudaRuntime.DRIVER_ADDRESS_RANGE
                        + " from libcuda.so.1 " + (range == null ? "unavailable or failed" : "reports a smaller block") + ")");
            }
            base = range[0];
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = arena.allocate(CudaRuntime.IPC_MEM_HANDLE);
            int rc = cuda.ipcGetMemHandle(handle, MemorySegment.ofAddress(base));
            if (rc != CudaRuntime.SUCCESS) {
                throw cuda.error(rc, "cudaIpcGetMemHandle(0x" + Long.toHexString(base) + " on cuda:" + device + ")");
            }
            return IpcHandleOffset.encode(handle, CudaRuntime.IPC_HANDLE_BYTES, address - base);
        }
    }

    @Override
    public MemorySegment openIpcHandle(byte[] handle, long size, int device) {
        ensureOpen();
        checkDevice(device);
        PlatformChecks.checkSize(size);
        if (handle == null || handle.length != IPC_HANDLE_BYTES) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "cuda IPC handle must be " + IPC_HANDLE_BYTES
                    + " bytes (cudaIpcMemHandle_t + offset), got " + (handle == null ? "null" : handle.length));
        }
        long offset = IpcHandleOffset.offset(handle, CudaRuntime.IPC_HANDLE_BYTES);
        String key = device + ":" + HexFormat.of().formatHex(handle, 0, CudaRuntime.IPC_HANDLE_BYTES);
        return ipc.open(key, device, offset, size, () -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment byValue = arena.allocate(CudaRuntime.IPC_MEM_HANDLE);
                byValue.copyFrom(MemorySegment.ofArray(handle).asSlice(0, CudaRuntime.IPC_HANDLE_BYTES));
                MemorySegment out = arena.allocate(ADDRESS);
                int previous = switchTo(device);
                int rc;
                try {
                    rc = cuda.ipcOpenMemHandle(out, byValue, CudaRuntime.IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
                } finally {
                    restore(previous, device);
                }
                if (rc != CudaRuntime.SUCCESS) {
                    throw cuda.error(rc, "cudaIpcOpenMemHandle(on cuda:" + device + ", " + size + " bytes at offset "
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
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "cudaIpcCloseMemHandle(0x"
                    + Long.toHexString(address) + ") refused: not an IPC mapping opened by this cuda platform");
        }
    }

    private void closeHandle(String key, long base, int device) {
        int previous = switchTo(device);
        int rc;
        try {
            rc = cuda.ipcCloseMemHandle(MemorySegment.ofAddress(base));
        } finally {
            restore(previous, device);
        }
        if (rc != CudaRuntime.SUCCESS) {
            throw cuda.error(rc, "cudaIpcCloseMemHandle(0x" + Long.toHexString(base) + ")");
        }
    }

    /** Live allocations and mappings, for tests and diagnostics. */
    int liveAllocations() {
        return ownedBlocks.size() + hostBlocks.size();
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
        PlatformChecks.checkDevice(device, deviceCount, "cuda", "CUDA device");
    }

    private void ensureOpen() {
        PlatformChecks.ensureOpen(closed, "cuda");
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
        ipc.closeAll((key, base, device) -> quietly(() -> cuda.check(cuda.ipcCloseMemHandle(MemorySegment.ofAddress(base)),
                "cudaIpcCloseMemHandle(0x" + Long.toHexString(base) + ")"), "IPC mapping"));
        if (!ownedBlocks.isEmpty() || !hostBlocks.isEmpty()) {
            LOG.warn("cuda platform closed with {} device and {} host allocations still live; freeing them",
                    ownedBlocks.size(), hostBlocks.size());
        }
        for (Long address : List.copyOf(ownedBlocks)) {
            ownedBlocks.remove(address);
            if (deviceBlocks.remove(address) == null) {
                continue;
            }
            quietly(() -> cuda.check(cuda.free(MemorySegment.ofAddress(address)),
                    "cudaFree(0x" + Long.toHexString(address) + ")"), "device allocation");
        }
        for (Long address : List.copyOf(hostBlocks.keySet())) {
            hostBlocks.remove(address);
            quietly(() -> cuda.check(cuda.freeHost(MemorySegment.ofAddress(address)),
                    "cudaFreeHost(0x" + Long.toHexString(address) + ")"), "host allocation");
        }
    }

    private static void quietly(Runnable action, String what) {
        PlatformChecks.quietly(LOG, action, what);
    }
}
