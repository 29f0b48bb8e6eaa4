package org.tent4j.runtime.schedule;

import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.concurrent.Executors;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.tent4j.testkit.ManualClock;

class SlicePoolTest {
    private static final long Q = SlicePool.QUARANTINE_NANOS;

    @Test
    void aSliceComesBackOnlyAfterItsQuarantine() {
        SlicePool pool = new SlicePool(16, new ManualClock(), Q);
        RuntimeSlice s = pool.take(0);
        pool.give(s, 10);
        assertNotSame(s, pool.take(10 + Q - 1), "handed out again inside its quarantine");
        assertSame(s, pool.take(10 + Q));
    }

    @Test
    void aSliceGoesBackToTheStripeOfTheThreadThatTookItWhicheverThreadGivesItBack() throws Exception {
        SlicePool pool = new SlicePool(16, new ManualClock(), Q);
        ExecutorService a = Executors.newSingleThreadExecutor();
        int stripeA = a.submit(() -> SlicePool.stripeOf(Thread.currentThread())).get(10, TimeUnit.SECONDS);
        ExecutorService b = Executors.newSingleThreadExecutor();
        while (b.submit(() -> SlicePool.stripeOf(Thread.currentThread())).get(10, TimeUnit.SECONDS) == stripeA) {
            b.shutdown(); // a thread on a's stripe: the next thread id is on another
            b = Executors.newSingleThreadExecutor();
        }
        try {
            RuntimeSlice taken = a.submit(() -> pool.take(0)).get(10, TimeUnit.SECONDS);
            b.submit(() -> pool.give(taken, 0)).get(10, TimeUnit.SECONDS); // settled on another thread (an I/O loop)
            RuntimeSlice onB = b.submit(() -> pool.take(Q)).get(10, TimeUnit.SECONDS);
            assertNotSame(taken, onB, "the settling thread's stripe received the slice");
            assertSame(taken, a.submit(() -> pool.take(Q)).get(10, TimeUnit.SECONDS));
        } finally {
            a.shutdownNow();
            b.shutdownNow();
        }
    }

    @Test
    void aFullStripeDropsWhatComesBack() {
        SlicePool pool = new SlicePool(2, new ManualClock(), Q);
        RuntimeSlice[] s = {pool.take(0), pool.take(0), pool.take(0)};
        for (RuntimeSlice x : s) {
            pool.give(x, 0);
        }
        assertSame(s[0], pool.take(Q));
        assertSame(s[1], pool.take(Q));
        assertNotSame(s[2], pool.take(Q), "a stripe kept more than its bound");
    }
}
