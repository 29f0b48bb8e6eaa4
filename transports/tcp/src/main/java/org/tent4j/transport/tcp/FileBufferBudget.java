package org.tent4j.transport.tcp;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.LongAccumulator;
import java.util.concurrent.atomic.LongAdder;

/**
 * The bytes of file-request buffers (remote file segments, issue 12) all inbound connections of one transport may
 * hold at once: a peer's file READ or WRITE needs a buffer of its length until its answer is written, and a peer with
 * many connections must not multiply {@link FileRequests#MAX_FILE_OPS} into an out-of-memory. A connection that
 * finds the budget spent stops reading its peer and registers a wake-up; every release wakes all that wait, each
 * retries on its own event loop. Releases come from answers written (or dropped with their connection) and file
 * WRITEs done, none of which waits on the budget, so waiting never deadlocks. One instance per transport.
 */
final class FileBufferBudget {
    private final long capacity;
    private long used;
    private final List<Runnable> waiters = new ArrayList<>();
    private final LongAdder pauses = new LongAdder();
    private final LongAccumulator peak = new LongAccumulator(Math::max, 0);

    FileBufferBudget(long capacity) {
        this.capacity = capacity;
    }

    long capacity() {
        return capacity;
    }

    /**
     * Takes {@code bytes} if they are free; otherwise counts a pause and runs {@code onRelease} (once, on the
     * releasing thread) at the next release.
     */
    boolean tryAcquire(long bytes, Runnable onRelease) {
        synchronized (this) {
            if (used + bytes <= capacity) {
                used += bytes;
                peak.accumulate(used);
                return true;
            }
            waiters.add(onRelease);
        }
        pauses.increment();
        return false;
    }

    void release(long bytes) {
        Runnable[] wake;
        synchronized (this) {
            used -= bytes;
            if (waiters.isEmpty()) {
                return;
            }
            wake = waiters.toArray(Runnable[]::new);
            waiters.clear();
        }
        for (Runnable r : wake) {
            r.run();
        }
    }

    synchronized long used() {
        return used;
    }

    /** Times a connection stopped reading because the budget was spent. */
    long pauses() {
        return pauses.sum();
    }

    /** The most bytes held at once. */
    long peak() {
        return peak.get();
    }
}
