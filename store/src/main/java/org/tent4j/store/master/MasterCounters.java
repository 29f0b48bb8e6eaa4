package org.tent4j.store.master;

import java.util.concurrent.atomic.LongAdder;

/** Counters since start, for metrics and the status page; every part counts here. Not state: a replay recounts them. */
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
}
