package org.tent4j.spi.platform;

import java.lang.foreign.MemorySegment;
import java.util.List;

import org.tent4j.api.MemoryKind;

/**
 * Device memory for one platform: allocate, classify, copy, and share across processes through IPC handles.
 * All methods throw {@link org.tent4j.api.TransferException} naming the native call and its error code on failure.
 *
 * <p>Opened once per engine and shared by the runtime and every transport through
 * {@link org.tent4j.spi.TransportContext#devicePlatforms()}, so every method is thread-safe. The engine closes it after
 * its transports; a transport never closes it. Memory a caller allocates here is the caller's to free.
 */
public interface DevicePlatform extends AutoCloseable {

    /**
     * The memory kind of this platform's devices.
     *
     * @return e.g. CUDA
     */
    MemoryKind memoryKind();

    /**
     * The devices this process can see.
     *
     * @return the devices, by ordinal
     */
    List<DeviceInfo> devices();

    /**
     * Allocates {@code size} bytes on {@code device}; the segment's address is a device pointer.
     *
     * @param device the device's ordinal
     * @param size   bytes, &gt; 0
     * @return the memory; never dereference it from Java, only copy to and from it; free it with {@link #free}
     */
    MemorySegment allocate(int device, long size);

    /**
     * Frees what {@link #allocate} returned; the caller makes sure no copy or transport still uses it.
     *
     * @param deviceMemory memory from {@link #allocate}
     */
    void free(MemorySegment deviceMemory);

    /**
     * Page-locked host memory that devices can reach directly.
     *
     * @param size bytes, &gt; 0
     * @return host memory Java may read and write; free it with {@link #freeHost}
     */
    MemorySegment allocateHost(long size);

    /**
     * Frees what {@link #allocateHost} returned.
     *
     * @param hostMemory memory from {@link #allocateHost}
     */
    void freeHost(MemorySegment hostMemory);

    /**
     * Where an address lives: host memory, or which device of this platform.
     *
     * @param address any address of this process
     * @return its location, and whether host memory is pinned
     */
    PointerInfo classify(long address);

    /**
     * Copies synchronously, in any direction the platform supports (host↔device, device↔device). Blocks until the
     * bytes are in {@code dst}: call it on a worker thread.
     *
     * @param dst    where the bytes go
     * @param src    where they come from
     * @param length bytes, within both segments
     */
    void copy(MemorySegment dst, MemorySegment src, long length);

    /**
     * A stream (queue) on {@code device} for asynchronous copies.
     *
     * @param device the device's ordinal
     * @return a stream the caller owns and closes
     */
    DeviceStream createStream(int device);

    /**
     * Exports device memory so another process on this host can map it.
     *
     * @param deviceMemory memory from {@link #allocate}
     * @return an opaque handle to publish to the peer
     */
    byte[] exportIpcHandle(MemorySegment deviceMemory);

    /**
     * Maps memory another process exported; {@link #closeIpcMapping} releases it.
     *
     * @param handle a peer's {@link #exportIpcHandle} result, hostile until the platform accepts it
     * @param size   bytes to map
     * @param device the local device to map it on
     * @return the mapping, a device pointer
     */
    MemorySegment openIpcHandle(byte[] handle, long size, int device);

    /**
     * Releases a mapping {@link #openIpcHandle} made; no copy may still use it.
     *
     * @param mapped the mapping
     */
    void closeIpcMapping(MemorySegment mapped);

    /** Releases the platform's contexts; called once by the engine, after its transports closed. */
    @Override
    void close();

}
