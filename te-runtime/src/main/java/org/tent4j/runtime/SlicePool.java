package org.tent4j.runtime;

import java.util.concurrent.atomic.AtomicLong;

import org.tent4j.spi.TimeSource;

/**
 * Recycles {@link RuntimeSlice}s so the data path allocates nothing per slice in steady state. A ring under a lock,
 * handing out the slice that came back longest ago, and only once it has been idle for the quarantine: a transport
 * that wrongly settles a slice a second time within that window always finds it idle (detected, counted, ignored),
 * never re-armed for another task. Under steady load the ring holds about (slices per second × quarantine) idle
 * slices and allocates nothing. Uncontended locking costs less than a slice's transfer. Keeps at most {@code max}.
 */
final class SlicePool {
    /** Long enough for a transport's callback to return after settling; short enough to keep the ring small. */
    static final long QUARANTINE_NANOS = 1_000_000;

    private final RuntimeSlice[] ring;
    private final TimeSource clock;
    private final long quarantineNanos;
    private int head;
    private int size;
    private final AtomicLong stale = new AtomicLong();

    SlicePool(int max, TimeSource clock, long quarantineNanos) {
        this.ring = new RuntimeSlice[max];
        this.clock = clock;
        this.quarantineNanos = quarantineNanos;
    }

    RuntimeSlice take() {
        synchronized (this) {
            if (size > 0 && clock.nanoTime() - ring[head].idleSinceNanos >= quarantineNanos) {
                RuntimeSlice s = ring[head];
                ring[head] = null;
                head = head + 1 == ring.length ? 0 : head + 1;
                size--;
                return s;
            }
        }
        return new RuntimeSlice(this);
    }

    void give(RuntimeSlice s) {
        s.idleSinceNanos = clock.nanoTime();
        synchronized (this) {
            if (size < ring.length) {
                int tail = head + size;
                ring[tail >= ring.length ? tail - ring.length : tail] = s;
                size++;
            }
        }
    }

    void staleSettlement() {
        stale.incrementAndGet();
    }

    /** Settlements that found their slice not in flight (a transport's bug), since the engine started. */
    AtomicLong staleSettlements() {
        return stale;
    }
}
