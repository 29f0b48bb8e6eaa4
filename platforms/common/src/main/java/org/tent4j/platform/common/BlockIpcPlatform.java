package org.tent4j.platform.common;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferException;
import org.tent4j.spi.platform.DeviceInfo;
import org.tent4j.spi.platform.DevicePlatform;
import org.tent4j.spi.platform.DeviceStream;
import org.tent4j.spi.platform.PointerInfo;

/**
 * What the CUDA and ROCm platforms share: both runtimes allocate device memory in blocks ({@code cudaMalloc},
 * {@code hipMalloc}), export a whole block as a 64-byte IPC handle, keep a current device per thread and copy with one
 * call. This class owns the bookkeeping and every check (allocations, the block registry, IPC handles with their
 * offset, streams, the current-device guard, close); a subclass supplies the runtime calls, each of which throws a
 * {@link TransferException} naming the call and the runtime's error.
 *
 * <p>IPC handles are the runtime's handle followed by the little-endian offset of the exported range inside its block
 * (8 bytes): a runtime handle always names the whole block and opening it returns the block's base, so without the
 * offset an importer of a sub-range would land on the wrong bytes.
 */
public abstract class BlockIpcPlatform implements DevicePlatform {
    private static final Logger LOG = LoggerFactory.getLogger(BlockIpcPlatform.class);

    /** A device block allocated through tent4j. */
    public record Block(long size, int device) {
    }

    /**
     * The runtime's names, for messages.
     *
     * @param prefix      location prefix and platform name ({@code cuda})
     * @param unit        what one device is called ({@code CUDA device})
     * @param malloc      device allocation call ({@code cudaMalloc})
     * @param free        device free call
     * @param freeHost    pinned host free call
     * @param ipcGet      IPC export call
     * @param ipcClose    IPC close call
     * @param handleType  the runtime's handle type ({@code cudaIpcMemHandle_t})
     */
    public record Names(String prefix, String unit, String malloc, String free, String freeHost, String ipcGet,
                        String ipcClose, String handleType) {
    }

    private final Names names;
    private final MemoryKind kind;
    private final int deviceCount;
    private final int handleBytes;
    private volatile List<DeviceInfo> devices;
    private final ConcurrentSkipListMap<Long, Block> deviceBlocks;
    /** Device blocks this instance allocated, freed by {@link #close} if still live. */
    private final Set<Long> ownedBlocks = ConcurrentHashMap.newKeySet();
    private final Map<Long, Long> hostBlocks = new ConcurrentHashMap<>();
    private final Set<NativeStream> streams = ConcurrentHashMap.newKeySet();
    /** Opened IPC handles by (device, handle bytes): a handle is mapped once per process and device, repeats share it. */
    private final IpcMappings ipc = new IpcMappings(this::closeHandle);
    private final CurrentDevice currentDevice = new CurrentDevice() {
        @Override
        protected int current() {
            return currentDeviceOrUnknown();
        }

        @Override
        protected void select(int device) {
            selectDevice(device);
        }

        @Override
        protected void selectQuietly(int device) {
            selectDeviceQuietly(device);
        }
    };
    private volatile boolean closed;

    /**
     * @param deviceBlocks the registry of blocks made through tent4j: shared by every platform on one runtime where
     *                     a platform must export what another allocated (CUDA), or this platform's own
     * @param handleBytes  the runtime's IPC handle size (64 for both)
     */
    protected BlockIpcPlatform(Names names, MemoryKind kind, int deviceCount, int handleBytes,
                               ConcurrentSkipListMap<Long, Block> deviceBlocks) {
        this.names = names;
        this.kind = kind;
        this.deviceCount = deviceCount;
        this.handleBytes = handleBytes;
        this.deviceBlocks = deviceBlocks;
    }

    // ---- the runtime calls a subclass supplies; each throws naming the call ----

    /** Name, memory and PCI bus id of one device. */
    protected abstract DeviceInfo probeDevice(int device);

    /** Allocates {@code size} bytes on the current device (already {@code device}); returns the address. */
    protected abstract long deviceMalloc(int device, long size);

    protected abstract void deviceFree(long address);

    /** Allocates {@code size} bytes of pinned host memory; returns the address. */
    protected abstract long hostMalloc(long size);

