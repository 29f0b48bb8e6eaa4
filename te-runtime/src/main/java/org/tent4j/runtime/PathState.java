package org.tent4j.runtime;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One path of a connection as the scheduler sees it: how fast it has been (delivered bytes per nanosecond, as EWMAs of
 * bytes and of time, measured between completions while busy so pipelining does not hide its speed), what is in
 * flight on it, and its health. A path that fails {@link #PAUSE_AFTER} times in a row is paused with exponential
 * cooldown; it is tried again when the cooldown ends and re-admitted on its first success.
 */
final class PathState implements org.tent4j.runtime.metrics.EngineMetrics.PathView {
    static final int PAUSE_AFTER = 3;
    private static final double ALPHA = 0.2;
    /** Assumed speed before the first measurement: 1 byte/ns = 1 GB/s. */
    private static final double INITIAL_BANDWIDTH = 1.0;
    /** Shortest span of busy completions that makes one bandwidth sample. */
    private static final long WINDOW_NANOS = 1_000_000;

    final int index;
    final String name;
    final AtomicLong inflightBytes = new AtomicLong();
    final AtomicInteger inflightSlices = new AtomicInteger();
    final AtomicLong completedSlices = new AtomicLong();
    final AtomicLong failedSlices = new AtomicLong();
    private final long baseCooldownNanos;
    private final long maxCooldownNanos;
    private double bandwidth = INITIAL_BANDWIDTH;
    private double ewmaBytes;
    private double ewmaNanos;
    private boolean seenBusy;
    private long lastCompletionNanos;
    /** Start of the current window of busy completions, and the bytes completed in it so far. */
    private long windowStartNanos;
    private long windowBytes;
    private int consecutiveFailures;
    private long cooldownNanos;
    private volatile long pausedUntilNanos;
    private volatile boolean paused;

    PathState(int index, String name, long baseCooldownNanos, long maxCooldownNanos) {
        this.index = index;
        this.name = name;
        this.baseCooldownNanos = baseCooldownNanos;
        this.maxCooldownNanos = maxCooldownNanos;
    }

    /** Whether slices may go here now (a paused path becomes eligible again, on probation, once its cooldown ends). */
    boolean eligible(long now) {
        return !paused || now - pausedUntilNanos >= 0;
    }

    @Override
    public boolean paused() {
        return paused;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public double inflightBytes() {
        return inflightBytes.get();
    }

    @Override
    public double completedSlices() {
        return completedSlices.get();
    }

    @Override
    public double failedSlices() {
        return failedSlices.get();
    }

    /** Estimated bytes per nanosecond. */
    synchronized double bandwidth() {
        return bandwidth;
    }

    @Override
    public synchronized double bandwidthBytesPerSecond() {
        return bandwidth * 1e9;
    }

    /**
     * Counts a slice as posted here if the path has room (fewer than {@code maxSlices} slices and {@code maxBytes}
     * bytes in flight): the check and the count are one step, as submitters posting directly race with the drain loop.
     */
    boolean reserve(long length, int maxSlices, long maxBytes) {
        for (;;) {
            int n = inflightSlices.get();
            if (n >= maxSlices) {
                return false;
            }
            if (inflightSlices.compareAndSet(n, n + 1)) {
                break;
            }
        }
        if (inflightBytes.getAndAdd(length) >= maxBytes) {
            withdrawn(length);
            return false;
        }
        return true;
    }

    void posted(long length) {
        inflightBytes.addAndGet(length);
        inflightSlices.incrementAndGet();
    }

    /** Records a success; returns whether this re-admitted a paused path. */
    boolean completed(long length, long postNanos, long now) {
        inflightBytes.addAndGet(-length);
        inflightSlices.decrementAndGet();
        completedSlices.incrementAndGet();
        synchronized (this) {
            // busy: something else completed here after this slice was posted, so the path has been working all along
            // and its completions since then measure its pace; idle: the time since posting also holds the fixed
            // latency of a lone slice
            boolean busy = lastCompletionNanos - postNanos > 0;
            lastCompletionNanos = now;
            if (busy) {
                // Completions come in bursts (a read holding several acknowledgements), so busy completions are
                // summed over a window of at least WINDOW_NANOS and the window is one sample: a burst of completions
                // microseconds apart can then not pass for a path many times faster than it is.
                windowBytes += length;
                long took = now - windowStartNanos;
                if (took < WINDOW_NANOS) {
                    return resetFailures();
                }
                sample(windowBytes, took, ALPHA);
                seenBusy = true;
            } else {
                // A lone slice's latency understates what the path carries when busy, so once it has been seen busy
                // such samples move the estimate little.
                sample(length, Math.max(1, now - postNanos), seenBusy ? ALPHA / 8 : ALPHA);
            }
            windowStartNanos = now;
            windowBytes = 0;
            return resetFailures();
        }
    }

    /** Folds {@code bytes} in {@code nanos} into the estimate. Called with the lock held. */
    private void sample(double bytes, double nanos, double alpha) {
        // Bytes and time are averaged separately: averaging their ratio would let one short sample inflate the
        // estimate many times over.
        if (ewmaNanos == 0) { // the initial figure is a guess, not a measurement: the first sample replaces it
            ewmaBytes = bytes;
            ewmaNanos = nanos;
        } else {
            ewmaBytes = ewmaBytes * (1 - alpha) + bytes * alpha;
            ewmaNanos = ewmaNanos * (1 - alpha) + nanos * alpha;
        }
        bandwidth = ewmaBytes / ewmaNanos;
    }

    /** After a success; returns whether this re-admitted a paused path. Called with the lock held. */
    private boolean resetFailures() {
        consecutiveFailures = 0;
        cooldownNanos = 0;
        if (paused) {
            paused = false;
            return true;
        }
        return false;
    }

    /** Records a failure; returns the cooldown in nanoseconds if this paused the path, else 0. */
    long failed(long length, long now) {
        inflightBytes.addAndGet(-length);
        inflightSlices.decrementAndGet();
        failedSlices.incrementAndGet();
        synchronized (this) {
            consecutiveFailures++;
            if (consecutiveFailures < PAUSE_AFTER && !paused) {
                return 0;
            }
            if (paused && now - pausedUntilNanos < 0) {
                // Slices that were in flight when the path was paused fail after it; they say nothing new.
                return 0;
            }
            cooldownNanos = cooldownNanos == 0 ? baseCooldownNanos : Math.min(maxCooldownNanos, cooldownNanos * 2);
            pausedUntilNanos = now + cooldownNanos;
            paused = true;
            return cooldownNanos;
        }
    }

    /** A slice was taken back before it moved (canceled or rerouted). */
    void withdrawn(long length) {
        inflightBytes.addAndGet(-length);
        inflightSlices.decrementAndGet();
    }
}
