package org.tent4j.spi.platform;

import java.lang.foreign.MemorySegment;
import java.util.List;

import org.tent4j.api.MemoryKind;

/**
 * Device memory for one platform: allocate, classify, copy, and share across processes through IPC handles.
 * All methods throw {@link org.tent4j.api.TransferException} naming the native call and its error code on failure.
 */
public interface DevicePlatform extends AutoCloseable {

    MemoryKind memoryKind();

    List<DeviceInfo> devices();

    /** Allocates {@code size} bytes on {@code device}; the segment's address is a device pointer. */
    MemorySegment allocate(int device, long size);

    void free(MemorySegment deviceMemory);

    /** Page-locked host memory that devices can reach directly. */
    MemorySegment allocateHost(long size);

    void freeHost(MemorySegment hostMemory);

    /** Where an address lives: host memory, or which device of this platform. */
    PointerInfo classify(long address);

    /** Copies synchronously, in any direction the platform supports (host↔device, device↔device). */
    void copy(MemorySegment dst, MemorySegment src, long length);

    /** A stream (queue) on {@code device} for asynchronous copies. */
    DeviceStream createStream(int device);

    /** Exports device memory so another process on this host can map it. */
    byte[] exportIpcHandle(MemorySegment deviceMemory);

    /** Maps memory another process exported; {@link #closeIpcMapping} releases it. */
    MemorySegment openIpcHandle(byte[] handle, long size, int device);

    void closeIpcMapping(MemorySegment mapped);

    @Override
    void close();
}
