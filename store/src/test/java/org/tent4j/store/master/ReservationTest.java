package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.tent4j.store.ManualClock;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command.CommitItem;
import org.tent4j.store.master.Command.CommitResult;
import org.tent4j.store.master.Command.Grant;
import org.tent4j.store.master.Command.Reserve;

/** Space reserved ahead of keys and batch puts committed into it in one call (virtual time). */
class ReservationTest {
    private static final long BASE = 1L << 32;
    private final ManualClock clock = new ManualClock();
    private final StoreMaster master = new StoreMaster(MasterConfig.defaults(), clock);

    private void mount(String client, String id, long size) {
        master.mount(client, new SegmentSpec(id, "engine-" + id, "host-" + client, BASE, size), 1L);
    }

    private List<Grant> reserve(String client, long bytes, int replicas) {
        return master.commit(client, List.of(), List.of(), new Reserve(bytes, replicas, "h")).granted();
    }

    private static CommitItem item(String key, long size, Grant g, long offset) {
        return new CommitItem(key, size, new long[]{g.id()}, new long[]{g.range().address() + offset});
    }

    private StoreException commitOne(String client, CommitItem item) {
        return master.commit(client, List.of(item), List.of(), null).failures()[0];
    }

    private static void assertRefused(StoreException e, StoreError code, String... parts) {
        assertNotNull(e, "refused");
        assertEquals(code, e.error(), e.getMessage());
        for (String p : parts) {
            assertTrue(e.getMessage().contains(p), e.getMessage() + " should mention " + p);
        }
    }

    @Test
    void commitIsReadableAtOnceAndTheReservationIsCountedAsUsed() {
        mount("c1", "s1", 1 << 20);
        Grant g = reserve("w", 64 * 1024, 1).getFirst();
        assertEquals("s1", g.range().segmentId());
        assertEquals(64 * 1024, master.segments().getFirst().used(), "the watermark sees reserved space");
        assertNull(commitOne("w", item("a", 1000, g, 0)));
        assertNull(commitOne("w", item("b", 100, g, 1024)));
        assertTrue(master.exists("a") && master.exists("b"));
        ReplicaLocation at = master.getReplicas("b").replicas().getFirst();
        assertEquals(g.range().address() + 1024, at.address());
        assertEquals(100, at.length());
        // retiring gives back what was not committed; removing the objects gives back the rest
        master.commit("w", List.of(), List.of(g.id()), null);
        assertEquals(1024 + 128, master.segments().getFirst().used());
        assertEquals(0, master.state().reservedBytes());
        clock.advance(Duration.ofSeconds(11));
        master.remove("a", false);
        master.remove("b", false);
        assertEquals(0, master.segments().getFirst().used());
    }

    @Test
    void commitOutsideOverlappingOrFromAnotherClientIsRefusedNamingKeySegmentAndOffset() {
        mount("c1", "s1", 1 << 20);
        Grant g = reserve("w", 8192, 1).getFirst();
        long start = g.range().address() - BASE;
        assertRefused(commitOne("w", item("out", 100, g, 8192)), StoreError.INVALID_WRITE,
                "'out'", "segment s1", "offset " + (start + 8192), "reservation " + g.id());
        assertRefused(commitOne("w", item("straddle", 200, g, 8192 - 64)), StoreError.INVALID_WRITE,
                "'straddle'", "segment s1", "offset " + (start + 8192 - 64));
        assertRefused(commitOne("w", item("unaligned", 10, g, 3)), StoreError.INVALID_WRITE, "'unaligned'", "offset " + (start + 3));
        assertNull(commitOne("w", item("first", 1000, g, 1024)));
        assertRefused(commitOne("w", item("overlap", 100, g, 1024 + 960)), StoreError.INVALID_WRITE,
                "'overlap'", "segment s1", "offset " + (start + 1024 + 960), "committed up to " + (start + 2048));
        assertRefused(commitOne("w", item("below", 100, g, 0)), StoreError.INVALID_WRITE, "'below'", "offset " + start);
        assertRefused(commitOne("thief", item("stolen", 100, g, 4096)), StoreError.ILLEGAL_CLIENT,
                "'stolen'", "segment s1", "offset " + (start + 4096), "belongs to client w");
        assertRefused(commitOne("w", new CommitItem("ghost", 100, new long[]{9999}, new long[]{BASE})), StoreError.INVALID_WRITE,
                "'ghost'", "reservation 9999", "address " + BASE);
        for (String k : List.of("out", "straddle", "unaligned", "overlap", "below", "stolen", "ghost")) {
            assertFalse(master.exists(k), k);
        }
        // the refusals changed nothing: the bytes above the mark still commit, and the gap below them came back
        assertNull(commitOne("w", item("next", 100, g, 4096)));
        assertEquals(1024 + 128 + (8192 - 4224), master.segments().getFirst().used());
        assertEquals(8192 - 4224, master.state().reservedBytes());
    }

