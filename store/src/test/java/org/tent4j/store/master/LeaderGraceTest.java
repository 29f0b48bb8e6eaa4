package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.store.ManualClock;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * A master that was down longer than the client TTL does not expire the clients its log holds at its first round: a
 * leader's first round in a term counts every client as heard from then (a logged {@link Command.Grace}), and silence
 * is judged from there. Virtual time; the durable log is real (Ratis, a group of one, a new term at each start).
 */
class LeaderGraceTest {
    private static final DurableLog.Settings NO_SNAPSHOTS = new DurableLog.Settings(1_000_000, false, 60_000);

    @TempDir
    Path dir;

    @Test
    void aRestartAfterATtlOfDowntimeExpiresNobodyAtOnceButSilenceStillCounts() throws Exception {
        ManualClock clock = new ManualClock();
        Duration ttl = MasterConfig.defaults().clientTtl();
        SegmentSpec spec = new SegmentSpec("node-mem", "node-engine", "h", 1L << 40, 1 << 20);
        try (StoreMaster first = new StoreMaster(open(), clock)) {
            first.apply(new Command.Mount("node", spec, 7L));
            assertNotNull(first.housekeep());
            assertEquals(List.of("node"), clientIds(first, clock));
        }
        clock.advance(ttl.multipliedBy(6)); // the master is down a minute; the node waits, its memory kept

        try (StoreMaster second = new StoreMaster(open(), clock)) {
            assertEquals(List.of("node"), clientIds(second, clock), "the log gives the client back");
            Command.TickReport r = second.housekeep();
            assertEquals(List.of(), r.clientsExpired(), "expired at the first round after the restart");
            assertEquals(1, second.state().segments().size(), "its segment stays mounted for the remount");

            // the grace is once per term: a node that stays silent a TTL past it is expired as ever
            clock.advance(ttl.plusSeconds(1));
            r = second.housekeep();
            assertEquals(List.of("node"), r.clientsExpired());
            assertTrue(second.state().segments().isEmpty(), second.state().segments().toString());
        }

        // the grace is in the log: a replay decides the same (the node, expired in the second term, stays expired)
        try (StoreMaster third = new StoreMaster(open(), clock)) {
            assertEquals(List.of(), clientIds(third, clock));
        }
    }

    /**
     * The next leader's monotonic clock has another origin (another machine, or this one rebooted): a read lease granted
     * just before the stop still holds after the restart and ends a lease TTL of the new clock later, whether that
     * clock reads a day ahead of the last leader's (without going on from the last entry: the lease had ended at once)
     * or a day behind it (without: the state's time stood at the last entry's and the lease never ended).
     */
    @Test
    void aLeaderWhoseClockHasAnotherOriginGoesOnFromTheLastEntrysTime() throws Exception {
        for (long skew : new long[] {Duration.ofDays(1).toNanos(), -Duration.ofDays(1).toNanos()}) {
            ManualClock clock = new ManualClock();
            Path logDir = dir.resolve(skew > 0 ? "ahead" : "behind");
            SegmentSpec spec = new SegmentSpec("node-mem", "node-engine", "h", 1L << 40, 1 << 20);
            try (StoreMaster first = new StoreMaster(open(logDir), clock)) {
                first.apply(new Command.Mount("node", spec, 7L));
                Command.PutTicket t = first.putStart("node", "k", 4096, org.tent4j.store.ReplicateConfig.defaults(), "h");
                first.putEnd("node", "k", t.putId());
                first.getReplicas("k");
            }
            StoreClock other = () -> clock.nanoTime() + skew;
            try (StoreMaster second = new StoreMaster(open(logDir), other)) {
                StoreException leased = assertThrows(StoreException.class, () -> second.remove("k", false),
                        "skew " + skew + ": the lease granted before the restart ended at once");
                assertEquals(StoreError.OBJECT_HAS_LEASE, leased.error());
                clock.advance(MasterConfig.defaults().leaseTtl().plusSeconds(1));
                second.remove("k", false);
                assertFalse(second.exists("k"), "skew " + skew + ": the lease never ended");
            }
        }
    }

    private DurableLog open() throws Exception {
        return open(dir);
    }

    private static DurableLog open(Path dir) throws Exception {
        DurableLog log = DurableLog.open(MasterConfig.defaults(), dir, "m1", List.of(), NO_SNAPSHOTS);
        log.leaderReady().get();
        return log;
    }

    private static List<String> clientIds(StoreMaster m, ManualClock clock) {
        return m.state().clients(clock.nanoTime()).stream().map(MasterState.ClientView::id).toList();
    }
}
