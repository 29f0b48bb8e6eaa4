package org.tent4j.runtime.schedule;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class PathStateTest {
    private static final long MIB = 1 << 20;
    private static final long MS = 1_000_000;

    @Test
    void acknowledgementsThatArriveInBurstsDoNotInflateTheEstimate() {
        // a path that carries 1 MiB per ms, four slices in flight, whose acknowledgements come four at a time
        PathState p = new PathState(0, "lane-0", MS, 10 * MS);
        long[] posted = new long[4];
        boolean[] busy = new boolean[4];
        long now = 0;
        for (int i = 0; i < 4; i++) {
            busy[i] = p.posted(MIB) > 0;
            posted[i] = now;
        }
        double lowest = Double.MAX_VALUE;
        double highest = 0;
        for (int cycle = 0; cycle < 50; cycle++) {
            now += 4 * MS;
            for (int i = 0; i < 4; i++) {
                p.completed(MIB, posted[i], busy[i], now + i * 2_000); // 2 µs apart: one read held all four
                busy[i] = p.posted(MIB) > 0;
                posted[i] = now + i * 2_000;
            }
            if (cycle >= 10) {
                lowest = Math.min(lowest, p.bandwidth());
                highest = Math.max(highest, p.bandwidth());
            }
        }
        double truth = (double) MIB / MS;
        assertTrue(highest < 1.3 * truth, "estimate rose to " + highest / truth + "x the path's speed");
        assertTrue(lowest > 0.7 * truth, "estimate fell to " + lowest / truth + "x the path's speed");
    }

    @Test
    void aLoneSliceSetsTheFirstEstimateAndABusyPathItsPace() {
        PathState p = new PathState(0, "lane-0", MS, 10 * MS);
        assertEquals(0, p.posted(MIB));
        p.completed(MIB, 0, false, 4 * MS); // idle: the first measurement replaces the 1 GB/s guess
        assertEquals((double) MIB / (4 * MS), p.bandwidth(), 1e-9);
        // now busy at 1 MiB per 0.5 ms for 20 ms
        long now = 4 * MS;
        boolean lastBusy = p.posted(MIB) > 0;
        long lastPost = now;
        for (int i = 0; i < 40; i++) {
            boolean busy = p.posted(MIB) > 0;
            long post = now;
            now += MS / 2;
            p.completed(MIB, lastPost, lastBusy, now);
            lastPost = post;
            lastBusy = busy;
        }
        assertEquals(2.0 * MIB / MS, p.bandwidth(), 0.1 * MIB / MS);
        assertFalse(p.paused());
    }

    @Test
    void aBusyCompletionBeforeAnyOtherStartsTheWindowRatherThanTimingFromZero() {
        // four posted at once; the second completes first, on a clock far from zero
        PathState p = new PathState(0, "lane-0", MS, 10 * MS);
        long t0 = 5_000_000_000_000L;
        boolean[] busy = new boolean[4];
        for (int i = 0; i < 4; i++) {
            busy[i] = p.posted(MIB) > 0;
        }
        assertFalse(busy[0]);
        assertTrue(busy[1]);
        p.completed(MIB, t0, busy[1], t0 + MS / 4);
        assertEquals(1.0, p.bandwidth(), 1e-9, "a window timed from an unset start turned into a sample");
        p.completed(MIB, t0, busy[2], t0 + MS / 2);
        p.completed(MIB, t0, busy[3], t0 + 5 * MS / 4); // one window of 1 ms: 2 MiB
        assertEquals(2.0 * MIB / MS, p.bandwidth(), 0.01 * MIB / MS);
    }

    @Test
    void onceSeenBusyLoneSlicesSampleAtMostOnceAWindow() {
        PathState p = new PathState(0, "lane-0", MS, 10 * MS);
        long now = 1_000 * MS;
        p.posted(MIB);
        p.completed(MIB, now, false, now + MS); // lone: 1 MiB/ms
        now += MS;
        for (int i = 0; i < 8; i++) { // busy at 4 MiB/ms for 2 ms
            p.posted(MIB);
            now += MS / 4;
            p.completed(MIB, now - MS / 4, true, now);
        }
        double busyEstimate = p.bandwidth();
        // a stream of slow lone slices within the same window moves nothing
        for (int i = 0; i < 100; i++) {
            p.posted(MIB);
            p.completed(MIB, now - 10 * MS, false, now + i);
        }
        assertEquals(busyEstimate, p.bandwidth(), 1e-12);
        // one window later one of them counts, a little
        p.posted(MIB);
        p.completed(MIB, now, false, now + 2 * MS);
        assertTrue(p.bandwidth() < busyEstimate && p.bandwidth() > 0.5 * busyEstimate, "bandwidth " + p.bandwidth());
    }

    @Test
    void reservationsRespectBothLimitsAndOneSliceAlwaysFits() {
        PathState p = new PathState(0, "lane-0", MS, 10 * MS);
        assertEquals(0, p.reserve(8 * MIB, 4, MIB), "one slice larger than the byte limit must still go");
        assertEquals(PathState.NO_ROOM, p.reserve(1, 4, MIB));
        p.withdrawn(8 * MIB);
        for (int i = 0; i < 4; i++) {
            assertEquals(i, p.reserve(1024, 4, MIB));
        }
        assertEquals(PathState.NO_ROOM, p.reserve(1024, 4, MIB), "a fifth slice beyond the slice limit");
        long both = p.inflight();
        assertEquals(4096, PathState.inflightBytes(both));
        assertEquals(4, PathState.inflightSlices(both));
        p.completed(1024, 0, false, MS);
        assertEquals(3, PathState.inflightSlices(p.inflight()));
        assertEquals(3072.0, p.inflightBytes());
    }

    @Test
    void concurrentReservationsNeverExceedTheLimitsAndAllReturn() throws Exception {
        PathState p = new PathState(0, "lane-0", MS, 10 * MS);
        int threads = 4;
        int rounds = 200_000;
        java.util.concurrent.atomic.AtomicReference<String> bad = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(threads);
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            long len = 4096L * (t + 1);
            ts[t] = new Thread(() -> {
                try {
                    start.await();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                for (int i = 0; i < rounds; i++) {
                    int before = p.reserve(len, 3, 64 * 1024);
                    if (before == PathState.NO_ROOM) {
                        continue;
                    }
                    long both = p.inflight();
                    if (PathState.inflightSlices(both) > 3 || PathState.inflightBytes(both) > 64 * 1024 + 16 * 1024) {
                        bad.compareAndSet(null, "in flight: " + PathState.inflightSlices(both) + " slices, "
                                + PathState.inflightBytes(both) + " bytes");
                    }
                    if ((i & 1) == 0) {
                        p.completed(len, i, before > 0, i + 1);
                    } else {
                        p.withdrawn(len);
                    }
                }
            });
            ts[t].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        assertEquals(null, bad.get());
        assertEquals(0, p.inflight(), "reservations and settlements did not balance");
    }
}
