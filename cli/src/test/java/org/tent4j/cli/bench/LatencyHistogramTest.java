package org.tent4j.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Random;

import org.junit.jupiter.api.Test;

class LatencyHistogramTest {

    @Test
    void emptyHistogramReportsZero() {
        LatencyHistogram h = new LatencyHistogram();
        assertEquals(0, h.count());
        assertEquals(0, h.percentile(50));
        assertEquals(0, h.percentile(99.9));
        assertEquals(0, h.min());
        assertEquals(0, h.max());
    }

    @Test
    void smallValuesAreExact() {
        LatencyHistogram h = new LatencyHistogram();
        for (int v = 1; v <= 100; v++) {
            h.record(v);
        }
        assertEquals(50, h.percentile(50));
        assertEquals(99, h.percentile(99));
        assertEquals(100, h.percentile(99.9));
        assertEquals(100, h.percentile(100));
        assertEquals(1, h.percentile(0));
        assertEquals(1, h.min());
        assertEquals(100, h.max());
    }

    @Test
    void percentilesOfUniformValuesWithinBucketPrecision() {
        LatencyHistogram h = new LatencyHistogram();
        for (long v = 1; v <= 1_000_000; v++) {
            h.record(v * 1000); // 1 us .. 1 s in nanoseconds
        }
        assertClose(500_000_000L, h.percentile(50));
        assertClose(990_000_000L, h.percentile(99));
        assertClose(999_000_000L, h.percentile(99.9));
        assertEquals(1_000_000_000L, h.percentile(100));
    }

    @Test
    void agreesWithSortedSamplesOnSkewedData() {
        Random random = new Random(42);
        long[] samples = new long[200_000];
        LatencyHistogram h = new LatencyHistogram();
        for (int i = 0; i < samples.length; i++) {
            // mostly ~20 us with a long tail up to ~50 ms, like a transfer latency distribution
            long v = random.nextInt(100) < 98 ? 15_000 + random.nextInt(10_000) : 100_000 + random.nextInt(50_000_000);
            samples[i] = v;
            h.record(v);
        }
        Arrays.sort(samples);
        for (double p : new double[]{50, 90, 99, 99.9, 99.99}) {
            long exact = samples[(int) Math.ceil(p / 100 * samples.length) - 1];
            assertClose(exact, h.percentile(p));
        }
    }

    @Test
    void mergingEqualsRecordingIntoOne() {
        LatencyHistogram a = new LatencyHistogram();
        LatencyHistogram b = new LatencyHistogram();
        LatencyHistogram all = new LatencyHistogram();
        for (long v = 1; v < 50_000; v += 7) {
            (v % 2 == 0 ? a : b).record(v * 31);
            all.record(v * 31);
        }
        a.add(b);
        assertEquals(all.count(), a.count());
        assertEquals(all.min(), a.min());
        assertEquals(all.max(), a.max());
        for (double p : new double[]{1, 50, 99, 99.9}) {
            assertEquals(all.percentile(p), a.percentile(p));
        }
    }

    @Test
    void bucketBoundariesAreContiguousAndContainTheirValues() {
        for (long v : new long[]{0, 1, 255, 256, 257, 511, 512, 1023, 1024, 123_456_789, Long.MAX_VALUE / 3, Long.MAX_VALUE}) {
            int i = LatencyHistogram.index(v);
            assertTrue(LatencyHistogram.lowestEquivalent(i) <= v && v <= LatencyHistogram.highestEquivalent(i),
                    "value " + v + " outside its bucket " + i);
        }
        for (int i = 1; i < LatencyHistogram.index(Long.MAX_VALUE); i++) {
            assertEquals(LatencyHistogram.highestEquivalent(i - 1) + 1, LatencyHistogram.lowestEquivalent(i),
                    "gap or overlap before bucket " + i);
        }
    }

    @Test
    void negativeValuesCountAsZeroAndBadPercentilesAreRejected() {
        LatencyHistogram h = new LatencyHistogram();
        h.record(-5);
        assertEquals(0, h.percentile(50));
        assertThrows(IllegalArgumentException.class, () -> h.percentile(100.5));
        assertThrows(IllegalArgumentException.class, () -> h.percentile(Double.NaN));
    }

    @Test
    void recordingAValueNTimesEqualsNSingleRecords() {
        LatencyHistogram many = new LatencyHistogram();
        LatencyHistogram single = new LatencyHistogram();
        for (long v : new long[]{3, 70_000, 1_500_000}) {
            many.record(v, 32);
            for (int i = 0; i < 32; i++) {
                single.record(v);
            }
        }
        many.record(5, 0);
        assertEquals(single.count(), many.count());
        assertEquals(single.min(), many.min());
        assertEquals(single.max(), many.max());
        for (double p : new double[]{1, 33, 50, 66.7, 99, 100}) {
            assertEquals(single.percentile(p), many.percentile(p), "p" + p);
        }
    }

    private static void assertClose(long expected, long actual) {
        double error = Math.abs(actual - expected) / (double) expected;
        assertTrue(error <= 0.01, "expected about " + expected + ", got " + actual + " (" + error * 100 + " % off)");
    }
}
