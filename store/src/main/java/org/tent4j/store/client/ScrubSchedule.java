package org.tent4j.store.client;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.store.SegmentSpec;

/**
 * The node's scrubs of its disk segment, one at a time: on demand ({@link StoreClient#scrubDisk}) and, given an
 * interval, on a background thread that starts the next scrub that long after the last one ended (so a scrub slower
 * than the interval never queues up behind itself). A periodic scrub that fails (the master unreachable, the disk
 * withdrawn meanwhile) is logged, never fatal: the next one runs on time.
 */
final class ScrubSchedule {
    private static final Logger LOG = LoggerFactory.getLogger(ScrubSchedule.class);
    /** How long {@link #stop} waits for a scrub in progress to notice it was interrupted. */
    private static final long STOP_WAIT_SECONDS = 10;

    private final Contributions contributions;
    private final Duration interval;
    /** Held while a scrub runs: a second waits for the first (its own lock: heartbeats never wait on a scrub). */
    private final Object oneAtATime = new Object();
    private final LongAdder completed = new LongAdder();
    private final LongAdder mismatches = new LongAdder();
    private ScheduledExecutorService timer;

    ScrubSchedule(Contributions contributions, Duration interval) {
        this.contributions = contributions;
        this.interval = interval;
    }

    /** Starts the periodic scrubs, if an interval was given. */
    synchronized void start() {
        if (interval.isZero() || timer != null) {
            return;
        }
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "store-disk-scrub");
            t.setDaemon(true);
            return t;
        });
        long millis = Math.max(1, interval.toMillis());
        timer.scheduleWithFixedDelay(this::periodic, millis, millis, TimeUnit.MILLISECONDS);
        LOG.info("scrubbing the disk segment every {}", interval);
    }

    /** One scrub now, after any in progress (periodic or asked for) has ended; logs its summary. */
    ScrubReport scrubNow() {
        synchronized (oneAtATime) {
            long t0 = System.nanoTime();
            ScrubReport r = contributions.scrubDisk();
            completed.increment();
            mismatches.add(r.mismatches().size());
            String file = contributions.diskSegment().map(SegmentSpec::file).orElse("(withdrawn)");
            if (r.mismatches().isEmpty()) {
                LOG.info("scrub of {}: {} disk replicas checked, all intact, in {} ms", file, r.checked(),
                        (System.nanoTime() - t0) / 1_000_000);
            } else {
                LOG.warn("scrub of {}: {} disk replicas checked, {} corrupt ({} dropped by the master), in {} ms", file,
                        r.checked(), r.mismatches().size(), r.dropped(), (System.nanoTime() - t0) / 1_000_000);
            }
            return r;
        }
    }

    private void periodic() {
        if (contributions.diskSegment().isEmpty()) {
            return; // no disk (yet, or any more): nothing to scrub
        }
        try {
            scrubNow();
        } catch (RuntimeException e) {
            LOG.warn("periodic scrub of the disk segment failed: {}; the next one starts in {}", e.getMessage(), interval);
        }
    }

    /** Scrubs completed since the client started (periodic and asked for). */
    long completed() {
        return completed.sum();
    }

    /** Disk replicas those scrubs found not matching their CRC32C. */
    long mismatches() {
        return mismatches.sum();
    }

    /** Stops the periodic scrubs, interrupting one in progress (it ends after the replica it is checking). */
    void stop() {
        ScheduledExecutorService t;
        synchronized (this) {
            t = timer;
            timer = null;
        }
        if (t == null) {
            return;
        }
        t.shutdownNow();
        try {
            if (!t.awaitTermination(STOP_WAIT_SECONDS, TimeUnit.SECONDS)) {
                LOG.warn("the disk scrub did not stop within {} s; closing the client under it", STOP_WAIT_SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
