package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * Segment indexes are reused, on the master's state (journaled, virtual time, a table of {@value #INDEXES} indexes in
 * place of 2^19): mounts and unmounts (plain, by a restarted node, by client expiry) far past the table's size are
 * never refused while fewer segments than it are mounted, and a mount at the limit is refused changing nothing; an
 * index a reservation names is not reused until the reservation is released; after reuse no old key's replica names
 * the new segment, an old put in flight ends on its surviving replica, an old parked range never frees the new
 * segment's bytes, and the new segment's memory is handed out whole; each stream replays, from empty and from a
 * snapshot, to the same state.
 */
class SegmentReuseTest {
    private static final int INDEXES = 8;
    private static final long MEM = 64 << 10;
    private static final long SIZE = 4096; // aligned: used bytes are whole objects
    private static final long BASE = 1L << 40;
    /**
     * Leases outlast the tick's reclaim sweep (a tenth of the put release timeout): a parked range outlives a reuse. No
     * repair: a new segment's used bytes are then only what is put there.
     */
    private static final MasterConfig CONFIG = MasterConfig.defaults().withLeaseTtl(Duration.ofMinutes(5))
            .withRepairLimits(0, 0);

    private long now = 1_000_000_000L;
    private final MasterState state = new MasterState(CONFIG, INDEXES);
    private final List<LogEntry> log = new ArrayList<>();

    SegmentReuseTest() {
        state.journal(log::add);
    }

    private void mount(String client, String id, String engine, long size, long incarnation) {
        state.apply(now, new Command.Mount(client, new SegmentSpec(id, engine, "h-" + client, BASE, size), incarnation));
    }

    private void put(String key, int replicas, String preferred) {
        Command.PutTicket t = state.apply(now, new Command.PutStart("writer", key, SIZE,
                ReplicateConfig.replicas(replicas).withPreferredSegments(List.of(preferred)), "h", false, key.hashCode()));
        state.apply(now, new Command.PutEnd("writer", key, t.putId()));
    }

    private List<ReplicaLocation> read(String key) {
        return state.apply(now, new Command.GrantRead(key)).replicas();
    }

    private List<String> segmentsOf(String key) {
        return read(key).stream().map(ReplicaLocation::segmentId).toList();
    }

    private void assertGone(String key) {
        StoreException e = assertThrows(StoreException.class, () -> read(key), key);
        assertEquals(StoreError.OBJECT_NOT_FOUND, e.error(), e.getMessage());
    }

    private int index(String segment) {
        return state.segments.byId(segment).index;
    }

    private long used(String segment) {
        return state.segments().stream().filter(s -> s.id().equals(segment)).mapToLong(MasterState.SegmentView::used).sum();
    }

    /** Moves time on by {@code d}, hearing from {@code alive} first (the others expire at the tick). */
    private void tickAfter(Duration d, String... alive) {
        now += d.toNanos();
        for (String client : alive) {
            state.apply(now, new Command.Heartbeat(client));
        }
        state.apply(now, new Command.Tick());
    }

    private void assertReplaysToTheSameState() {
        List<String> live = StateDump.of(state);
        MasterState replayed = new MasterState(CONFIG, INDEXES);
        log.forEach(replayed::replay);
        assertEquals(live, StateDump.of(replayed), "replayed from empty");
        int half = log.size() / 2;
        MasterState upToHalf = new MasterState(CONFIG, INDEXES);
        log.subList(0, half).forEach(upToHalf::replay);
        MasterState restored = MasterState.restore(CONFIG, upToHalf.snapshot());
        log.subList(half, log.size()).forEach(restored::replay);
        assertEquals(live, StateDump.of(restored), "restored from a snapshot at entry " + half + " and the rest replayed");
        assertEquals(live, StateDump.of(MasterState.restore(CONFIG, state.snapshot())), "snapshot");
    }

    @Test
    void mountsAndUnmountsFarPastTheTableAreNeverRefusedWhileFewerSegmentsThanItAreMounted() {
        mount("keep", "keep", "engine-keep", 16L << 20, 1);
        put("stable", 1, "keep");
        int cycles = 40 * INDEXES;
        for (int i = 0; i < cycles; i++) {
            String id = "churn" + i;
            switch (i % 3) {
                case 0 -> {
                    mount("node", id, "engine-" + id, MEM, 1);
                    put("k" + i, 2, id);
                    state.apply(now, new Command.Unmount("node", id));
                }
                case 1 -> {
                    // a node started again over its memory, under a new id: the old segment is dropped by the mount
                    mount("node" + i, id, "engine-" + id, MEM, 1);
                    put("k" + i, 2, id);
                    mount("node" + i + "-again", id + "-again", "engine-" + id, MEM, 2);
                    assertNull(state.segments.byId(id), "replaced");
                    state.apply(now, new Command.Unmount("node" + i + "-again", id + "-again"));
                }
                default -> {
                    mount("node" + i, id, "engine-" + id, MEM, 1);
                    put("k" + i, 2, id);
                    tickAfter(CONFIG.clientTtl().plusMillis(1), "keep", "writer", "node");
                    assertNull(state.segments.byId(id), "dropped with its expired client");
                }
            }
            assertTrue(state.segments.table().length <= INDEXES, "cycle " + i + ": " + state.segments.table().length + " slots");
        }
        assertEquals(List.of("keep"), segmentsOf("stable"));
        for (int i = 0; i < cycles; i++) {
            assertEquals(List.of("keep"), segmentsOf("k" + i), "k" + i + " kept only its replica on the segment still mounted");
        }

        // every index taken by a mounted segment: the next mount is refused, changing nothing
        for (int i = 1; i < INDEXES; i++) {
            mount("full", "full" + i, "engine-full" + i, MEM, 1);
        }
        List<String> before = StateDump.of(state);
        StoreException refused = assertThrows(StoreException.class, () -> mount("full", "one-more", "engine-more", MEM, 1));
        assertEquals(StoreError.UNAVAILABLE_IN_CURRENT_STATUS, refused.error(), refused.getMessage());
        assertTrue(refused.getMessage().contains("segment one-more") && refused.getMessage().contains("all " + INDEXES
                + " segment indexes") && refused.getMessage().contains(INDEXES + " segments mounted"), refused.getMessage());
        List<String> after = StateDump.of(state);
        assertEquals(before.subList(1, before.size()), after.subList(1, after.size()), "the refusal changed nothing");
        int freed = index("full3");
        state.apply(now, new Command.Unmount("full", "full3"));
        mount("full", "one-more", "engine-more", MEM, 1);
        assertEquals(freed, index("one-more"), "the index an unmount freed");

        // placement walks the mounted segments in one order live and restored: one that took a freed lower index
        // is walked where a restore (which reads the table in index order) puts it
        MasterState restored = MasterState.restore(CONFIG, state.snapshot());
        for (int i = 0; i < 32; i++) {
            Command.PutStart p = new Command.PutStart("writer", "spread" + i, SIZE, ReplicateConfig.replicas(1), "h", false, i);
            assertEquals(state.apply(now, p).replicas(), restored.apply(now, p).replicas(), "spread" + i);
        }
        assertReplaysToTheSameState();
    }

