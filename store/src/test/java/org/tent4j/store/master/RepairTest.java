package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.master.Command.OffloadResult;
import org.tent4j.store.master.Command.OffloadTask;

/**
 * Replica repair at the master, in virtual time: a node's death leaves its objects under-replicated (counted); ticks
 * hand repairs to the surviving nodes within the in-flight limits; only a node's report adds the replica; a failed,
 * expired or cancelled repair gives its range back; and the whole stream replays (from empty, and from a snapshot
 * taken with repairs in flight) to the same state.
 */
class RepairTest {
    private static final long MEM = 1 << 20;
    private static final long SIZE = 4096; // aligned: used bytes are whole objects
    private static final int PER_NODE = 2;
    private static final int IN_FLIGHT = 3;
    private static final MasterConfig CONFIG = MasterConfig.defaults().withRepairLimits(IN_FLIGHT, PER_NODE);

    private long now = 1_000_000_000L;
    private final MasterState state = new MasterState(CONFIG);
    private final List<LogEntry> log = new ArrayList<>();
    private byte[] midSnapshot;
    private long midIndex;

    RepairTest() {
        state.journal(log::add);
    }

    private void mountNodes(String... nodes) {
        for (String n : nodes) {
            state.apply(now, new Command.Mount(n, new SegmentSpec(n + "-mem", n, "h-" + n, 1L << 40, MEM), 1L));
        }
    }

    private void put(String key, int replicas) {
        Command.PutTicket t = state.apply(now, new Command.PutStart("writer", key, SIZE, ReplicateConfig.replicas(replicas),
                "h", false, key.hashCode()));
        state.apply(now, new Command.PutEnd("writer", key, t.putId()));
    }

    /** The node silent past the client TTL, every other one heard: the next tick drops it. */
    private void kill(String dead, String... alive) {
        now += CONFIG.clientTtl().toNanos() + 1;
        for (String a : alive) {
            state.apply(now, new Command.Heartbeat(a));
        }
        state.apply(now, new Command.Tick());
        assertTrue(state.segments.byId(dead + "-mem") == null || !state.segments.byId(dead + "-mem").mounted(),
                dead + " expired");
    }

    private List<ReplicaLocation> replicas(String key) {
        return state.describe(now, key).replicas();
    }

    private int under() {
        return state.stats().repair().underReplicated();
    }

    private long used(String segment) {
        return state.segments().stream().filter(s -> s.id().equals(segment)).mapToLong(MasterState.SegmentView::used).sum();
    }

    @Test
    void aDeadNodesObjectsGetTheirReplicaBackOnlyOnTheSurvivorsReports() {
        mountNodes("a", "b", "c");
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 24; i++) {
            keys.add("k" + i);
            put("k" + i, 2);
        }
        List<String> lost = keys.stream().filter(k -> replicas(k).stream().anyMatch(r -> r.segmentId().equals("c-mem"))).toList();
        assertTrue(lost.size() > IN_FLIGHT, "placement put more than " + IN_FLIGHT + " objects on c: " + lost);
        assertEquals(0, under());

        kill("c", "a", "b", "writer");
        put("single", 1);
        assertEquals(lost.size(), under(), "every object that lost its replica on c counts, a one-replica put does not");
        assertEquals(IN_FLIGHT, state.stats().repair().inFlight(), "the tick started as many repairs as the limit allows");
        assertTrue(state.offloads.repairsInFlight("a") <= PER_NODE && state.offloads.repairsInFlight("b") <= PER_NODE);

        // only a report adds a replica: a task handed out and not yet reported changes nothing readable
        Map<String, List<OffloadTask>> taken = new HashMap<>();
        taken.put("a", state.apply(now, new Command.TakeOffloads("a", 100)));
        taken.put("b", state.apply(now, new Command.TakeOffloads("b", 100)));
        assertEquals(IN_FLIGHT, taken.get("a").size() + taken.get("b").size());
        for (Map.Entry<String, List<OffloadTask>> e : taken.entrySet()) {
            for (OffloadTask t : e.getValue()) {
                assertTrue(t.repair() && !t.promote(), "a repair task: " + t);
                assertEquals(e.getKey() + "-mem", t.target().segmentId(), "the taker owns the target: " + t);
                assertNotEquals(t.target().segmentId(), t.source().segmentId());
                assertEquals(List.of(t.source()), replicas(t.key()), "the source is the object's live replica");
            }
        }

        // one fails on its node: its range goes back at once and the object stays counted
        OffloadTask failing = taken.get("a").isEmpty() ? taken.get("b").get(0) : taken.get("a").get(0);
        String failer = failing.target().segmentId().substring(0, 1);
        long before = used(failing.target().segmentId());
        state.apply(now, new Command.OffloadDone(failer, List.of(new OffloadResult(failing.taskId(), false, 0, "engine said no"))));
        assertEquals(before - SIZE, used(failing.target().segmentId()), "the failed repair's range is free");
        assertEquals(1, state.stats().repair().failed());
        assertEquals(1, replicas(failing.key()).size());

