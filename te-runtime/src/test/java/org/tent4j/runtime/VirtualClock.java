package org.tent4j.runtime;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

import org.tent4j.spi.TimeSource;

/** Time that moves only when a test says so. */
final class VirtualClock implements TimeSource {
    private final AtomicLong nanos = new AtomicLong(1_000_000_000L);

    @Override
    public long nanoTime() {
        return nanos.get();
    }

    @Override
    public Instant instant() {
        return Instant.ofEpochSecond(0, nanos.get());
    }

    void advance(Duration d) {
        nanos.addAndGet(d.toNanos());
    }
}
