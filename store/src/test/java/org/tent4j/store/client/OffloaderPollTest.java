package org.tent4j.store.client;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class OffloaderPollTest {
    @Test
    void pollsFollowEachOtherWhileTheyFindTasksAndBackOffToTheIntervalWhenIdle() {
        long interval = 100;
        assertEquals(Offloader.BUSY_POLL_MILLIS, Offloader.nextDelay(true, interval, interval), "work found after idling");
        long d = Offloader.BUSY_POLL_MILLIS;
        int idlePolls = 0;
        while (d < interval) {
            long next = Offloader.nextDelay(false, d, interval);
            assertEquals(Math.min(interval, d * 2), next);
            d = next;
            idlePolls++;
        }
        assertEquals(6, idlePolls, "2 ms doubles to the 100 ms interval in six idle polls");
        assertEquals(interval, Offloader.nextDelay(false, interval, interval), "idle stays at the interval");
        assertEquals(1, Offloader.nextDelay(true, interval, 1), "an interval under the busy delay is kept");
    }
}
