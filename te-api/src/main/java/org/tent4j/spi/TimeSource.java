package org.tent4j.spi;

import java.time.Instant;

/**
 * The engine's clock, handed to plugins through {@link TransportContext#clock()} so that deadlines, cooldowns and
 * expiries can be tested in virtual time. {@link #nanoTime()} is monotonic (for intervals and deadlines, comparable
 * with {@link Slice#deadlineNanos()}); {@link #instant()} is wall time (for what is shown to people or peers).
 */
public interface TimeSource {
    /** The system clocks: {@link System#nanoTime()} and {@link Instant#now()}. */
    TimeSource SYSTEM = new TimeSource() {
        @Override
        public long nanoTime() {
            return System.nanoTime();
        }

        @Override
        public Instant instant() {
            return Instant.now();
        }
    };

    /**
     * Monotonic time, for intervals and deadlines.
     *
     * @return nanoseconds from an arbitrary origin, as {@link System#nanoTime()}
     */
    long nanoTime();

    /**
     * Wall time, for what is shown to people or peers.
     *
     * @return now
     */
    Instant instant();

}