    protected abstract void hostFree(long address);

    /** What the runtime says of an address. */
    protected abstract PointerInfo pointerInfo(long address);

    /** One synchronous copy of {@code length > 0} checked bytes. */
    protected abstract void memcpy(MemorySegment dst, MemorySegment src, long length);

    /** A non-blocking stream on the current device (already {@code device}). */
    protected abstract NativeStream newStream(int device, Consumer<NativeStream> forget);

    /**
     * The base of the block holding {@code [address, address + length)} on {@code device}, for memory this platform
     * did not allocate; throws INVALID_ARGUMENT when the block cannot be found or is smaller.
     */
    protected abstract long foreignBlockBase(long address, long length, int device);

    /** Writes the IPC handle of the block at {@code base} into {@code handle} ({@code handleBytes} long). */
    protected abstract void ipcGetMemHandle(long base, int device, MemorySegment handle);

    /**
     * Opens a handle on the current device (already {@code device}) for a range of {@code size} bytes at {@code offset}
     * in its block (for messages); returns the mapped block's base.
     */
    protected abstract long ipcOpenMemHandle(MemorySegment handle, int device, long size, long offset);

    protected abstract void ipcCloseMemHandle(long base);

    /** The calling thread's current device, or -1 when the runtime cannot say. */
    protected abstract int currentDeviceOrUnknown();

    protected abstract void selectDevice(int device);

    /** Makes {@code device} current, ignoring failure (and clearing the runtime's sticky error). */
    protected abstract void selectDeviceQuietly(int device);

    // ---- DevicePlatform ----

    @Override
    public final MemoryKind memoryKind() {
        return kind;
    }

    @Override
    public final List<DeviceInfo> devices() {
        ensureOpen();
        List<DeviceInfo> d = devices;
        if (d == null) {
            synchronized (this) {
                if (devices == null) {
                    List<DeviceInfo> probed = new ArrayList<>(deviceCount);
                    for (int i = 0; i < deviceCount; i++) {
                        probed.add(probeDevice(i));
                    }
                    devices = List.copyOf(probed);
                }
                d = devices;
            }
        }
        return d;
    }

    @Override
    public final MemorySegment allocate(int device, long size) {
        ensureOpen();
        checkDevice(device);
        PlatformChecks.checkSize(size);
        int previous = switchTo(device);
        try {
            long address = deviceMalloc(device, size);
            deviceBlocks.put(address, new Block(size, device));
            ownedBlocks.add(address);
            return MemorySegment.ofAddress(address).reinterpret(size);
        } finally {
            restore(previous, device);
        }
    }

