package org.tent4j.store;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/** Virtual time for tests: moves only when told. */
public final class ManualClock implements StoreClock {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);

    @Override
    public long nanoTime() {
        return now.get();
    }

    public void advance(Duration d) {
        now.addAndGet(d.toNanos());
    }
}
