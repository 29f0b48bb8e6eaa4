package org.tent4j.runtime.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;

import org.junit.jupiter.api.Test;

import org.tent4j.spi.TimeSource;

class AwaitSpinTest {
    /** One microsecond passes at every reading: a spin's length in looks is then exact. */
    private static final class Ticking implements TimeSource {
        private long nanos;

        @Override
        public long nanoTime() {
            return nanos += 1_000;
        }

        @Override
        public Instant instant() {
            return Instant.ofEpochSecond(0, nanos);
        }
    }

    /** Ends at the {@code endsAt}-th look (never if negative), counting the looks. */
    private static final class Waiters extends EndWaiters {
        final int endsAt;
        int looks;

        Waiters(int endsAt) {
            this.endsAt = endsAt;
        }

        @Override
        boolean ended() {
            return ++looks == endsAt || (endsAt >= 0 && looks > endsAt);
        }
    }

    @Test
    void aSpinThatSeesTheEndSavesTheSleep() throws InterruptedException {
        AwaitSpin spin = new AwaitSpin(10_000, new Ticking()); // 10 µs: the end comes at the third look, after 1 µs
        Waiters w = new Waiters(3);
        w.awaitEnd(Duration.ofSeconds(10), spin);
        assertEquals(3, w.looks, "it slept or looked again after the end");
        assertTrue(spin.spinsNext());
    }

    @Test
    void aThreadWhoseSpinsEndTooSoonStopsSpinningAndProbesNowAndThen() {
        AwaitSpin spin = new AwaitSpin(10_000, new Ticking()); // 10 µs: a wait that never ends misses after 10 looks
        for (int i = 0; i < AwaitSpin.MISSES; i++) {
            assertTrue(spin.spinsNext());
            Waiters never = new Waiters(-1);
            assertFalse(spin.spin(never));
            assertEquals(10, never.looks, "a miss is the whole budget, one look per microsecond");
        }
        for (int i = 1; i < AwaitSpin.PROBE_EVERY; i++) {
            Waiters never = new Waiters(-1);
            assertFalse(spin.spin(never));
            assertEquals(0, never.looks, "wait " + i + " after " + AwaitSpin.MISSES + " misses still spun");
        }
        assertTrue(spin.spinsNext(), "no probe after " + AwaitSpin.PROBE_EVERY + " waits");
        assertTrue(spin.spin(new Waiters(2)), "the probe did not see an end that came while it spun");
        assertTrue(spin.spinsNext(), "a probe that paid did not bring the spinning back");
    }

    @Test
    void theStreakIsPerThread() throws Exception {
        AwaitSpin spin = new AwaitSpin(10_000, new Ticking());
        for (int i = 0; i < AwaitSpin.MISSES; i++) {
            spin.spin(new Waiters(-1));
        }
        assertFalse(spin.spinsNext());
        boolean[] other = new boolean[1];
        Thread t = new Thread(() -> other[0] = spin.spinsNext());
        t.start();
        t.join();
        assertTrue(other[0], "another thread's misses stopped this one spinning");
    }

    @Test
    void aZeroBudgetNeverSpins() {
        AwaitSpin spin = new AwaitSpin(0, new Ticking());
        Waiters w = new Waiters(-1);
        assertFalse(spin.spin(w));
        assertEquals(0, w.looks);
        assertFalse(spin.spinsNext());
    }
}