    @Override
    public final void free(MemorySegment deviceMemory) {
        ensureOpen();
        long address = deviceMemory.address();
        if (deviceBlocks.remove(address) == null) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, names.free() + "(0x" + Long.toHexString(address)
                    + ") refused: not allocated by this " + names.prefix() + " platform, or freed already");
        }
        ownedBlocks.remove(address);
        deviceFree(address);
    }

    @Override
    public final MemorySegment allocateHost(long size) {
        ensureOpen();
        PlatformChecks.checkSize(size);
        long address = hostMalloc(size);
        hostBlocks.put(address, size);
        return MemorySegment.ofAddress(address).reinterpret(size);
    }

    @Override
    public final void freeHost(MemorySegment hostMemory) {
        ensureOpen();
        long address = hostMemory.address();
        if (hostBlocks.remove(address) == null) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, names.freeHost() + "(0x" + Long.toHexString(address)
                    + ") refused: not allocated by this " + names.prefix() + " platform, or freed already");
        }
        hostFree(address);
    }

    @Override
    public final PointerInfo classify(long address) {
        ensureOpen();
        return pointerInfo(address);
    }

    @Override
    public final void copy(MemorySegment dst, MemorySegment src, long length) {
        ensureOpen();
        PlatformChecks.checkCopy(dst, src, length);
        if (length != 0) {
            memcpy(dst, src, length);
        }
    }

    @Override
    public final DeviceStream createStream(int device) {
        ensureOpen();
        checkDevice(device);
        int previous = switchTo(device);
        try {
            NativeStream stream = newStream(device, streams::remove);
            streams.add(stream);
            return stream;
        } finally {
            restore(previous, device);
        }
    }

    @Override
    public final byte[] exportIpcHandle(MemorySegment deviceMemory) {
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
            PointerInfo where = pointerInfo(address);
            if (where.location().kind() != kind) {
                throw new TransferException(ErrorCode.INVALID_ARGUMENT, names.ipcGet() + "(0x"
                        + Long.toHexString(address) + ") refused: memory is " + where.location() + ", not "
                        + names.unit() + " memory");
            }
            device = where.location().index();
            base = foreignBlockBase(address, length, device);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = arena.allocate(handleBytes, 8);
            ipcGetMemHandle(base, device, handle);
            return IpcHandleOffset.encode(handle, handleBytes, address - base);
        }
    }

    @Override
    public final MemorySegment openIpcHandle(byte[] handle, long size, int device) {
        ensureOpen();
        checkDevice(device);
        PlatformChecks.checkSize(size);
        int expected = handleBytes + Long.BYTES;
        if (handle == null || handle.length != expected) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, names.prefix() + " IPC handle must be " + expected
                    + " bytes (" + names.handleType() + " + offset), got " + (handle == null ? "null" : handle.length));
        }
        long offset = IpcHandleOffset.offset(handle, handleBytes);
        String key = device + ":" + HexFormat.of().formatHex(handle, 0, handleBytes);
        return ipc.open(key, device, offset, size, () -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment byValue = arena.allocate(handleBytes, 8);
                byValue.copyFrom(MemorySegment.ofArray(handle).asSlice(0, handleBytes));
                int previous = switchTo(device);
                try {
                    return ipcOpenMemHandle(byValue, device, size, offset);
                } finally {
                    restore(previous, device);
                }
            }
        });
    }

    @Override
    public final void closeIpcMapping(MemorySegment mapped) {
        ensureOpen();
        long address = mapped.address();
        if (!ipc.close(address)) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, names.ipcClose() + "(0x"
                    + Long.toHexString(address) + ") refused: not an IPC mapping opened by this " + names.prefix()
                    + " platform");
        }
    }

    private void closeHandle(String key, long base, int device) {
        int previous = switchTo(device);
        try {
            ipcCloseMemHandle(base);
        } finally {
            restore(previous, device);
        }
    }

    /** Live allocations and mappings, for tests and diagnostics. */
    public final int liveAllocations() {
        return ownedBlocks.size() + hostBlocks.size();
    }

    public final int liveIpcMappings() {
        return ipc.openHandleCount();
    }

    /** Makes {@code device} current for one native call; see {@link CurrentDevice}. */
    protected final int switchTo(int device) {
        return currentDevice.switchTo(device);
    }

    protected final void restore(int previous, int device) {
        currentDevice.restore(previous, device);
    }

    protected final void checkDevice(int device) {
        PlatformChecks.checkDevice(device, deviceCount, names.prefix(), names.unit());
    }

    protected final void ensureOpen() {
        PlatformChecks.ensureOpen(closed, names.prefix());
    }

    /** Releases what this platform still holds: streams, IPC mappings, then allocations (with a warning). */
    @Override
    public final void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (NativeStream s : List.copyOf(streams)) {
            quietly(s::close, "stream");
        }
        ipc.closeAll((key, base, device) -> quietly(() -> ipcCloseMemHandle(base), "IPC mapping"));
        if (!ownedBlocks.isEmpty() || !hostBlocks.isEmpty()) {
            LOG.warn("{} platform closed with {} device and {} host allocations still live; freeing them",
                    names.prefix(), ownedBlocks.size(), hostBlocks.size());
        }
        for (Long address : List.copyOf(ownedBlocks)) {
            ownedBlocks.remove(address);
            if (deviceBlocks.remove(address) != null) {
                quietly(() -> deviceFree(address), "device allocation");
            }
        }
        for (Long address : List.copyOf(hostBlocks.keySet())) {
            hostBlocks.remove(address);
            quietly(() -> hostFree(address), "host allocation");
        }
    }

    private static void quietly(Runnable action, String what) {
        PlatformChecks.quietly(LOG, action, what);
    }
}
