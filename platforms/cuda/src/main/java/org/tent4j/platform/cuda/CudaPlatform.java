package org.tent4j.platform.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
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
    private final Set<CudaStream> streams = ConcurrentHashMap.newKeySet();
    /** Guards the two IPC maps; opening and closing mappings is rare and never on a data path. */
    private final Object ipcLock = new Object();
    /** Opened handles by (device, 64 handle bytes): CUDA maps a handle once per context, so repeats share it. */
    private final Map<String, OpenedHandle> openedHandles = new HashMap<>();
    /** Addresses handed out by {@link #openIpcHandle} → the handle they came from and how often handed out. */
    private final Map<Long, Mapping> mappings = new HashMap<>();
    private volatile boolean closed;

    private static final class OpenedHandle {
        final long base;
        final int device;
        int references;

        OpenedHandle(long base, int device) {
            this.base = base;
            this.device = device;
        }
    }

    private static final class Mapping {
        final String handleKey;
        int references;

        Mapping(String handleKey) {
            this.handleKey = handleKey;
        }
    }

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
        checkSize(size);
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
        checkSize(size);
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
        checkCopy(dst, src, length);
        if (length == 0) {
            return;
        }
        int rc = cuda.memcpy(dst, src, length, CudaRuntime.MEMCPY_DEFAULT);
        if (rc != CudaRuntime.SUCCESS) {
            throw cuda.error(rc, "cudaMemcpy(dst=0x" + Long.toHexString(dst.address()) + ", src=0x"
                    + Long.toHexString(src.address()) + ", " + length + " bytes)");
        }
    }

    static void checkCopy(MemorySegment dst, MemorySegment src, long length) {
        if (length < 0 || length > dst.byteSize() || length > src.byteSize()) {
            throw new TransferException(ErrorCode.OUT_OF_BOUNDS, "copy of " + length + " bytes from 0x"
                    + Long.toHexString(src.address()) + " (+" + src.byteSize() + ") to 0x"
                    + Long.toHexString(dst.address()) + " (+" + dst.byteSize() + ") does not fit");
        }
        if (!dst.isNative() || !src.isNative()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT,
                    "device copies need native memory segments, not Java heap arrays");
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
            CudaStream stream = new CudaStream(cuda, this, MemorySegment.ofAddress(out.get(ADDRESS, 0).address()), device);
            streams.add(stream);
            return stream;
        } finally {
            restore(previous, device);
        }
    }

    void forget(CudaStream stream) {
        streams.remove(stream);
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
            byte[] out = new byte[IPC_HANDLE_BYTES];
            MemorySegment o = MemorySegment.ofArray(out);
            o.copyFrom(handle);
            o.set(JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN).withByteAlignment(1), CudaRuntime.IPC_HANDLE_BYTES,
                    address - base);
            return out;
        }
    }

    @Override
    public MemorySegment openIpcHandle(byte[] handle, long size, int device) {
        ensureOpen();
        checkDevice(device);
        checkSize(size);
        if (handle == null || handle.length != IPC_HANDLE_BYTES) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "cuda IPC handle must be " + IPC_HANDLE_BYTES
                    + " bytes (cudaIpcMemHandle_t + offset), got " + (handle == null ? "null" : handle.length));
        }
        MemorySegment h = MemorySegment.ofArray(handle);
        long offset = h.get(JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN).withByteAlignment(1), CudaRuntime.IPC_HANDLE_BYTES);
        String key = device + ":" + HexFormat.of().formatHex(handle, 0, CudaRuntime.IPC_HANDLE_BYTES);
        synchronized (ipcLock) {
            OpenedHandle opened = openedHandles.get(key);
            if (opened == null) {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment byValue = arena.allocate(CudaRuntime.IPC_MEM_HANDLE);
                    byValue.copyFrom(h.asSlice(0, CudaRuntime.IPC_HANDLE_BYTES));
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
                    opened = new OpenedHandle(out.get(ADDRESS, 0).address(), device);
                    openedHandles.put(key, opened);
                }
            }
            opened.references++;
            long address = opened.base + offset;
            mappings.computeIfAbsent(address, a -> new Mapping(key)).references++;
            return MemorySegment.ofAddress(address).reinterpret(size);
        }
    }

    @Override
    public void closeIpcMapping(MemorySegment mapped) {
        ensureOpen();
        long address = mapped.address();
        synchronized (ipcLock) {
            Mapping mapping = mappings.get(address);
            if (mapping == null) {
                throw new TransferException(ErrorCode.INVALID_ARGUMENT, "cudaIpcCloseMemHandle(0x"
                        + Long.toHexString(address) + ") refused: not an IPC mapping opened by this cuda platform");
            }
            if (--mapping.references == 0) {
                mappings.remove(address);
            }
            release(mapping.handleKey);
        }
    }

    private void release(String handleKey) {
        OpenedHandle opened = openedHandles.get(handleKey);
        if (--opened.references == 0) {
            openedHandles.remove(handleKey);
            int previous = switchTo(opened.device);
            int rc;
            try {
                rc = cuda.ipcCloseMemHandle(MemorySegment.ofAddress(opened.base));
            } finally {
                restore(previous, opened.device);
            }
            if (rc != CudaRuntime.SUCCESS) {
                throw cuda.error(rc, "cudaIpcCloseMemHandle(0x" + Long.toHexString(opened.base) + ")");
            }
        }
    }

    /** Live allocations and mappings, for tests and diagnostics. */
    int liveAllocations() {
        return ownedBlocks.size() + hostBlocks.size();
    }

    int liveIpcMappings() {
        synchronized (ipcLock) {
            return openedHandles.size();
        }
    }

    private void useDevice(int device) {
        int rc = cuda.setDevice(device);
        if (rc != CudaRuntime.SUCCESS) {
            throw cuda.error(rc, "cudaSetDevice(" + device + ")");
        }
    }

    /**
     * Makes {@code device} current on this thread and returns the device that was, so the caller can put it back:
     * the current device is per-thread state that other CUDA code on the application's threads relies on.
     */
    private int switchTo(int device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            int previous = cuda.getDevice(out) == CudaRuntime.SUCCESS ? out.get(JAVA_INT, 0) : -1;
            if (previous != device) {
                useDevice(device);
            }
            return previous;
        }
    }

    private void restore(int previous, int device) {
        if (previous >= 0 && previous != device && cuda.setDevice(previous) != CudaRuntime.SUCCESS) {
            cuda.clearLastError();
        }
    }

    private void checkDevice(int device) {
        if (device < 0 || device >= deviceCount) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "device cuda:" + device + " does not exist ("
                    + deviceCount + " CUDA device" + (deviceCount == 1 ? "" : "s") + ")");
        }
    }

    private static void checkSize(long size) {
        if (size <= 0) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "size must be > 0, got " + size);
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new TransferException(ErrorCode.ENGINE_CLOSED, "cuda platform is closed");
        }
    }

    /** Releases what this platform still holds: streams, IPC mappings, then allocations (with a warning). */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (CudaStream s : List.copyOf(streams)) {
            quietly(s::close, "stream");
        }
        synchronized (ipcLock) {
            for (OpenedHandle opened : openedHandles.values()) {
                quietly(() -> cuda.check(cuda.ipcCloseMemHandle(MemorySegment.ofAddress(opened.base)),
                        "cudaIpcCloseMemHandle(0x" + Long.toHexString(opened.base) + ")"), "IPC mapping");
            }
            openedHandles.clear();
            mappings.clear();
        }
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
        try {
            action.run();
        } catch (RuntimeException e) {
            LOG.warn("releasing {} on close failed: {}", what, e.getMessage());
        }
    }
}
