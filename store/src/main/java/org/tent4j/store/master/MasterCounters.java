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
    /** Segments dropped because a mount of another incarnation named them or their memory: their node restarted. */
    final LongAdder segmentsReplaced = new LongAdder();
    final LongAdder reservationsGranted = new LongAdder();
    final LongAdder reservationsReleased = new LongAdder();
    final LongAdder objectsCommitted = new LongAdder();
    /** Offloads handed to a node (a disk range reserved for them). */
    final LongAdder offloadsStarted = new LongAdder();
    /** Offloads whose bytes the node reported durable: the object switched to its disk replica. */
    final LongAdder offloadsCompleted = new LongAdder();
    /** Offloads that failed on the node or expired: their disk range went back, the object was not switched. */
    final LongAdder offloadsFailed = new LongAdder();
    /** Offloads given up because the object changed meanwhile (removed, upserted, its segment unmounted). */
    final LongAdder offloadsCancelled = new LongAdder();
    /** An offload asked for an object that already had one in flight or a disk replica: refused (never should be). */
    final LongAdder offloadsDuplicate = new LongAdder();
    /** Victims dropped instead of offloaded because no disk segment had room. */
    final LongAdder offloadsNoSpace = new LongAdder();
    /** Offloads started as a write-through put ended (counted among {@link #offloadsStarted} too). */
    final LongAdder writeThroughStarted = new LongAdder();
    /**
     * Offloads to another node's disk (no owner of a memory replica had a disk with room; counted among
     * {@link #offloadsStarted} too): that disk's node pulls the bytes through its engine.
     */
    final LongAdder offloadsRemote = new LongAdder();
    /** Disk-only objects being copied back into memory after enough reads. */
    final LongAdder promotionsStarted = new LongAdder();
    final LongAdder promotionsCompleted = new LongAdder();
    /** Disk replicas a node's scrub found corrupt, dropped. */
    final LongAdder scrubDropped = new LongAdder();
    /** Read leases granted on objects whose only replica is on disk. */
    final LongAdder diskReads = new LongAdder();
    /** Disk-only objects dropped to keep the disk tier under its watermark. */
    final LongAdder diskEvictedObjects = new LongAdder();
    /** Repairs handed to a node (a memory range reserved for the new replica). */
    final LongAdder repairsStarted = new LongAdder();
    /** Repairs whose node reported the copy done: the object gained the replica. */
    final LongAdder repairsCompleted = new LongAdder();
    /** Repairs the node reported failed: the range went back, the object stays a candidate. */
    final LongAdder repairsFailed = new LongAdder();
    /** Repairs not reported within the offload timeout: the range is parked, the object stays a candidate. */
    final LongAdder repairsExpired = new LongAdder();
    /** Repairs given up because the object changed meanwhile (removed, upserted, its source or target segment gone). */
    final LongAdder repairsCancelled = new LongAdder();

    private LongAdder[] all() {
        return new LongAdder[] {objects, objectBytes, evictedObjects, evictedBytes, evictionRounds, leasesGranted,
                removalsBlockedByLease, putsTakenOver, putsReclaimed, partialAllocations, allocationFailures,
                clientsExpired, reservationsGranted, reservationsReleased, objectsCommitted, offloadsStarted,
                offloadsCompleted, offloadsFailed, offloadsCancelled, offloadsDuplicate, offloadsNoSpace, diskReads,
                diskEvictedObjects, promotionsStarted, promotionsCompleted, scrubDropped, repairsStarted, repairsCompleted,
                repairsFailed, repairsExpired, repairsCancelled, segmentsReplaced,
                // appended: a version 9 snapshot holds every counter before it (MasterSnapshot)
                writeThroughStarted,
                // appended: a version 10 snapshot holds every counter before it
                offloadsRemote};
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
