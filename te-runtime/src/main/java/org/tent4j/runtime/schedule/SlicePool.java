package org.tent4j.runtime.schedule;

import java.util.concurrent.atomic.AtomicLong;

import org.tent4j.spi.TimeSource;

/**
 * Recycles {@link RuntimeSlice}s so the data path allocates nothing per slice in steady state. Each slice belongs to
 * one of a few stripes: a ring under its own lock, handing out the slice that came back longest ago, and only once it
 * has been idle for the quarantine: a transport that wrongly settles a slice a second time within that window always
 * finds it idle (detected, counted, ignored), never re-armed for another task. Under steady load a stripe holds about
 * (its slices per second × quarantine) idle slices and allocates nothing. Keeps at most {@code max} per stripe.
 *
 * <p>Why stripes: with one lock and one ring for every submitting thread, each take and give moved the ring's cache
 * line between cores, and two threads posting 4 KiB shm copies went slower together than one alone. A submitting
 * thread takes from the stripe its thread id picks, and a slice goes back to the stripe it came from whichever thread
 * settles it: a thread that posts and settles inline (shm) touches only its own stripe, and a transport's I/O thread
 * gives back to its submitters' stripes.
 */
public final class SlicePool {
    /** Long enough for a transport's callback to return after settling; short enough to keep the ring small. */
    public static final long QUARANTINE_NANOS = 1_000_000;
    /** A power of two; threads created one after another (a bench's, an application's workers) get distinct stripes. */
    static final int STRIPES = 8;

    private final Stripe[] stripes = new Stripe[STRIPES];
    private final TimeSource clock;
    private final long quarantineNanos;
    private final AtomicLong stale = new AtomicLong();

    public SlicePool(int max, TimeSource clock, long quarantineNanos) {
        for (int i = 0; i < STRIPES; i++) {
            stripes[i] = new Stripe(max);
        }
        this.clock = clock;
        this.quarantineNanos = quarantineNanos;
    }

    /** A slice for a post at {@code now} (the engine's clock). */
    public RuntimeSlice take(long now) {
        Stripe stripe = stripes[stripeOf(Thread.currentThread())];
        RuntimeSlice s = stripe.take(now - quarantineNanos);
        return s != null ? s : new RuntimeSlice(this, stripe);
    }

    static int stripeOf(Thread t) {
        return (int) t.threadId() & (STRIPES - 1);
    }

    /** The engine's clock, for a caller that has not read it already. */
    long now() {
        return clock.nanoTime();
    }

    /** Takes {@code s} back, idle from {@code now} (the engine's clock). */
    void give(RuntimeSlice s, long now) {
        s.idleSince(now);
        s.stripe().give(s);
    }

    void staleSettlement() {
        stale.incrementAndGet();
    }

    /** Settlements that found their slice not in flight (a transport's bug), since the engine started. */
    public AtomicLong staleSettlements() {
        return stale;
    }

    /** One ring of idle slices, oldest first, under its own lock. */
    static final class Stripe {
        private final RuntimeSlice[] ring;
        private int head;
        private int size;

        Stripe(int max) {
            this.ring = new RuntimeSlice[max];
        }

        /** The oldest idle slice if it went idle at or before {@code idleBefore}, else {@code null}. */
        public synchronized RuntimeSlice take(long idleBefore) {
            if (size > 0 && idleBefore - ring[head].idleSince() >= 0) {
                RuntimeSlice s = ring[head];
                ring[head] = null;
                head = head + 1 == ring.length ? 0 : head + 1;
                size--;
                return s;
            }
            return null;
        }

        synchronized void give(RuntimeSlice s) {
            if (size < ring.length) {
                int tail = head + size;
                ring[tail >= ring.length ? tail - ring.length : tail] = s;
                size++;
            }
        }
    }
}
