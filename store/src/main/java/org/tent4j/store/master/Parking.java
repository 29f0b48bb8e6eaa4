package org.tent4j.store.master;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;
import java.util.function.LongConsumer;

/**
 * Parked ranges: freed replicas kept from reuse until no reader's lease (or abandoned writer) can still touch them.
 */
final class Parking {
    private final MasterState state;
    private final PriorityQueue<Parked> parked = new PriorityQueue<>(Comparator.comparingLong(Parked::releaseAt));

    Parking(MasterState state) {
        this.state = state;
    }

    /**
     * Keeps {@code replicas}' ranges from reuse until {@code releaseAt}. A range of an unmounted segment is not parked:
     * its bytes went with the segment and nothing is allocated there again (so no parked range names an unmounted
     * segment, and none keeps its index from reuse).
     */
    void park(long[] replicas, long size, long releaseAt) {
        for (long r : replicas) {
            MountedSegment seg = state.segments.at(ObjectRecord.segment(r));
            if (seg.mounted()) {
                restoreParked(r, size, releaseAt);
                // a disk range leaves its object now: the node's index must forget it even if it goes down before release
                seg.forget(ObjectRecord.offset(r), size);
            }
        }
    }

    /** Parks a range as {@link #park} did, without telling its node again (a restore: the snapshot kept that). */
    void restoreParked(long replica, long size, long releaseAt) {
        synchronized (parked) {
            parked.add(new Parked(replica, size, releaseAt));
        }
    }

    /** Hands every parked range to {@code packed} ({@link IndexSweep}: the segment indexes still named). */
    void references(LongConsumer packed) {
        synchronized (parked) {
            for (Parked p : parked) {
                packed.accept(p.replica);
            }
        }
    }

    void releaseParked(long now) {
        List<Parked> due = new ArrayList<>();
        synchronized (parked) {
            while (!parked.isEmpty() && parked.peek().releaseAt() <= now) {
                due.add(parked.poll());
            }
        }
        for (Parked p : due) {
            state.segments.at(ObjectRecord.segment(p.replica)).free(ObjectRecord.offset(p.replica), p.size);
        }
    }

    /** Forgets parked ranges of unmounted segments (their bytes are gone with the segment). */
    void forgetUnmounted() {
        synchronized (parked) {
            parked.removeIf(p -> !state.segments.at(ObjectRecord.segment(p.replica)).mounted());
        }
    }

    /** The parked ranges, in no particular order. */
    List<Parked> parked() {
        synchronized (parked) {
            return new ArrayList<>(parked);
        }
    }

    record Parked(long replica, long size, long releaseAt) {
    }
}
