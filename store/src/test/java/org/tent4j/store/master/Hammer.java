package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.IntFunction;

import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * Threads released together, each making random calls on a key of 400: refusals are the calls' business, an
 * INTERNAL_ERROR or anything thrown besides a StoreException is a failure; afterwards, no two live replicas may
 * share a byte. The concurrency tests' scaffolding.
 */
final class Hammer {
    /** One call of one thread. */
    interface Call {
        void run(String key, ThreadLocalRandom rnd);
    }

    private Hammer() {
    }

    /** Runs {@code rounds} calls on each of {@code threads} threads (thread {@code t} makes {@code calls.apply(t)}'s); the failures. */
    static Set<String> failures(int threads, int rounds, IntFunction<Call> calls) throws InterruptedException {
        CyclicBarrier start = new CyclicBarrier(threads);
        Set<String> failures = ConcurrentHashMap.newKeySet();
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Call call = calls.apply(t);
            ts.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                    ThreadLocalRandom rnd = ThreadLocalRandom.current();
                    for (int i = 0; i < rounds; i++) {
                        try {
                            call.run("k" + rnd.nextInt(400), rnd);
                        } catch (StoreException e) {
                            if (e.error() == StoreError.INTERNAL_ERROR) {
                                failures.add(e.toString());
                            }
                        }
                    }
                } catch (Throwable e) {
                    failures.add(e.toString());
                }
            }));
        }
        for (Thread t : ts) {
            t.join();
        }
        return failures;
    }

    /** Asserts that no two live replica ranges overlap; the bytes they hold (aligned). */
    static long disjointReplicaBytes(StoreMaster master, long now) {
        TreeMap<String, Long> ranges = new TreeMap<>();
        long total = 0;
        for (String key : master.state().keys(Integer.MAX_VALUE)) {
            MasterState.KeyView v = master.state().describe(now, key);
            for (ReplicaLocation r : v.replicas()) {
                long len = RangeAllocator.aligned(r.length());
                // segment id, then the address zero-padded so string order is address order within a segment
                String at = r.segmentId() + "/" + String.format("%020d", r.address());
                var below = ranges.floorEntry(at);
                if (below != null && below.getKey().startsWith(r.segmentId() + "/")) {
                    assertTrue(addr(below.getKey()) + below.getValue() <= r.address(), "overlap at " + key + " " + r);
                }
                var above = ranges.ceilingEntry(at);
                if (above != null && above.getKey().startsWith(r.segmentId() + "/")) {
                    assertTrue(r.address() + len <= addr(above.getKey()), "overlap at " + key + " " + r);
                }
                ranges.put(at, len);
                total += len;
            }
        }
        return total;
    }

    private static long addr(String at) {
        return Long.parseLong(at.substring(at.indexOf('/') + 1));
    }
}
