package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.tent4j.store.ManualClock;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command.ClientStatus;
import org.tent4j.store.master.Command.PutTicket;

class MasterStateTest {
    private final ManualClock clock = new ManualClock();
    private StoreMaster master = new StoreMaster(MasterConfig.defaults(), clock);

    private void mount(String client, String id, long size) {
        mount(client, id, "host-" + client, size);
    }

    private void mount(String client, String id, String host, long size) {
        master.mount(client, new SegmentSpec(id, "engine-" + id, host, 1L << 32, size), 1L);
    }

    private PutTicket put(String client, String key, long size, ReplicateConfig cfg) {
        PutTicket t = master.putStart(client, key, size, cfg, "host-" + client);
        master.putEnd(client, key, t.putId());
        return t;
    }

    private static void assertError(StoreError expected, String messagePart, Executable call) {
        StoreException e = assertThrows(StoreException.class, call);
        assertEquals(expected, e.error(), e.getMessage());
        assertTrue(e.getMessage().contains(messagePart), e.getMessage() + " should mention " + messagePart);
    }

    @Test
    void putIsInvisibleUntilItEndsAndReplicasLandOnDistinctSegments() {
        mount("c1", "s1", 1 << 20);
        mount("c2", "s2", 1 << 20);
        mount("c3", "s3", 1 << 20);
        PutTicket t = master.putStart("w", "k", 1000, ReplicateConfig.replicas(3), "h");
        assertEquals(3, t.replicas().size());
        assertEquals(3, t.replicas().stream().map(ReplicaLocation::segmentId).distinct().count());
        assertFalse(master.exists("k"));
        assertError(StoreError.REPLICA_IS_NOT_READY, "'k'", () -> master.getReplicas("k"));
        master.putEnd("w", "k", t.putId());
        master.putEnd("w", "k", t.putId()); // idempotent
        assertTrue(master.exists("k"));
        assertEquals(1000, master.size("k"));
        assertEquals(t.replicas(), master.getReplicas("k").replicas());
    }

    @Test
    void aBatchAppliesInOrderEachCommandGettingItsOwnResultOrRefusal() {
        mount("c1", "s1", 1 << 20);
        put("c1", "k", 100, ReplicateConfig.defaults());
        long before = master.state().lastApplied();
        String tooLong = "x".repeat(MasterConfig.defaults().maxKeyBytes() + 1);
        // the keys are looked up ahead of the commands: keys the commands refuse must reach them as they are
        List<Object> results = master.applyAll(List.of(new Command.GrantRead(""), new Command.GrantRead(tooLong),
                new Command.GrantRead("missing"), new Command.GrantRead("k"),
                new Command.PutStart("c1", "k", 100, ReplicateConfig.defaults(), "h", false, 7)));
        assertEquals(before + 5, master.state().lastApplied(), "one index per command, refused ones included");
        assertEquals(StoreError.INVALID_KEY, ((StoreException) results.get(0)).error());
        assertEquals(StoreError.INVALID_KEY, ((StoreException) results.get(1)).error());
        assertEquals(StoreError.OBJECT_NOT_FOUND, ((StoreException) results.get(2)).error());
        assertEquals(100, ((Command.ReplicaList) results.get(3)).size());
        assertEquals(StoreError.OBJECT_ALREADY_EXISTS, ((StoreException) results.get(4)).error());
        assertError(StoreError.OBJECT_HAS_LEASE, "'k'", () -> master.remove("k", false)); // the batch's read leased it
    }

