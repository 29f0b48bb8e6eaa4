package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.concurrent.TimeUnit;

import org.apache.ratis.protocol.RaftPeerId;
import org.junit.jupiter.api.Test;

/**
 * When a master that started on an empty data dir asks the leader to step down ({@link CatchUpWatch.Stuck}), on
 * virtual time. The case that once hung {@code DurableMasterTest}: the leader backs off its heartbeats to the empty log
 * past the election timeout, so between them the master goes candidate and knows no leader.
 */
class CatchUpWatchTest {
    private static final long LOOK = TimeUnit.MILLISECONDS.toNanos(200);
    private static final long STUCK = TimeUnit.MILLISECONDS.toNanos(CatchUpWatch.STUCK_MILLIS);
    private static final RaftPeerId M1 = RaftPeerId.valueOf("m1");
    private static final RaftPeerId M2 = RaftPeerId.valueOf("m2");
    private static final RaftPeerId M3 = RaftPeerId.valueOf("m3");

    @Test
    void timeStuckCountsAcrossLooksThatKnowNoLeaderAndTheAskGoesToTheLastLeader() {
        CatchUpWatch.Stuck stuck = new CatchUpWatch.Stuck();
        long now = 0;
        RaftPeerId asked = null;
        // the leader is known at one look in four: a heartbeat, then an election timeout as candidate
        for (int look = 0; asked == null; look++) {
            assertTrue(now <= STUCK + 4 * LOOK, "no ask within " + now / 1_000_000 + " ms");
            asked = stuck.look(now, look % 4 == 0 ? M2 : null);
            now += LOOK;
        }
        assertEquals(M2, asked);
        // counting starts over after an ask
        assertNull(stuck.look(now, null));
        assertNull(stuck.look(now + STUCK - 1, null));
        assertEquals(M2, stuck.look(now + STUCK, null));
    }

    @Test
    void nothingCountsBeforeALeaderIsKnown() {
        CatchUpWatch.Stuck stuck = new CatchUpWatch.Stuck();
        for (long now = 0; now < 10 * STUCK; now += LOOK) {
            assertNull(stuck.look(now, null), "a group being formed is never asked");
        }
        assertNull(stuck.look(10 * STUCK, M1));
        assertNull(stuck.look(11 * STUCK - 1, M1));
        assertEquals(M1, stuck.look(11 * STUCK, M1));
    }

    @Test
    void theAskGoesToTheLeaderKnownLast() {
        CatchUpWatch.Stuck stuck = new CatchUpWatch.Stuck();
        assertNull(stuck.look(0, M1));
        assertNull(stuck.look(LOOK, M3));
        assertEquals(M3, stuck.look(STUCK, null));
    }

    private static void assertTrue(boolean condition, String message) {
        org.junit.jupiter.api.Assertions.assertTrue(condition, message);
    }
}
