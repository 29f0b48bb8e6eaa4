package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * Node incarnations at mount, on the master's state (journaled, virtual time): a remount in the same incarnation keeps
 * every object; a node started again (a new incarnation) mounting the same segment, or memory of the same engine
 * segment overlapping the old one under a new id, has every replica on the old segment dropped (objects left with none
 * gone, the others counted under-replicated), its memory handed out afresh and filled by new puts; ranges a live writer
 * may still write at their old addresses (a put in flight, a reservation's uncommitted rest) are kept from new objects
 * for the put release timeout; refusals change nothing; and each stream replays from empty, and from a snapshot, to
 * the same state.
 */
class NodeIncarnationTest {
    private static final long MEM = 256 << 10;
    private static final long SIZE = 4096; // aligned: used bytes are whole objects
    private static final long BASE = 1L << 40;

    private long now = 1_000_000_000L;
    private final MasterState state = new MasterState(MasterConfig.defaults());
    private final List<LogEntry> log = new ArrayList<>();

    NodeIncarnationTest() {
        state.journal(log::add);
    }

    private void mount(String client, String id, String engine, long base, long incarnation) {
        state.apply(now, new Command.Mount(client, new SegmentSpec(id, engine, "h-" + client, base, MEM), incarnation));
    }

    private void put(String key, int replicas, String preferred) {
        Command.PutTicket t = state.apply(now, new Command.PutStart("writer", key, SIZE,
                ReplicateConfig.replicas(replicas).withPreferredSegments(List.of(preferred)), "h", false, key.hashCode()));
        state.apply(now, new Command.PutEnd("writer", key, t.putId()));
    }

    private List<ReplicaLocation> read(String key) {
        return state.apply(now, new Command.GrantRead(key)).replicas();
    }

    private void assertGone(String key) {
        StoreException e = assertThrows(StoreException.class, () -> read(key), key);
        assertEquals(StoreError.OBJECT_NOT_FOUND, e.error(), e.getMessage());
    }

    private long used(String segment) {
        return state.segments().stream().filter(s -> s.id().equals(segment)).mapToLong(MasterState.SegmentView::used).sum();
    }

    /** Fills {@code segment} with one-replica objects; each lands there, inside its memory. */
    private void fill(String prefix, String segment, SegmentSpec spec) {
        for (int i = 0; i < MEM / SIZE; i++) {
            put(prefix + i, 1, segment);
            List<ReplicaLocation> r = read(prefix + i);
            assertEquals(1, r.size());
            assertEquals(segment, r.get(0).segmentId(), prefix + i);
            assertTrue(r.get(0).address() >= spec.base() && r.get(0).address() + SIZE <= spec.base() + MEM, r.toString());
        }
        assertEquals(MEM, used(segment), "the new memory is filled, every byte handed out once");
    }

    private void assertReplaysToTheSameState() {
        List<String> live = StateDump.of(state);
        MasterState replayed = new MasterState(MasterConfig.defaults());
        log.forEach(replayed::replay);
        assertEquals(live, StateDump.of(replayed), "replayed from empty");
        int half = log.size() / 2;
        MasterState upToHalf = new MasterState(MasterConfig.defaults());
        log.subList(0, half).forEach(upToHalf::replay);
        MasterState restored = MasterState.restore(MasterConfig.defaults(), upToHalf.snapshot());
        log.subList(half, log.size()).forEach(restored::replay);
        assertEquals(live, StateDump.of(restored), "restored from a snapshot at entry " + half + " and the rest replayed");
        assertEquals(live, StateDump.of(MasterState.restore(MasterConfig.defaults(), state.snapshot())), "snapshot");
    }

    @Test
    void aRemountKeepsEveryObjectAndARestartDropsTheOldSegmentsReplicasAndReusesItsMemory() {
        mount("a", "a-mem", "engine-a", BASE, 11);
        mount("b", "b-mem", "engine-b", BASE, 22);
        for (int i = 0; i < 8; i++) {
            put("both" + i, 2, "a-mem");
            put("only-a" + i, 1, "a-mem");
            put("only-b" + i, 1, "b-mem");
        }
        assertEquals(16 * SIZE, used("a-mem"));

        // the same node mounting its segment again (a lost answer, a master that forgot it): nothing changes
        List<String> before = StateDump.of(state);
        mount("a", "a-mem", "engine-a", BASE, 11);
        assertEquals(before.subList(1, before.size()), StateDump.of(state).subList(1, before.size()), "a remount changes nothing");
        for (int i = 0; i < 8; i++) {
            assertEquals(2, read("both" + i).size());
            assertEquals("a-mem", read("only-a" + i).get(0).segmentId());
        }

        // node a started again: a new client, a new incarnation, the same segment (its memory elsewhere now)
        SegmentSpec fresh = new SegmentSpec("a-mem", "engine-a", "h-a2", BASE + (8L << 20), MEM);
        int oldIndex = state.segments.byId("a-mem").index;
        state.apply(now, new Command.Mount("a2", fresh, 33));
        MountedSegment replaced = state.segments.byId("a-mem");
        // the drop left nothing naming the old index (its objects' replicas there are gone), so the new mount takes
        // it: the reads below show no old replica names the new memory through it
        assertEquals(oldIndex, replaced.index, "the old index, free again");
        assertEquals(33, replaced.incarnation);
        assertEquals("a2", replaced.owner);
        assertEquals(0, used("a-mem"), "a fresh allocator: nothing of the old node's is counted in the new memory");
        assertEquals(1, state.stats().segmentsReplaced());
        assertTrue(state.clients.get("a").segments.isEmpty(), "the old client keeps no segment");
        for (int i = 0; i < 8; i++) {
            assertGone("only-a" + i);
            List<ReplicaLocation> left = read("both" + i);
            assertEquals(1, left.size(), "both" + i + ": " + left);
            assertEquals("b-mem", left.get(0).segmentId());
            assertEquals("b-mem", read("only-b" + i).get(0).segmentId());
        }
        assertEquals(8, state.stats().repair().underReplicated(), "the objects that kept a replica on b count as under-replicated");
        assertEquals(24 * SIZE - 8 * SIZE, state.stats().objectBytes(), "the objects left: 8 on both, 8 on b");

        fill("new", "a-mem", fresh);
        for (int i = 0; i < 8; i++) {
            assertGone("only-a" + i);
        }
        assertReplaysToTheSameState();
    }

    @Test
    void aRestartedNodeUnderANewSegmentIdDropsTheOldSegmentItsMemoryOverlaps() {
        mount("a", "a-1", "engine-a", BASE, 11);
        mount("b", "b-1", "engine-b", BASE, 22); // another engine's memory at the same addresses: not the same memory
        for (int i = 0; i < 16; i++) {
            put("old" + i, 1, "a-1");
        }
        SegmentSpec fresh = new SegmentSpec("a-2", "engine-a", "h-a2", BASE + MEM / 2, MEM);
        state.apply(now, new Command.Mount("a2", fresh, 33));
        assertEquals(null, state.segments.byId("a-1"), "the old segment, whose memory the new one overlaps, is dropped");
        assertEquals(1, state.stats().segmentsReplaced());
        for (int i = 0; i < 16; i++) {
            assertGone("old" + i);
        }
        assertEquals(MEM, state.segments().stream().filter(s -> s.id().equals("b-1")).findFirst().orElseThrow().capacity(),
                "b-1 untouched");

        // refused, changing nothing: memory overlapping a segment of the same incarnation (one memory mounted twice),
        // the id of a segment on another engine segment, the same id in the same incarnation with another spec
        List<String> before = StateDump.of(state);
        StoreException twice = assertThrows(StoreException.class,
                () -> state.apply(now, new Command.Mount("a2", new SegmentSpec("a-3", "engine-a", "h-a2", BASE + MEM, MEM), 33)));
        assertEquals(StoreError.SEGMENT_ALREADY_EXISTS, twice.error());
        assertTrue(twice.getMessage().contains("overlaps segment a-2") && twice.getMessage().contains("a-3"), twice.getMessage());
        StoreException elsewhere = assertThrows(StoreException.class,
                () -> state.apply(now, new Command.Mount("c", new SegmentSpec("a-2", "engine-c", "h-c", BASE, MEM), 44)));
        assertEquals(StoreError.SEGMENT_ALREADY_EXISTS, elsewhere.error());
        assertTrue(elsewhere.getMessage().contains("a-2") && elsewhere.getMessage().contains("engine-a"), elsewhere.getMessage());
        StoreException resized = assertThrows(StoreException.class,
                () -> state.apply(now, new Command.Mount("a2", new SegmentSpec("a-2", "engine-a", "h-a2", BASE + MEM / 2, MEM / 2), 33)));
        assertEquals(StoreError.SEGMENT_ALREADY_EXISTS, resized.error());
        assertTrue(resized.getMessage().contains("in this incarnation"), resized.getMessage());
        List<String> after = StateDump.of(state);
        assertEquals(before.subList(1, before.size()), after.subList(1, after.size()), "the refusals changed nothing");

        fill("new", "a-2", fresh);
        assertReplaysToTheSameState();
    }

    @Test
    void rangesALiveWriterMayStillWriteAreKeptFromNewObjectsUntilThePutReleaseTimeout() {
        mount("a", "a-1", "engine-a", BASE, 11);
        put("done", 1, "a-1");
        Command.PutTicket inFlight = state.apply(now, new Command.PutStart("writer", "in-flight", SIZE,
                ReplicateConfig.replicas(1), "h", false, 7));
        Command.CommitResult reserved = state.apply(now, new Command.Commit("batcher", List.of(), List.of(),
                new Command.Reserve(4 * SIZE, 1, "h"), 8));
        Command.Grant grant = reserved.granted().get(0);
        long[] written = {inFlight.replicas().get(0).address(), grant.range().address()};
        long[] lengths = {SIZE, 4 * SIZE};

        // node a started again, its memory at the same addresses under a new id: the writers do not know yet
        SegmentSpec fresh = new SegmentSpec("a-2", "engine-a", "h-a2", BASE, MEM);
        state.apply(now, new Command.Mount("a2", fresh, 33));
        assertGone("done");
        assertEquals(5 * SIZE, used("a-2"), "the put in flight and the reservation's rest are kept from new objects");
        for (int i = 0; i < MEM / SIZE - 5; i++) {
            put("new" + i, 1, "a-2");
            long at = read("new" + i).get(0).address();
            for (int w = 0; w < written.length; w++) {
                assertTrue(at + SIZE <= written[w] || at >= written[w] + lengths[w], "new" + i + " at " + at
                        + " lies where a writer may still write: " + written[w]);
            }
        }
        assertEquals(MEM, used("a-2"));
        StoreException commit = state.apply(now, new Command.Commit("batcher",
                List.of(new Command.CommitItem("late", SIZE, new long[] {grant.id()}, new long[] {written[1]})), List.of(),
                null, 9)).failures()[0];
        assertEquals(StoreError.SEGMENT_NOT_FOUND, commit.error(), commit.getMessage());

        now += MasterConfig.defaults().putReleaseTimeout().toNanos() + 1;
        state.apply(now, new Command.Heartbeat("a2"));
        state.apply(now, new Command.Tick());
        int index = state.segments.byId("a-2").index;
        assertEquals(List.of(), state.parking.parked().stream().filter(p -> ObjectRecord.segment(p.replica()) == index).toList(),
                "released after the put release timeout");
        assertEquals(state.stats().objectBytes(), used("a-2"), "what is used is the objects (the tick evicted some)");
        assertReplaysToTheSameState();
    }
}
