package org.tent4j.cli.bench;

/**
 * Log-linear histogram of non-negative values (nanoseconds here), in the manner of HdrHistogram: values below 256 are
 * counted exactly, larger ones in buckets whose width is 1/128 of their power of two, so a percentile is off by at
 * most 0.4 %. Recording never allocates; one instance belongs to one thread, and {@link #add} merges them at the end.
 */
public final class LatencyHistogram {
    private static final int SUB_BITS = 7;
    private static final int SUB_COUNT = 1 << SUB_BITS;
    private static final int EXACT_LIMIT = 2 * SUB_COUNT;
    private static final int BUCKETS = index(Long.MAX_VALUE) + 1;

    private final long[] counts = new long[BUCKETS];
    private long total;
    private long min = Long.MAX_VALUE;
    private long max;

    /** Records one value; negative values (a clock step) count as 0. */
    public void record(long value) {
        long v = Math.max(0, value);
        counts[index(v)]++;
        total++;
        if (v < min) {
            min = v;
        }
        if (v > max) {
            max = v;
        }
    }

    /** Records {@code value} {@code count} times, as {@code count} calls of {@link #record(long)} would. */
    public void record(long value, long count) {
        if (count <= 0) {
            return;
        }
        long v = Math.max(0, value);
        counts[index(v)] += count;
        total += count;
        if (v < min) {
            min = v;
        }
        if (v > max) {
            max = v;
        }
    }

    public void add(LatencyHistogram other) {
        for (int i = 0; i < BUCKETS; i++) {
            counts[i] += other.counts[i];
        }
        total += other.total;
        min = Math.min(min, other.min);
        max = Math.max(max, other.max);
    }

    public long count() {
        return total;
    }

    public long min() {
        return total == 0 ? 0 : min;
    }

    public long max() {
        return max;
    }

    /**
     * The value below or at which {@code percentile} percent of the recorded values lie (nearest-rank), reported as the
     * middle of its bucket and clamped to the recorded range; 0 when nothing was recorded.
     */
    public long percentile(double percentile) {
        if (percentile < 0 || percentile > 100 || Double.isNaN(percentile)) {
            throw new IllegalArgumentException("percentile must be within [0, 100], got " + percentile);
        }
        if (total == 0) {
            return 0;
        }
        long rank = Math.max(1, (long) Math.ceil(percentile / 100.0 * total));
        long seen = 0;
        for (int i = 0; i < BUCKETS; i++) {
            seen += counts[i];
            if (seen >= rank) {
                long low = lowestEquivalent(i);
                long mid = low + (highestEquivalent(i) - low) / 2;
                return Math.min(max, Math.max(min, mid));
            }
        }
        return max;
    }

    static int index(long v) {
        if (v < EXACT_LIMIT) {
            return (int) v;
        }
        int shift = 63 - Long.numberOfLeadingZeros(v) - SUB_BITS;
        return (shift << SUB_BITS) + (int) (v >>> shift);
    }

    static long lowestEquivalent(int index) {
        if (index < EXACT_LIMIT) {
            return index;
        }
        int shift = (index >>> SUB_BITS) - 1;
        long sub = index - ((long) shift << SUB_BITS);
        return sub << shift;
    }

    static long highestEquivalent(int index) {
        if (index < EXACT_LIMIT) {
            return index;
        }
        int shift = (index >>> SUB_BITS) - 1;
        return lowestEquivalent(index) + (1L << shift) - 1;
    }
}
