package org.tent4j.store.master;

import java.util.concurrent.atomic.AtomicLong;

import org.tent4j.store.SegmentSpec;
import org.tent4j.store.Tier;

/** A segment some client contributed, with the allocator over its bytes. */
final class MountedSegment {
    /**
     * Disk ranges start and end on 4 KiB boundaries: the engine moves an aligned range with O_DIRECT (bypassing the
     * page cache) where the file system allows, and a record never shares a block with its neighbour.
     */
    static final long DISK_ALIGNMENT = 4096;

    final int index;
    final SegmentSpec spec;
    final String owner;
    /**
     * The owner's incarnation at mount (new on each start of the client): a mount with another one names memory of a
     * new process, and this segment's bytes are gone.
     */
    final long incarnation;
    final RangeAllocator allocator;
    final boolean disk;
    /** Bytes allocated over every mounted segment of the master's tier: one read tells whether eviction is due. */
    private final AtomicLong allocatedEverywhere;
    /** Guarded by {@code allocator}: once false nothing more is allocated or freed here (the bytes are gone). */
    private boolean mounted = true;

    MountedSegment(int index, SegmentSpec spec, String owner, long incarnation, AtomicLong allocatedEverywhere) {
        this.index = index;
        this.spec = spec;
        this.owner = owner;
        this.incarnation = incarnation;
        this.disk = spec.tier() == Tier.DISK;
        this.allocator = new RangeAllocator(disk ? spec.size() / DISK_ALIGNMENT * DISK_ALIGNMENT : spec.size());
        this.allocatedEverywhere = allocatedEverywhere;
    }

    /** The bytes an object of {@code size} takes here before the allocator's own alignment. */
    long footprint(long size) {
        return disk ? (size + DISK_ALIGNMENT - 1) / DISK_ALIGNMENT * DISK_ALIGNMENT : size;
    }

    long allocate(long size) {
        long length = footprint(size);
        synchronized (allocator) {
            long off = mounted ? allocator.allocate(length) : -1;
            if (off >= 0) {
                allocatedEverywhere.addAndGet(RangeAllocator.aligned(length));
            }
            return off;
        }
    }

    void free(long offset, long size) {
        long length = footprint(size);
        synchronized (allocator) {
            if (mounted) {
                allocator.free(offset, length);
                allocatedEverywhere.addAndGet(-RangeAllocator.aligned(length));
            }
        }
    }

    /** Takes an aligned free range out of use (see {@link RangeAllocator#take}), counted as allocated. */
    void take(long offset, long length) {
        synchronized (allocator) {
            allocator.take(offset, length);
            allocatedEverywhere.addAndGet(length);
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

    /** Whether {@code other} names bytes of this segment: the same engine segment and tier, overlapping ranges. */
    boolean overlaps(SegmentSpec other) {
        return spec.engineSegment().equals(other.engineSegment()) && spec.tier() == other.tier()
                && spec.base() < other.base() + other.size() && other.base() < spec.base() + spec.size();
    }

    double freeRatio() {
        return 1.0 - (double) allocator.used() / allocator.capacity();
    }
}
