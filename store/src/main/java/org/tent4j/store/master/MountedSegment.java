package org.tent4j.store.master;

import org.tent4j.store.SegmentSpec;

/** A segment some client contributed, with the allocator over its bytes. */
final class MountedSegment {
    final int index;
    final SegmentSpec spec;
    final String owner;
    final RangeAllocator allocator;
    /** Guarded by {@code allocator}: once false nothing more is allocated or freed here (the bytes are gone). */
    private boolean mounted = true;

    MountedSegment(int index, SegmentSpec spec, String owner) {
        this.index = index;
        this.spec = spec;
        this.owner = owner;
        this.allocator = new RangeAllocator(spec.size());
    }

    long allocate(long length) {
        synchronized (allocator) {
            return mounted ? allocator.allocate(length) : -1;
        }
    }

    void free(long offset, long length) {
        synchronized (allocator) {
            if (mounted) {
                allocator.free(offset, length);
            }
        }
    }

    void markUnmounted() {
        synchronized (allocator) {
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
