package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;

import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.master.RangeAllocator;

/**
 * Registered scratch memory for the copying API (values in heap arrays or unregistered memory): slices are lent out
 * and given back; a value larger than what is free gets memory of its own, registered for the call.
 */
final class StagingBuffer implements AutoCloseable {
    private final TransferEngine engine;
    private final RegisteredMemory memory;
    private final RangeAllocator allocator;

    StagingBuffer(TransferEngine engine, long bytes) {
        this.engine = engine;
        this.memory = engine.allocate(bytes, Location.CPU, Permission.LOCAL_ONLY);
        this.allocator = new RangeAllocator(bytes);
    }

    /** A registered slice of {@code size} bytes; give it back with {@link #release}. */
    Lease borrow(long size) {
        long off = allocator.allocate(size);
        if (off >= 0) {
            return new Lease(memory.segment().asSlice(off, size), off, null);
        }
        RegisteredMemory own = engine.allocate(size, Location.CPU, Permission.LOCAL_ONLY);
        return new Lease(own.segment().asSlice(0, size), -1, own);
    }

    void release(Lease lease) {
        if (lease.own != null) {
            engine.unregister(lease.own);
        } else {
            allocator.free(lease.offset, lease.segment.byteSize());
        }
    }

    @Override
    public void close() {
        engine.unregister(memory);
    }

    record Lease(MemorySegment segment, long offset, RegisteredMemory own) {
    }
}
