package org.tent4j.store.master;

import java.util.ArrayDeque;
import java.util.List;
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
    /**
     * DISK, guarded by {@code allocator}: ranges whose object let go of them (seq, offset, length), not yet confirmed by
     * the node, which records each as a tombstone in its disk index so a restart does not offer the old object again.
     */
    private final ArrayDeque<long[]> freed = new ArrayDeque<>();
    private long freedSeq;

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

    /** Takes {@code [offset, offset + footprint(size))} if all of it is free: false if not (or not on this segment). */
    boolean allocateAt(long offset, long size) {
        long length = footprint(size);
        synchronized (allocator) {
            boolean taken = mounted && allocator.allocateAt(offset, length);
            if (taken) {
                allocatedEverywhere.addAndGet(RangeAllocator.aligned(length));
            }
            return taken;
        }
    }

    void free(long offset, long size) {
        long length = footprint(size);
        synchronized (allocator) {
            if (mounted) {
                forgetLocked(offset, length);
                allocator.free(offset, length);
                allocatedEverywhere.addAndGet(-RangeAllocator.aligned(length));
            }
        }
    }

    /** A disk range no object holds any more (parked or freed): its node is told to forget what it recorded there. */
    void forget(long offset, long size) {
        synchronized (allocator) {
            if (mounted) {
                forgetLocked(offset, footprint(size));
            }
        }
    }

    private void forgetLocked(long offset, long length) {
        if (disk) {
            freed.add(new long[]{++freedSeq, offset, length});
        }
    }

    /**
     * Drops the freed ranges the node confirmed (seq at most {@code ack}) and answers the rest, oldest first: the node
     * makes them durable before it runs the tasks handed out with them, so a tombstone never lands after a record of
     * the range's next object.
     */
    List<long[]> freedAfter(long ack) {
        synchronized (allocator) {
            while (!freed.isEmpty() && freed.peek()[0] <= ack) {
                freed.poll();
            }
            return List.copyOf(freed);
        }
    }

    /** Whether the node has ranges to learn past {@code ack}, or ones it confirmed that are still kept. */
    boolean hasFreedSince(long ack) {
        synchronized (allocator) {
            return !freed.isEmpty() && (freed.peekLast()[0] > ack || freed.peek()[0] <= ack);
        }
    }

    /** For a snapshot: the last seq and the ranges not yet confirmed. */
    long freedSeq() {
        synchronized (allocator) {
            return freedSeq;
        }
    }

    List<long[]> freedRanges() {
        return freedAfter(Long.MIN_VALUE);
    }

    void restoreFreed(long seq, List<long[]> ranges) {
        synchronized (allocator) {
            freedSeq = seq;
            freed.clear();
            freed.addAll(ranges);
        }
    }

    /**
     * Takes {@code [offset, offset + length)}, aligned and free, out of use, counted as allocated: a range nothing may be
     * placed in for a while (its owner parks it).
     */
    void take(long offset, long length) {
        if (!allocateAt(offset, length)) {
            throw new IllegalStateException("range [" + offset + ", " + (offset + length) + ") of segment " + spec.id()
                    + " is not an aligned free range");
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
