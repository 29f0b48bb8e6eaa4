package org.tent4j.testkit;

import java.time.Duration;

/**
 * Waits for a condition a test can observe but is not told of: a metric of another process, an admin page, a count
 * in a shared state. The condition decides, the limit only bounds a failure; the pause between looks keeps the
 * observed process's cores free. Where the code under test can signal (a latch, a future, a line a child prints),
 * wait on that instead.
 */
public final class Poll {
    private Poll() {
    }

    /** What is looked at: it may read a page or ask another process, and so throw. */
    @FunctionalInterface
    public interface Condition {
        /**
         * Whether the condition holds now.
         *
         * @return {@code true} once it does
         * @throws Exception anything looking at it threw; the poll fails with it attached
         */
        boolean holds() throws Exception;
    }

    /**
     * Returns once {@code condition} holds; throws an AssertionError naming {@code what} if it still does not after
     * {@code limit}, or if looking at it threw (the cause attached).
     *
     * @param what      the condition, named in the failure
     * @param limit     how long to wait in all
     * @param pause     how long to sleep between looks
     * @param condition what is looked at
     * @throws InterruptedException when the waiting thread is interrupted
     */
    public static void until(String what, Duration limit, Duration pause, Condition condition) throws InterruptedException {
        long end = System.nanoTime() + limit.toNanos();
        while (!holds(what, condition)) {
            if (System.nanoTime() - end > 0) {
                throw new AssertionError("timed out after " + limit.toMillis() + " ms waiting until " + what);
            }
            Thread.sleep(pause);
        }
    }

    private static boolean holds(String what, Condition condition) throws InterruptedException {
        try {
            return condition.holds();
        } catch (InterruptedException | RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            throw new AssertionError("could not look whether " + what, e);
        }
    }
}
