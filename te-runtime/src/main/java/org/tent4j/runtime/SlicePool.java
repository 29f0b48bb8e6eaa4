package org.tent4j.runtime;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Recycles {@link RuntimeSlice}s so the data path allocates nothing per slice in steady state. A ring under a lock,
 * handing out the slice that came back longest ago: a transport that wrongly settles a slice a second time then
 * almost always finds it idle (detected, counted) rather than re-armed for another task. Uncontended locking costs
 * less than a slice's transfer. Grows when empty; keeps at most {@code max} idle slices.
 */
final class SlicePool {
    private final RuntimeSlice[] ring;
    private int head;
    private int size;
    private final AtomicLong stale = new AtomicLong();

    SlicePool(int max) {
        ring = new RuntimeSlice[max];
    }

    RuntimeSlice take() {
        synchronized (this) {
            if (size > 0) {
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
    long staleSettlements() {
        return stale.get();
    }
}
