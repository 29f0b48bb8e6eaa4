package org.tent4j.store.master;

import java.util.concurrent.atomic.LongAdder;

/** Counters since start, for metrics and the status page; every part counts here. A replay recounts them; a snapshot carries them. */
final class MasterCounters {
    final LongAdder objects = new LongAdder();
    final LongAdder objectBytes = new LongAdder();
    final LongAdder evictedObjects = new LongAdder();
    final LongAdder evictedBytes = new LongAdder();
    final LongAdder evictionRounds = new LongAdder();
    final LongAdder leasesGranted = new LongAdder();
    final LongAdder removalsBlockedByLease = new LongAdder();
    final LongAdder putsTakenOver = new LongAdder();
    final LongAdder putsReclaimed = new LongAdder();
    final LongAdder partialAllocations = new LongAdder();
    final LongAdder allocationFailures = new LongAdder();
    final LongAdder clientsExpired = new LongAdder();
    final LongAdder reservationsGranted = new LongAdder();
    final LongAdder reservationsReleased = new LongAdder();
    final LongAdder objectsCommitted = new LongAdder();

    private LongAdder[] all() {
        return new LongAdder[] {objects, objectBytes, evictedObjects, evictedBytes, evictionRounds, leasesGranted,
                removalsBlockedByLease, putsTakenOver, putsReclaimed, partialAllocations, allocationFailures,
                clientsExpired, reservationsGranted, reservationsReleased, objectsCommitted};
    }

    /** Every counter's sum, in a fixed order (for a snapshot). */
    long[] sums() {
        LongAdder[] all = all();
        long[] out = new long[all.length];
        for (int i = 0; i < all.length; i++) {
            out[i] = all[i].sum();
        }
        return out;
    }

    /** Adds {@code sums} (as {@link #sums} gave them) to the counters: a restore, onto zero. */
    void restore(long[] sums) {
        LongAdder[] all = all();
        if (sums.length != all.length) {
            throw new IllegalArgumentException(sums.length + " counters in the snapshot, " + all.length + " here");
        }
        for (int i = 0; i < all.length; i++) {
            all[i].add(sums[i]);
        }
    }
}