    @Test
    void keyRulesAreThoseOfPutStart() {
        mount("c1", "s1", 1 << 20);
        Grant g = reserve("w", 8192, 1).getFirst();
        assertNull(commitOne("w", item("k", 100, g, 0)));
        assertRefused(commitOne("w", item("k", 100, g, 128)), StoreError.OBJECT_ALREADY_EXISTS, "'k'");
        master.putStart("other", "busy", 100, ReplicateConfig.defaults(), "h");
        assertRefused(commitOne("w", item("busy", 100, g, 256)), StoreError.OBJECT_IN_FLIGHT, "'busy'", "client other");
        // an abandoned put (past 30 s) is taken over, as by a put start
        clock.advance(Duration.ofSeconds(31));
        assertNull(commitOne("w", item("busy", 100, g, 384)));
        assertEquals(g.range().address() + 384, master.getReplicas("busy").replicas().getFirst().address());
    }

    @Test
    void replicasCommitIntoReservationsOnDistinctSegments() {
        mount("c1", "s1", 1 << 20);
        mount("c2", "s2", 1 << 20);
        List<Grant> gs = reserve("w", 8192, 2);
        assertEquals(2, gs.size());
        assertFalse(gs.get(0).range().segmentId().equals(gs.get(1).range().segmentId()));
        CommitItem both = new CommitItem("k", 500, new long[]{gs.get(0).id(), gs.get(1).id()},
                new long[]{gs.get(0).range().address(), gs.get(1).range().address()});
        assertNull(commitOne("w", both));
        assertEquals(2, master.getReplicas("k").replicas().size());
        CommitItem twice = new CommitItem("k2", 500, new long[]{gs.get(0).id(), gs.get(0).id()},
                new long[]{gs.get(0).range().address() + 512, gs.get(0).range().address() + 1024});
        assertRefused(commitOne("w", twice), StoreError.INVALID_PARAMS, "'k2'", "two replicas on segment");
        assertTrue(reserve("w", 8192, 3).isEmpty(), "three replicas need three segments: nothing is granted");
        assertEquals(2 * 8192, master.segments().stream().mapToLong(MasterState.SegmentView::used).sum());
    }

    @Test
    void aKilledClientsReservationComesBackAfterThePutReleaseTimeoutAndOldKeysStayIntact() {
        mount("c1", "s1", 64 * 1024);
        Grant g = reserve("dead", 32 * 1024, 1).getFirst();
        assertNull(commitOne("dead", item("old", 1000, g, 0)));
        assertEquals(32 * 1024, master.segments().getFirst().used());
        for (int i = 0; i < 11; i++) {
            clock.advance(Duration.ofSeconds(1));
            master.heartbeat("c1");
            master.tick();
        }
        // the writer went silent: its reservation is gone, but what it had not committed waits out the put release
        // timeout as an abandoned put's space does (a silent client may only be stalled, still writing)
        assertEquals(0, master.state().reservedBytes());
        assertRefused(commitOne("dead", item("late", 100, g, 1024)), StoreError.INVALID_WRITE, "'late'", "reservation " + g.id());
        assertEquals(32 * 1024, master.segments().getFirst().used());
        for (int i = 0; i < 60; i++) {
            clock.advance(Duration.ofSeconds(10));
            master.heartbeat("c1");
            master.tick();
        }
        assertEquals(1024, master.segments().getFirst().used());
        // new objects land in the space it held
        List<Grant> next = reserve("live", 63 * 1024, 1);
        assertEquals(1, next.size());
        assertEquals(g.range().address() + 1024, next.getFirst().range().address());
        assertNull(commitOne("live", item("new", 1000, next.getFirst(), 0)));
        assertEquals(1000, master.getReplicas("old").size());
        assertEquals(g.range().address(), master.getReplicas("old").replicas().getFirst().address());
    }

    @Test
    void anUnusedReservationOfALiveClientIsReleasedAfterThePutReleaseTimeout() {
        mount("c1", "s1", 64 * 1024);
        Grant g = reserve("w", 8192, 1).getFirst();
        for (int i = 0; i < 61; i++) {
            clock.advance(Duration.ofSeconds(10));
            master.heartbeat("c1");
            master.heartbeat("w");
            master.tick();
            if (i < 59) {
                assertEquals(8192, master.state().reservedBytes(), "held at " + (i + 1) * 10 + " s");
            }
        }
        assertEquals(0, master.state().reservedBytes());
        assertEquals(0, master.segments().getFirst().used());
        assertRefused(commitOne("w", item("late", 100, g, 0)), StoreError.INVALID_WRITE, "'late'");
    }