    @Test
    void aLookAheadOfReadsNeverWaitsForTheOrderingPointNorRefusesAKey() throws Exception {
        mount("c1", "s1", 1 << 20);
        put("c1", "k", 100, ReplicateConfig.defaults());
        String tooLong = "x".repeat(MasterConfig.defaults().maxKeyBytes() + 1);
        master.state().lookAhead(List.of("", tooLong, "missing", "k")); // keys are the reads' to refuse
        java.util.concurrent.CountDownLatch held = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch lookedAhead = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CompletableFuture<Boolean> heldUntilLookedAhead = java.util.concurrent.CompletableFuture
                .supplyAsync(() -> master.state().inOrder(() -> {
                    held.countDown();
                    try {
                        return lookedAhead.await(30, java.util.concurrent.TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                }), r -> Thread.ofPlatform().start(r));
        assertTrue(held.await(30, java.util.concurrent.TimeUnit.SECONDS));
        // a command is being applied: the look-ahead skips rather than wait for the point
        master.state().lookAhead(List.of("k"));
        lookedAhead.countDown();
        assertTrue(heldUntilLookedAhead.get(), "the look-ahead waited for the ordering point");
    }

    @Test
    void hotKeysRankTheMostReadKeysFirstFromTheirSample() {
        mount("c1", "s1", 1 << 20);
        for (String k : List.of("hot", "warm", "cold")) {
            put("c1", k, 100, ReplicateConfig.defaults());
        }
        // a sample of the reads is counted (a metric, not state): "hot" 6,400 reads, "warm" 1,600, "cold" none
        for (int i = 0; i < 6_400; i++) {
            master.getReplicas("hot");
            if (i % 4 == 0) {
                master.getReplicas("warm");
            }
        }
        List<Map.Entry<String, Long>> hot = master.state().hotKeys(2);
        assertEquals(List.of("hot", "warm"), hot.stream().map(Map.Entry::getKey).toList());
        assertTrue(hot.get(0).getValue() > 1_600 && hot.get(0).getValue() < 25_600, "an estimate of 6,400 reads: " + hot);
    }

    @Test
    void putOfAKeyInFlightReportsThatItIsInFlightNotSuccess() {
        mount("c1", "s1", 1 << 20);
        PutTicket t = master.putStart("a", "k", 100, ReplicateConfig.defaults(), "h");
        assertError(StoreError.OBJECT_IN_FLIGHT, "being written by client a", () -> master.putStart("b", "k", 100, ReplicateConfig.defaults(), "h"));
        master.putEnd("a", "k", t.putId());
        assertError(StoreError.OBJECT_ALREADY_EXISTS, "'k'", () -> master.putStart("b", "k", 100, ReplicateConfig.defaults(), "h"));
    }

    @Test
    void onlyTheWriterMayEndOrRevokeItsPut() {
        mount("c1", "s1", 1 << 20);
        PutTicket t = master.putStart("a", "k", 100, ReplicateConfig.defaults(), "h");
        master.heartbeat("b");
        master.putStart("b", "other", 10, ReplicateConfig.defaults(), "h");
        assertError(StoreError.ILLEGAL_CLIENT, "client b did not start", () -> master.putEnd("b", "k", t.putId()));
        master.putRevoke("a", "k", t.putId());
        assertError(StoreError.OBJECT_NOT_FOUND, "'k'", () -> master.putEnd("a", "k", t.putId()));
        assertEquals(64, master.segments().getFirst().used()); // only "other" left
    }

    @Test
    void readLeaseBlocksRemovalAndExistDoesNotRenewIt() {
        mount("c1", "s1", 1 << 20);
        put("w", "k", 100, ReplicateConfig.defaults());
        master.getReplicas("k");
        assertError(StoreError.OBJECT_HAS_LEASE, "leased to a reader for 10000 ms", () -> master.remove("k", false));
        clock.advance(Duration.ofSeconds(9));
        assertTrue(master.exists("k"));
        clock.advance(Duration.ofMillis(1001));
        master.remove("k", false);
        assertError(StoreError.OBJECT_NOT_FOUND, "'k'", () -> master.remove("k", false));
    }

    @Test
    void forcedRemovalOfALeasedObjectKeepsItsBytesUntilTheLeaseEnds() {
        mount("c1", "s1", 1024);
        put("w", "k", 1024, ReplicateConfig.defaults());
        master.getReplicas("k");
        master.remove("k", true);
        assertFalse(master.exists("k"));
        assertError(StoreError.NO_AVAILABLE_HANDLE, "1024 contiguous free bytes", () -> master.putStart("w", "k2", 1024, ReplicateConfig.defaults(), "h"));
        clock.advance(Duration.ofSeconds(10));
        master.tick();
        put("w", "k2", 1024, ReplicateConfig.defaults());
    }

    @Test
    void upsertKeepsTheOldVersionReadableUntilItEndsAndParksItUntilReadersAreDone() {
        mount("c1", "s1", 4096);
        put("w", "k", 1000, ReplicateConfig.defaults());
        ReplicaLocation old = master.getReplicas("k").replicas().getFirst();
        PutTicket up = master.upsertStart("w", "k", 2000, ReplicateConfig.defaults(), "h");
        assertNotEquals(old.address(), up.replicas().getFirst().address());
        assertEquals(old, master.getReplicas("k").replicas().getFirst());
        assertError(StoreError.OBJECT_IN_FLIGHT, "being written", () -> master.upsertStart("x", "k", 10, ReplicateConfig.defaults(), "h"));
        master.putEnd("w", "k", up.putId());
        assertEquals(up.replicas(), master.getReplicas("k").replicas());
        assertEquals(2000, master.size("k"));
        // the old 1000 bytes stay reserved while the earlier lease lasts
        assertEquals(1024 + 2048, master.segments().getFirst().used());
        clock.advance(Duration.ofSeconds(11));
        master.heartbeat("c1");
        master.tick();
        assertEquals(2048, master.segments().getFirst().used());
    }

    @Test
    void abandonedPutIsTakenOverAfter30sAndItsSpaceReclaimedAfter600s() {
        mount("c1", "s1", 4096);
        PutTicket first = master.putStart("a", "k", 1000, ReplicateConfig.defaults(), "h");
        clock.advance(Duration.ofSeconds(29));
        assertError(StoreError.OBJECT_IN_FLIGHT, "29000 ms ago", () -> master.putStart("b", "k", 1000, ReplicateConfig.defaults(), "h"));
        clock.advance(Duration.ofSeconds(2));
        PutTicket second = master.putStart("b", "k", 1000, ReplicateConfig.defaults(), "h");
        assertNotEquals(first.replicas().getFirst().address(), second.replicas().getFirst().address());
        assertError(StoreError.INVALID_WRITE, "taken over", () -> master.putEnd("a", "k", first.putId()));
        master.putEnd("b", "k", second.putId());
        assertEquals(2048, master.segments().getFirst().used());
        clock.advance(Duration.ofSeconds(570));
        master.heartbeat("c1");
        master.tick();
        assertEquals(1024, master.segments().getFirst().used());

        PutTicket zombie = master.putStart("a", "z", 1000, ReplicateConfig.defaults(), "h");
        clock.advance(Duration.ofSeconds(601));
        master.heartbeat("c1");
        assertEquals(1, master.tick().putsReclaimed());
        assertError(StoreError.OBJECT_NOT_FOUND, "'z'", () -> master.putEnd("a", "z", zombie.putId()));
    }

    @Test
    void silentClientLosesItsSegmentsAfterTheTtlAndIsToldToRemount() {
        mount("c1", "s1", 1 << 20);
        mount("c2", "s2", 1 << 20);
        put("w", "only1", 100, ReplicateConfig.defaults().withPreferredSegments(List.of("s1")));
        put("w", "both", 100, ReplicateConfig.replicas(2));
        for (int i = 0; i < 11; i++) {
            clock.advance(Duration.ofSeconds(1));
            assertEquals(ClientStatus.OK, master.heartbeat("c2"));
            master.heartbeat("w");
            master.tick();
        }
        assertEquals(List.of("s2"), master.segments().stream().map(MasterState.SegmentView::id).toList());
        assertFalse(master.exists("only1"));
        assertEquals(List.of("s2"), master.getReplicas("both").replicas().stream().map(ReplicaLocation::segmentId).toList());
        assertEquals(ClientStatus.NEED_REMOUNT, master.heartbeat("c1"));
        mount("c1", "s1b", 1 << 20);
        assertEquals(ClientStatus.OK, master.heartbeat("c1"));
        assertEquals(2, master.segments().size());
    }

    @Test
    void evictionKeepsUsageUnderTheHighWatermarkAndSparesLeasedAndPinnedObjects() {
        mount("c1", "s1", 100 * 1024);
        put("w", "hard", 1024, ReplicateConfig.defaults().withHardPin());
        put("w", "soft", 1024, ReplicateConfig.defaults().withSoftPin(null));
        for (int i = 0; i < 95; i++) {
            put("w", "k" + i, 1024, ReplicateConfig.defaults());
            clock.advance(Duration.ofMillis(1));
        }
        master.getReplicas("k0"); // the oldest, but leased
        assertEquals(97 * 1024, master.segments().getFirst().used());
        Command.TickReport r = master.tick();
        assertTrue(r.evictedObjects() > 0);
        long used = master.segments().getFirst().used();
        assertTrue(used <= 0.90 * 100 * 1024, "used " + used);
        assertTrue(master.exists("hard") && master.exists("soft") && master.exists("k0"));
        assertFalse(master.exists("k1"), "least recently leased goes first");
        assertTrue(master.exists("k94"));
    }

    @Test
    void failedAllocationEvictsAndSoftPinnedGoLast() {
        mount("c1", "s1", 4 * 1024);
        put("w", "soft", 1024, ReplicateConfig.defaults().withSoftPin(Duration.ofMinutes(1)));
        put("w", "a", 1024, ReplicateConfig.defaults());
        put("w", "b", 1024, ReplicateConfig.defaults().withHardPin());
        put("w", "c", 1024, ReplicateConfig.defaults());
        master.getReplicas("c");
        put("w", "d", 1024, ReplicateConfig.defaults());
        assertFalse(master.exists("a"));
        master.getReplicas("d");
        assertTrue(master.exists("soft"));
        put("w", "e", 1024, ReplicateConfig.defaults()); // only the soft-pinned one is left to take
        assertFalse(master.exists("soft"));
        assertError(StoreError.NO_AVAILABLE_HANDLE, "'f'", () -> master.putStart("w", "f", 2048, ReplicateConfig.defaults(), "h"));
    }

    @Test
    void badInputGetsPreciseErrors() {
        assertError(StoreError.NO_AVAILABLE_HANDLE, "no segment is mounted", () -> master.putStart("w", "k", 10, ReplicateConfig.defaults(), "h"));
        mount("c1", "s1", 1 << 20);
        assertError(StoreError.INVALID_KEY, "key is empty", () -> master.putStart("w", "", 10, ReplicateConfig.defaults(), "h"));
        assertError(StoreError.INVALID_KEY, "longer than the limit of 4096", () -> master.getReplicas("x".repeat(5000)));
        assertError(StoreError.INVALID_PARAMS, "must be > 0: 0", () -> master.putStart("w", "k", 0, ReplicateConfig.defaults(), "h"));
        assertError(StoreError.OBJECT_TOO_LARGE, "larger than the largest mounted segment (1048576 bytes)",
                () -> master.putStart("w", "k", 2 << 20, ReplicateConfig.defaults(), "h"));
        assertError(StoreError.INVALID_PARAMS, "replica count", () -> master.putStart("w", "k", 10, ReplicateConfig.replicas(0), "h"));
        assertError(StoreError.OBJECT_NOT_FOUND, "'nope'", () -> master.getReplicas("nope"));
        assertError(StoreError.INVALID_PARAMS, "bad regex", () -> master.removeByRegex("(", false));
        assertError(StoreError.INVALID_PARAMS, "size must be in", () -> master.mount("c", new SegmentSpec("s9", "e", "h", 0, 1), 1L));
        assertError(StoreError.SEGMENT_ALREADY_EXISTS, "s1", () -> master.mount("other", new SegmentSpec("s1", "e", "h", 0, 4096), 1L));
        assertError(StoreError.ILLEGAL_CLIENT, "belongs to c1", () -> master.unmount("other", "s1"));
    }

    @Test
    void aClientMountsAtMostItsLimitOfSegmentsAndMayMountAgainAfterAnUnmount() {
        for (int i = 0; i < Segments.MAX_SEGMENTS_PER_CLIENT; i++) {
            mount("greedy", "g" + i, 4096);
        }
        assertError(StoreError.INVALID_PARAMS, "already mounts 64 segments, the limit per client; segment g64",
                () -> master.mount("greedy", new SegmentSpec("g64", "e", "h", 0, 4096), 1L));
        assertEquals(Segments.MAX_SEGMENTS_PER_CLIENT, master.state().segments().size(), "the refused one is not mounted");
        mount("other", "o0", 4096); // the limit is per client
        master.unmount("greedy", "g0");
        mount("greedy", "g64", 4096);
    }

    @Test
    void removeByRegexAndRemoveAllSkipLeasedAndInFlight() {
        mount("c1", "s1", 1 << 20);
        for (int i = 0; i < 10; i++) {
            put("w", "a/" + i, 10, ReplicateConfig.defaults());
            put("w", "b/" + i, 10, ReplicateConfig.defaults());
        }
        master.getReplicas("a/3");
        master.putStart("w", "a/inflight", 10, ReplicateConfig.defaults(), "h");
        assertEquals(9, master.removeByRegex("a/.*", false));
        assertTrue(master.exists("a/3"));
        assertEquals(10, master.removeAll(false));
        assertEquals(2, master.state().objectCount());
        assertEquals(1, master.removeAll(true)); // the leased one; the one in flight stays
        assertEquals(1, master.state().objectCount());
    }

    @Test
    void preferredAndLocalHostSegmentsComeFirstAndExcludedNeverServe() {
        mount("c1", "s1", "hostA", 1 << 20);
        mount("c2", "s2", "hostB", 1 << 20);
        mount("c3", "s3", "hostC", 1 << 20);
        for (int i = 0; i < 20; i++) {
            assertEquals("s2", master.putStart("w", "p" + i, 10, ReplicateConfig.defaults().withPreferredSegments(List.of("engine-s2")), "hostA")
                    .replicas().getFirst().segmentId());
            assertEquals("s3", master.putStart("w", "l" + i, 10, ReplicateConfig.defaults().withPreferLocalHost(true), "hostC")
                    .replicas().getFirst().segmentId());
            assertEquals(List.of("s1"), master.putStart("w", "x" + i, 10, ReplicateConfig.replicas(3).withExcludedSegments(List.of("s2", "s3")), "hostA")
                    .replicas().stream().map(ReplicaLocation::segmentId).toList());
        }
    }

    @Test
    void freshlyMountedEmptySegmentDoesNotDrawEveryWrite() {
        master = new StoreMaster(MasterConfig.defaults().withPlacement(Placement.FREE_RATIO_FIRST), clock);
        for (int s = 0; s < 4; s++) {
            mount("c" + s, "s" + s, 1 << 20);
        }
        for (int i = 0; i < 400; i++) {
            put("w", "old" + i, 1024, ReplicateConfig.defaults());
        }
        mount("new", "fresh", 1 << 20);
        int onFresh = 0;
        for (int i = 0; i < 200; i++) {
            if (put("w", "new" + i, 1024, ReplicateConfig.defaults()).replicas().getFirst().segmentId().equals("fresh")) {
                onFresh++;
            }
        }
        // two choices among five: the fresh segment is drawn in ~36% of writes, never all of them
        assertTrue(onFresh > 20 && onFresh < 140, "fresh segment took " + onFresh + " of 200 writes");
    }

    @Test
    void concurrentPutsRemovesAndEvictionsNeverShareAByte() throws Exception {
        // puts given fewer replicas than asked would start repairs whose ranges no node here fills (RepairTest's books)
        master = new StoreMaster(MasterConfig.defaults().withRepairLimits(0, 0), clock);
        for (int s = 0; s < 3; s++) {
            mount("c" + s, "s" + s, 256 * 1024);
        }
        int threads = 4;
        Set<String> failures = Hammer.failures(threads, 3000, id -> (key, rnd) -> {
            switch (rnd.nextInt(5)) {
                case 0, 1 -> {
                    PutTicket tk = master.putStart("w" + id, key, 1 + rnd.nextInt(8000), ReplicateConfig.replicas(1 + rnd.nextInt(3)), "h");
                    if (rnd.nextBoolean()) {
                        master.putEnd("w" + id, key, tk.putId());
                    } else {
                        master.putRevoke("w" + id, key, tk.putId());
                    }
                }
                case 2 -> master.remove(key, rnd.nextBoolean());
                case 3 -> master.getReplicas(key);
                default -> master.tick();
            }
        });
        assertEquals(Set.of(), failures);
        // forced removals parked leased ranges; let those leases end so the books can balance
        clock.advance(Duration.ofSeconds(11));
        for (int s = 0; s < 3; s++) {
            master.heartbeat("c" + s);
        }
        master.tick();
        // every live replica range is disjoint from every other, and the allocators agree on bytes in use
        long total = Hammer.disjointReplicaBytes(master, clock.nanoTime());
        long used = master.segments().stream().mapToLong(MasterState.SegmentView::used).sum();
        assertEquals(total, used, "allocators hold exactly the live replicas' bytes");
        assertNull(master.state().describe(clock.nanoTime(), "never"));
        assertEquals(new HashSet<>(master.state().keys(Integer.MAX_VALUE)).size(), master.state().objectCount());
    }
}
