package org.tent4j.store.client;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * A put the master refused for want of room that frees by itself (bytes leased by readers, puts in flight, offloads:
 * {@link StoreException#isTransient}) is asked again, with backoff from 1 ms doubling to 100 ms, until a bound (the
 * client's rpc timeout) has passed; then the last refusal is thrown, saying how long it waited. Any other failure is
 * thrown at once. The wait is real time (it sleeps), not the client's injectable clock: a virtual clock that never
 * moves must not turn it into a spin.
 */
final class RoomWait {
    private static final Logger LOG = LoggerFactory.getLogger(RoomWait.class);
    private static final long FIRST_BACKOFF_NANOS = Duration.ofMillis(1).toNanos();
    private static final long MAX_BACKOFF_NANOS = Duration.ofMillis(100).toNanos();

    private final long boundNanos;

    RoomWait(Duration bound) {
        this.boundNanos = bound.toNanos();
    }

    <T> T call(String key, Supplier<T> attempt) {
        long started = System.nanoTime();
        long backoff = FIRST_BACKOFF_NANOS;
        for (int tries = 1; ; tries++) {
            try {
                return attempt.get();
            } catch (StoreException e) {
                if (e.error() != StoreError.NO_AVAILABLE_HANDLE || !e.isTransient()) {
                    throw e;
                }
                long waited = System.nanoTime() - started;
                if (waited + backoff > boundNanos) {
                    throw new StoreException(StoreError.NO_AVAILABLE_HANDLE, "put of '" + key + "' waited "
                            + waited / 1_000_000 + " ms (" + tries + " tries) for room; last answer: " + e.getMessage(), e);
                }
                if (tries == 1) {
                    LOG.debug("put of '{}' waits for room: {}", key, e.getMessage());
                }
                LockSupport.parkNanos(backoff);
                if (Thread.interrupted()) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
                backoff = Math.min(2 * backoff, MAX_BACKOFF_NANOS);
            }
        }
    }
}
