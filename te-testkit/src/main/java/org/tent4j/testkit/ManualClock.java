package org.tent4j.testkit;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

import org.tent4j.spi.TimeSource;

/**
 * Time that moves only when a test says so, for deadlines, cooldowns and TTLs in virtual time. Monotonic and wall
 * time move together (TTLs are persisted as wall time and checked as monotonic deadlines). Thread-safe.
 */
public final class ManualClock implements TimeSource {
    private static final Instant WALL_START = Instant.parse("2030-01-01T00:00:00Z");
    private final long startNanos;
    private final AtomicLong elapsed = new AtomicLong();

    /** Starts at one day, so "a while ago" is still a positive time. */
    public ManualClock() {
        this(Duration.ofDays(1).toNanos());
    }

    /**
     * Starts at {@code startNanos}: {@code System.nanoTime() + an hour} gives a clock ahead of the system's, so a
     * deadline can have passed in one and not in the other.
     *
     * @param startNanos the first value of {@link #nanoTime()}
     */
    public ManualClock(long startNanos) {
        this.startNanos = startNanos;
    }

    /**
     * Moves the clock forward.
     *
     * @param by how far
     */
    public void advance(Duration by) {
        advance(by.toNanos());
    }

    /**
     * Moves the clock forward.
     *
     * @param nanos how far, in nanoseconds
     */
    public void advance(long nanos) {
        elapsed.addAndGet(nanos);
    }

    @Override
    public long nanoTime() {
        return startNanos + elapsed.get();
    }

    @Override
    public Instant instant() {
        return WALL_START.plusNanos(elapsed.get());
    }
}
