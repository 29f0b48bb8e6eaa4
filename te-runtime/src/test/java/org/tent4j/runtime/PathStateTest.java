package org.tent4j.runtime;

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
        long now = 0;
        for (int i = 0; i < 4; i++) {
            p.posted(MIB);
            posted[i] = now;
        }
        double lowest = Double.MAX_VALUE;
        double highest = 0;
        for (int cycle = 0; cycle < 50; cycle++) {
            now += 4 * MS;
            for (int i = 0; i < 4; i++) {
                p.completed(MIB, posted[i], now + i * 2_000); // 2 µs apart: one read held all four
                p.posted(MIB);
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
        p.posted(MIB);
        p.completed(MIB, 0, 4 * MS); // idle: the first measurement replaces the 1 GB/s guess
        assertEquals((double) MIB / (4 * MS), p.bandwidth(), 1e-9);
        // now busy at 1 MiB per 0.5 ms for 20 ms
        long now = 4 * MS;
        p.posted(MIB);
        long lastPost = now;
        for (int i = 0; i < 40; i++) {
            p.posted(MIB);
            long post = now;
            now += MS / 2;
            p.completed(MIB, lastPost, now);
            lastPost = post;
        }
        assertEquals(2.0 * MIB / MS, p.bandwidth(), 0.1 * MIB / MS);
        assertFalse(p.paused());
    }
}
