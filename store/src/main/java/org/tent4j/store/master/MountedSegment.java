package org.tent4j.store.master;

import java.util.concurrent.atomic.AtomicLong;

import org.tent4j.store.SegmentSpec;

/** A segment some client contributed, with the allocator over its bytes. */
final class MountedSegment {
    final int index;
    final SegmentSpec spec;
    final String owner;
    final RangeAllocator allocator;
    /** Bytes allocated over every mounted segment of the master: one read tells whether eviction is due. */
    private final AtomicLong allocatedEverywhere;
    /** Guarded by {@code allocator}: once false nothing more is allocated or freed here (the bytes are gone). */
    private boolean mounted = true;

    MountedSegment(int index, SegmentSpec spec, String owner, AtomicLong allocatedEverywhere) {
        this.index = index;
        this.spec = spec;
        this.owner = owner;
        this.allocator = new RangeAllocator(spec.size());
        this.allocatedEverywhere = allocatedEverywhere;
    }

    long allocate(long length) {
        synchronized (allocator) {
            long off = mounted ? allocator.allocate(length) : -1;
            if (off >= 0) {
                allocatedEverywhere.addAndGet(RangeAllocator.aligned(length));
            }
            return off;
        }
    }

    void free(long offset, long length) {
        synchronized (allocator) {
            if (mounted) {
                allocator.free(offset, length);
                allocatedEverywhere.addAndGet(-RangeAllocator.aligned(length));
            }
        }
    }

    void markUnmounted() {
        synchronized (allocator) {
            if (mounted) {
                allocatedEverywhere.addAndGet(-allocator.used());
            }
            mounted = false;
        }
    }

    boolean mounted() {
        synchronized (allocator) {
            return mounted;
        }
    }

    double freeRatio() {
        return 1.0 - (double) allocator.used() / allocator.capacity();
    }
}