    @Test
    void anIndexIsReusedOnlyOnceNothingNamesItAndNoOldReferenceReachesTheNewSegment() {
        mount("keep", "keep", "engine-keep", 1L << 20, 1);
        mount("old", "old", "engine-old", MEM, 1);
        put("both", 2, "old");
        put("only-old", 1, "old");
        Command.PutTicket writing = state.apply(now, new Command.PutStart("writer", "writing", SIZE,
                ReplicateConfig.replicas(2).withPreferredSegments(List.of("old")), "h", false, 5));
        put("leased", 2, "old");
        assertEquals(List.of("old", "keep"), segmentsOf("leased"));
        state.apply(now, new Command.Remove("leased", true)); // its ranges parked until the lease ends
        Command.CommitResult reserved = state.apply(now, new Command.Commit("batcher", List.of(), List.of(),
                new Command.Reserve(4 * SIZE, 2, "h"), 8));
        Map<String, Command.Grant> grants = new TreeMap<>();
        reserved.granted().forEach(g -> grants.put(g.range().segmentId(), g));
        assertEquals(List.of("keep", "old"), List.copyOf(grants.keySet()));
        assertTrue(state.parking.parked().stream().anyMatch(p -> ObjectRecord.segment(p.replica()) == index("old")));

        int oldIndex = index("old");
        state.apply(now, new Command.Unmount("old", "old"));
        assertEquals(1, state.segments.retiredCount(), "unmounted, its index named by batcher's reservation");
        mount("other", "other", "engine-other", MEM, 1);
        assertNotEquals(oldIndex, index("other"), "not the index a reservation still names");
        StoreException commit = state.apply(now, new Command.Commit("batcher", List.of(new Command.CommitItem("late",
                SIZE, new long[] {grants.get("old").id()}, new long[] {grants.get("old").range().address()})), List.of(),
                null, 9)).failures()[0];
        assertEquals(StoreError.SEGMENT_NOT_FOUND, commit.error(), commit.getMessage());
        assertTrue(commit.getMessage().contains("segment old"), commit.getMessage());

        // the reservation goes with its silent client (its rest on keep parked, none parked on the unmounted old); the
        // tick's sweep then finds nothing naming the old index
        tickAfter(CONFIG.putReleaseTimeout().dividedBy(10), "keep", "other", "writer");
        assertEquals(0, state.segments.retiredCount());
        mount("new", "new", "engine-new", MEM, 1);
        assertEquals(oldIndex, index("new"), "the old index, reused");

        assertEquals(List.of("keep"), segmentsOf("both"));
        assertGone("only-old");
        state.apply(now, new Command.PutEnd("writer", "writing", writing.putId()));
        assertEquals(List.of("keep"), segmentsOf("writing"), "the put in flight ended on the replica that is left");
        assertEquals(0, used("new"), "nothing of the old segment counted in the new one");
        assertTrue(CONFIG.leaseTtl().compareTo(CONFIG.putReleaseTimeout().dividedBy(10)) > 0, "leases outlast the sweep");
        tickAfter(CONFIG.leaseTtl(), "keep", "other", "writer", "new");
        assertTrue(state.parking.parked().stream().noneMatch(p -> ObjectRecord.segment(p.replica()) == oldIndex));
        assertEquals(0, used("new"), "the old parked ranges freed nothing of the new segment");
        for (int i = 0; i < MEM / SIZE; i++) {
            put("new" + i, 1, "new");
            List<ReplicaLocation> r = read("new" + i);
            assertEquals(List.of("new"), r.stream().map(ReplicaLocation::segmentId).toList());
            assertTrue(r.get(0).address() >= BASE && r.get(0).address() + SIZE <= BASE + MEM, r.toString());
        }
        assertEquals(MEM, used("new"), "the new memory handed out whole, every byte once");
        assertEquals(List.of("keep"), segmentsOf("both"));
        assertEquals(List.of("keep"), segmentsOf("writing"));
        assertReplaysToTheSameState();
    }
}
