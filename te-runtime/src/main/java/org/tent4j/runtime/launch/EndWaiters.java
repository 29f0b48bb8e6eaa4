package org.tent4j.runtime.launch;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Threads waiting for a group of tasks to end, woken by whichever thread reports the last one: no worker hop, and no
 * {@code notifyAll} while nobody waits. Shared by {@link BatchImpl} and {@link PreparedTransferImpl}, which wait on
 * themselves.
 */
public abstract class EndWaiters {
    /** Threads in {@link #awaitEnd}; guarded by this. */
    private int waiters;

    /** Whether the tasks waited for have all ended; read without the lock. */
    abstract boolean ended();

    /** Waits until {@link #ended()} or {@code timeout} passes, spinning first as {@code spin} allows. */
    final void awaitEnd(Duration timeout, AwaitSpin spin) throws InterruptedException {
        if (ended() || spin.spin(this)) {
            return;
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (this) {
            waiters++;
            try {
                while (!ended()) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        return;
                    }
                    TimeUnit.NANOSECONDS.timedWait(this, left);
                }
            } finally {
                waiters--;
            }
        }
    }

    /** Wakes the waiters; call after {@link #ended()} became true. */
    final void wakeWaiters() {
        synchronized (this) {
            if (waiters > 0) {
                notifyAll();
            }
        }
    }
}
