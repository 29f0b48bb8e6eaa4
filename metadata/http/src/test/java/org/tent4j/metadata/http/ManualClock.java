package org.tent4j.metadata.http;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

import org.tent4j.spi.TimeSource;

/** Time that moves only when a test says so; monotonic and wall time move together, as TTL persistence needs. */
final class ManualClock implements TimeSource {
    private static final Instant START = Instant.parse("2030-01-01T00:00:00Z");
    private final AtomicLong elapsedNanos = new AtomicLong();

    @Override
    public long nanoTime() {
        return elapsedNanos.get();
    }

    @Override
    public Instant instant() {
        return START.plusNanos(elapsedNanos.get());
    }

    void advance(Duration d) {
        elapsedNanos.addAndGet(d.toNanos());
    }
}
