package org.tent4j.store;

/**
 * Monotonic time in nanoseconds. Every lease, TTL and timeout in the store reads time through one of these, so tests
 * run in virtual time and never sleep.
 */
@FunctionalInterface
public interface StoreClock {
    long nanoTime();

    static StoreClock system() {
        return System::nanoTime;
    }
}
