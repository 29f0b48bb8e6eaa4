package org.tent4j.runtime.launch;

import org.tent4j.spi.TimeSource;

/**
 * How long a thread in {@code await} spins for the end before it sleeps ({@code transfer.await_spin}). A caller that
 * posts one request at a time and waits for it would otherwise pay a sleep and a wake-up per round trip, and on an idle
 * machine the wake-up is most of the round trip (the woken thread waits for its CPU to leave a halt). Spinning costs a
 * CPU while it lasts, so it adapts per thread: after {@link #MISSES} spins in a row that ended before the transfer did
 * (a thread waiting for large or many requests), the thread stops spinning and tries once more every {@link #PROBE_EVERY}
 * waits; a spin that sees the end makes it spin again.
 */
public final class AwaitSpin {
    static final int MISSES = 4;
    static final int PROBE_EVERY = 64;

    private final long budgetNanos;
    private final TimeSource clock;
    private final ThreadLocal<Streak> streaks = ThreadLocal.withInitial(Streak::new);

    /**
     * @param clock real time in an engine ({@link TimeSource#SYSTEM}, not the engine's injectable clock: the budget
     *              bounds CPU spent, and a clock that stands still would make a spin endless)
     */
    public AwaitSpin(long budgetNanos, TimeSource clock) {
        this.budgetNanos = budgetNanos;
        this.clock = clock;
    }

    /** Spins while {@code waiters} has not ended, within the budget, if this thread's recent spins paid; returns whether it ended. */
    boolean spin(EndWaiters waiters) {
        if (budgetNanos == 0) {
            return false;
        }
        Streak streak = streaks.get();
        if (streak.misses >= MISSES && ++streak.sinceProbe < PROBE_EVERY) {
            return false;
        }
        streak.sinceProbe = 0;
        long start = clock.nanoTime();
        while (!waiters.ended()) {
            if (clock.nanoTime() - start >= budgetNanos) {
                streak.misses++;
                return false;
            }
            Thread.onSpinWait();
        }
        streak.misses = 0;
        return true;
    }

    /** Whether the current thread would spin at its next wait (tests). */
    boolean spinsNext() {
        Streak streak = streaks.get();
        return budgetNanos > 0 && (streak.misses < MISSES || streak.sinceProbe + 1 >= PROBE_EVERY);
    }

    private static final class Streak {
        int misses;
        int sinceProbe;
    }
}
