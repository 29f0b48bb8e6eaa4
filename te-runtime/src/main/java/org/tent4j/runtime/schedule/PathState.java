package org.tent4j.runtime.schedule;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * One path of a connection as the scheduler sees it: how fast it has been (delivered bytes per nanosecond, as EWMAs of
 * bytes and of time, measured over windows of completions while busy so pipelining does not hide its speed), what is
 * in flight on it, and its health. A path that fails {@link #PAUSE_AFTER} times in a row is paused with exponential
 * cooldown; it is tried again when the cooldown ends and re-admitted on its first success.
 */
public final class PathState implements org.tent4j.runtime.metrics.EngineMetrics.PathView {
    static final int PAUSE_AFTER = 3;
    private static final double ALPHA = 0.2;
    /** Assumed speed before the first measurement: 1 byte/ns = 1 GB/s. */
    private static final double INITIAL_BANDWIDTH = 1.0;
    /** Shortest span of busy completions that makes one bandwidth sample. */
    private static final long WINDOW_NANOS = 1_000_000;
    /** What {@link #reserve} returns when the path is full. */
    static final int NO_ROOM = -1;
    /** Slices in flight take the low bits of {@link #inflight}; {@code paths.max_inflight} is at most {@link #MAX_SLICES}. */
    static final int SLICE_BITS = 20;
    private static final long SLICE_MASK = (1L << SLICE_BITS) - 1;
    public static final int MAX_SLICES = (int) SLICE_MASK - 1;
    /** The bytes above the slice count stay below this: {@code paths.max_inflight_bytes} and a slice are each at most half. */
    public static final long MAX_BYTES = 1L << (63 - SLICE_BITS);

    private final int index;
    private final String name;
    /**
     * Bytes in flight &lt;&lt; {@link #SLICE_BITS} | slices in flight: one word, so posting and settling a slice are one
     * atomic operation each on the one line every submitter and I/O thread of the path writes.
     */
    private final AtomicLong inflight = new AtomicLong();
    /** Bumped per settled slice by many threads, read only when scraped. */
    private final LongAdder completedSlices = new LongAdder();
    private final LongAdder failedSlices = new LongAdder();
    private final long baseCooldownNanos;
    private final long maxCooldownNanos;
    private double bandwidth = INITIAL_BANDWIDTH;
    private double ewmaBytes;
    private double ewmaNanos;
    private volatile boolean seenBusy;
    /**
     * Start of the current window of busy completions, and the bytes completed in it so far. Busy completions only add
     * to the bytes and read the start; the one that finds the window {@link #WINDOW_NANOS} old folds it in under the
     * lock, so a path settling millions of slices a second from several threads takes its lock about once a
     * millisecond rather than once a slice.
     */
    private volatile long windowStartNanos;
    /** Whether a window has started (a first completion has come); until then no time span can be measured. */
    private volatile boolean windowOpen;
    private final LongAdder windowBytes = new LongAdder();
    private volatile int consecutiveFailures;
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

    /** Its position in the group (what a slice that avoids a path names). */
    int index() {
        return index;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public double inflightBytes() {
        return inflightBytes(inflight.get());
    }

    /** What is in flight now, as one reading: {@link #inflightBytes(long)} and {@link #inflightSlices(long)} of it. */
    long inflight() {
        return inflight.get();
    }

    static long inflightBytes(long inflight) {
        return inflight >>> SLICE_BITS;
    }

    static int inflightSlices(long inflight) {
        return (int) (inflight & SLICE_MASK);
    }

    @Override
    public double completedSlices() {
        return completedSlices.sum();
    }

    @Override
    public double failedSlices() {
        return failedSlices.sum();
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
     * bytes in flight; one slice always fits): the check and the count are one step, as submitters posting directly
     * race with the drain loop. Returns the slices that were in flight before it, or {@link #NO_ROOM}.
     */
    int reserve(long length, int maxSlices, long maxBytes) {
        for (;;) {
            long v = inflight.get();
            int slices = inflightSlices(v);
            if (slices >= maxSlices || inflightBytes(v) >= maxBytes) {
                return NO_ROOM;
            }
            if (inflight.compareAndSet(v, v + (length << SLICE_BITS) + 1)) {
                return slices;
            }
        }
    }

    /** Counts a slice as posted here (the caller checked the room); returns the slices that were in flight before it. */
    int posted(long length) {
        return inflightSlices(inflight.getAndAdd((length << SLICE_BITS) + 1));
    }

    /**
     * Records a success; returns whether this re-admitted a paused path. {@code busy}: other slices were in flight on
     * the path when this one was posted, so the path has been working all along and its completions measure its pace;
     * otherwise the time since posting also holds the fixed latency of a lone slice.
     */
    boolean completed(long length, long postNanos, boolean busy, long now) {
        completedSlices.increment();
        // the estimate before the room: a drain on another thread that finds the room this frees (the sweeper, a
        // submitter) then weighs the path by what this completion measured, not by the estimate before it
        boolean readmitted = measured(length, postNanos, busy, now);
        inflight.getAndAdd(-((length << SLICE_BITS) + 1));
        return readmitted;
    }

    /** Folds a success into the estimate (see {@link #completed}); returns whether this re-admitted a paused path. */
    private boolean measured(long length, long postNanos, boolean busy, long now) {
        if (busy) {
            // Completions come in bursts (a read holding several acknowledgements), so busy completions are summed
            // over a window of at least WINDOW_NANOS and the window is one sample: a burst of completions
            // microseconds apart can then not pass for a path many times faster than it is.
            windowBytes.add(length);
            if (windowOpen && now - windowStartNanos < WINDOW_NANOS) {
                return consecutiveFailures != 0 && readmit();
            }
            synchronized (this) {
                long start = windowStartNanos;
                if (!windowOpen) { // the first completion: what came before it cannot be timed
                    windowBytes.reset();
                    windowStartNanos = now;
                    windowOpen = true;
                } else if (now - start >= WINDOW_NANOS) { // not folded by another thread meanwhile
                    sample(windowBytes.sumThenReset(), now - start, ALPHA);
                    windowStartNanos = now;
                    seenBusy = true;
                }
                return resetFailures();
            }
        }
        // A lone slice's latency understates what the path carries when busy, so once it has been seen busy such
        // samples move the estimate little, and come at most once a window.
        if (seenBusy && now - windowStartNanos < WINDOW_NANOS) {
            return consecutiveFailures != 0 && readmit();
        }
        synchronized (this) {
            sample(length, Math.max(1, now - postNanos), seenBusy ? ALPHA / 8 : ALPHA);
            windowStartNanos = now;
            windowOpen = true;
            windowBytes.reset();
            return resetFailures();
        }
    }

    private synchronized boolean readmit() {
        return resetFailures();
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
        withdrawn(length);
        failedSlices.increment();
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
        inflight.getAndAdd(-((length << SLICE_BITS) + 1));
    }
}