        // the rest reported done (one of them twice, and one by the wrong node: both ignored)
        for (Map.Entry<String, List<OffloadTask>> e : taken.entrySet()) {
            List<OffloadResult> ok = e.getValue().stream().filter(t -> t != failing)
                    .map(t -> new OffloadResult(t.taskId(), true, 0x1234, null)).toList();
            state.apply(now, new Command.OffloadDone(e.getKey().equals("a") ? "b" : "a", ok));
            state.apply(now, new Command.OffloadDone(e.getKey(), ok));
            state.apply(now, new Command.OffloadDone(e.getKey(), ok));
        }
        assertEquals(IN_FLIGHT - 1, state.stats().repair().completed());
        assertEquals(lost.size() - (IN_FLIGHT - 1), under());

        // ticks go on within the limits until every object is back at two replicas
        for (int round = 0; round < 40 && under() > 0; round++) {
            now += 1_000_000;
            state.apply(now, new Command.Tick());
            assertTrue(state.stats().repair().inFlight() <= IN_FLIGHT);
            assertTrue(state.offloads.repairsInFlight("a") <= PER_NODE && state.offloads.repairsInFlight("b") <= PER_NODE);
            if (round == 2) {
                midSnapshot = state.snapshot(); // with repairs handed out and not yet reported
                midIndex = state.lastApplied();
            }
            for (String n : List.of("a", "b")) {
                List<OffloadResult> ok = state.apply(now, new Command.TakeOffloads(n, 100)).stream()
                        .map(t -> new OffloadResult(t.taskId(), true, 0x1234, null)).toList();
                state.apply(now, new Command.OffloadDone(n, ok));
            }
        }
        assertEquals(0, under(), "repair brought every object back");
        assertEquals(lost.size(), state.stats().repair().completed());
        for (String k : keys) {
            List<ReplicaLocation> rs = replicas(k);
            assertEquals(2, rs.size(), k + ": " + rs);
            Set<String> segs = new HashSet<>();
            rs.forEach(r -> segs.add(r.segmentId()));
            assertEquals(2, segs.size(), k + " on distinct segments: " + rs);
            assertTrue(!segs.contains("c-mem"), k + " not on the dead node: " + rs);
        }
        assertEquals(1, replicas("single").size(), "a one-replica put is never copied");
        assertEquals((2 * keys.size() + 1) * SIZE, used("a-mem") + used("b-mem"), "no range held beyond the replicas");
        assertReplays();
    }

    @Test
    void aRemovalCancelsTheRepairInFlightAndAnExpiredOneIsTriedAgain() {
        mountNodes("a", "b");
        put("gone", 2);
        put("late", 2);
        kill("b", "a", "writer");
        assertEquals(2, under());
        // both repairs are for node a, whose segment holds the surviving replica: a second segment of its own takes them
        state.apply(now, new Command.Mount("a", new SegmentSpec("a-mem2", "a", "h-a", 1L << 41, MEM), 1L));
        now += 1;
        state.apply(now, new Command.Tick());
        assertEquals(2, state.stats().repair().inFlight());
        assertEquals(2 * SIZE, used("a-mem2"), "each repair holds its range");

        state.apply(now, new Command.Remove("gone", true));
        assertEquals(1, state.stats().repair().cancelled());
        assertEquals(1, under(), "a removed object is no longer counted");
        assertNull(state.describe(now, "gone"));

        // the other is never reported: it expires, its range parked until the node can no longer write it
        now += CONFIG.offloadTimeout().toNanos() + 1;
        state.apply(now, new Command.Heartbeat("a"));
        state.apply(now, new Command.Heartbeat("writer"));
        state.apply(now, new Command.Tick());
        MasterState.Repair r = state.stats().repair();
        assertEquals(1, r.expired());
        assertEquals(1, r.inFlight(), "tried again in the same tick");
        assertEquals(1, under());
        List<OffloadTask> again = state.apply(now, new Command.TakeOffloads("a", 10));
        assertEquals(1, again.size());
        assertEquals("late", again.get(0).key());
        state.apply(now, new Command.OffloadDone("a", List.of(new OffloadResult(again.get(0).taskId(), true, 1, null))));
        assertEquals(0, under());
        assertEquals(2, replicas("late").size());
        assertReplays();
    }

    /** The recorded stream replays to the same state from empty, and from the snapshot taken mid-way. */
    private void assertReplays() {
        List<String> expected = StateDump.of(state);
        MasterState replayed = new MasterState(CONFIG);
        for (LogEntry e : log) {
            replayed.replay(e);
        }
        assertEquals(expected, StateDump.of(replayed), "replay from empty");
        if (midSnapshot != null) {
            MasterState restored = MasterState.restore(CONFIG, midSnapshot);
            for (LogEntry e : log) {
                if (e.index() > midIndex) {
                    restored.replay(e);
                }
            }
            assertEquals(expected, StateDump.of(restored), "replay from a snapshot with repairs in flight");
        }
    }
}