    @Test
    void evictionCountsReservedSpaceAgainstTheWatermark() {
        mount("c1", "s1", 100 * 1024);
        for (int i = 0; i < 80; i++) {
            putPlain("k" + i, 1024);
            clock.advance(Duration.ofMillis(1));
        }
        assertEquals(0, master.tick().evictedObjects(), "80% used: under the watermark");
        assertEquals(1, reserve("w", 12 * 1024, 1).size());
        assertTrue(master.tick().evictedObjects() > 0, "92% used counting the reservation: over the watermark");
        assertTrue(master.segments().getFirst().used() <= 0.90 * 100 * 1024);
        assertEquals(12 * 1024, master.state().reservedBytes(), "eviction never takes reserved space");
    }

    @Test
    void reservationsPerClientAreBounded() {
        mount("c1", "s1", 16 << 20);
        for (int i = 0; i < MasterState.MAX_RESERVATIONS_PER_CLIENT; i++) {
            assertEquals(1, reserve("w", 64, 1).size());
        }
        CommitResult r = master.commit("w", List.of(), List.of(), new Reserve(64, 1, "h"));
        assertTrue(r.granted().isEmpty());
        assertRefused(r.refillFailure(), StoreError.INVALID_PARAMS, "client w holds 64 reservations");
        assertRefused(master.commit("w", List.of(), List.of(), new Reserve(MasterState.MAX_RESERVATION_BYTES + 1, 1, "h"))
                .refillFailure(), StoreError.INVALID_PARAMS, "bytes");
    }

    @Test
    void concurrentCommittersNeverShareAByte() throws Exception {
        for (int s = 0; s < 3; s++) {
            mount("c" + s, "s" + s, 512 * 1024);
        }
        int threads = 4;
        Set<String> failures = Hammer.failures(threads, 3000, t -> {
            String client = "w" + t;
            var held = new Object() {
                List<Grant> gs = List.of();
                long carved;
            };
            return (key, rnd) -> {
                switch (rnd.nextInt(6)) {
                    case 0, 1, 2 -> {
                        long size = 1 + rnd.nextInt(4000);
                        if (held.gs.isEmpty() || held.carved + size > held.gs.getFirst().range().length()) {
                            List<Long> retire = held.gs.stream().map(Grant::id).toList();
                            held.gs = master.commit(client, List.of(), retire, new Reserve(16 * 1024, 1 + rnd.nextInt(3), "h")).granted();
                            held.carved = 0;
                            return;
                        }
                        List<Grant> gs = held.gs;
                        long[] ids = gs.stream().mapToLong(Grant::id).toArray();
                        // now and then a hostile offset: below the mark, or another writer's reservation
                        long back = rnd.nextInt(10) == 0 ? 64 : 0;
                        long at = Math.max(0, held.carved - back);
                        long[] addrs = new long[gs.size()];
                        for (int j = 0; j < gs.size(); j++) {
                            addrs[j] = gs.get(j).range().address() + at;
                        }
                        master.commit(client, List.of(new CommitItem(key, size, ids, addrs)), List.of(), null);
                        held.carved = at + RangeAllocator.aligned(size);
                    }
                    case 3 -> master.putStart(client, key, 1 + rnd.nextInt(4000), ReplicateConfig.defaults(), "h");
                    case 4 -> master.remove(key, rnd.nextBoolean());
                    default -> master.tick();
                }
            };
        });
        assertEquals(Set.of(), failures);
        clock.advance(Duration.ofSeconds(11));
        for (int s = 0; s < 3; s++) {
            master.heartbeat("c" + s);
        }
        for (int t = 0; t < threads; t++) {
            master.heartbeat("w" + t);
        }
        master.tick();
        long total = Hammer.disjointReplicaBytes(master, clock.nanoTime());
        long used = master.segments().stream().mapToLong(MasterState.SegmentView::used).sum();
        assertEquals(total + master.state().reservedBytes(), used, "allocators hold exactly the live replicas and the reservations");
        assertTrue(master.state().stats().objectsCommitted() > 100, "commits happened: " + master.state().stats().objectsCommitted());
    }

    /** A plain two-call put, to fill segments. */
    private void putPlain(String key, long size) {
        Command.PutTicket t = master.putStart("p", key, size, ReplicateConfig.defaults(), "h");
        master.putEnd("p", key, t.putId());
    }
}
