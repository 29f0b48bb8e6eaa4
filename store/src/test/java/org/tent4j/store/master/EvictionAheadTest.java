package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.tent4j.store.ManualClock;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.master.Command.CommitItem;
import org.tent4j.store.master.Command.Grant;
import org.tent4j.store.master.Command.Reserve;

/** Eviction ahead of need, on the evictor's thread: puts at capacity never wait for (or run) a pass over every object. */
class EvictionAheadTest {
    private static final long BASE = 1L << 32;
    private static final long SEGMENT = 1 << 20;
    private final ManualClock clock = new ManualClock();
    private final StoreMaster master = new StoreMaster(MasterConfig.defaults(), clock);

    @AfterEach
    void close() {
        master.close();
    }

    private void mount(String id) {
        master.mount("node", new SegmentSpec(id, "engine-" + id, "host", BASE, SEGMENT), 1L);
    }

    private void put(String key, long size, ReplicateConfig cfg) {
        var t = master.putStart("w", key, size, cfg, "h");
        master.putEnd("w", key, t.putId());
        clock.advance(Duration.ofMillis(1));
    }

    private long used() {
        return master.segments().stream().mapToLong(MasterState.SegmentView::used).sum();
    }

    @Test
    void passingTheHighWatermarkAsksForEvictionBeforeAnyAllocationFails() {
        mount("s1");
        AtomicInteger wanted = new AtomicInteger();
        master.state().onEvictionWanted(wanted::incrementAndGet);
        put("hard", 4096, ReplicateConfig.defaults().withHardPin());
        put("soft", 4096, ReplicateConfig.defaults().withSoftPin(null));
        int i = 0;
        while (used() + 4096 <= 0.90 * SEGMENT) {
            put("k" + i++, 4096, ReplicateConfig.defaults());
        }
        master.getReplicas("k0"); // the oldest, but leased
        assertEquals(0, wanted.get(), "at " + used() + " of " + SEGMENT + " bytes nobody asks for eviction");
        put("k" + i++, 4096, ReplicateConfig.defaults());
        assertTrue(wanted.get() > 0, "past the watermark the allocation asks for eviction");
        assertTrue(master.state().overHighWatermark());

        Command.Evicted r = master.apply(new Command.Evict());
        assertTrue(r.objects() > 0 && r.bytes() == r.objects() * 4096, r.toString());
        assertTrue(used() <= 0.86 * SEGMENT, "evicted down an eviction ratio under the mark: " + used());
        assertFalse(master.state().overHighWatermark());
        assertEquals(0, master.state().stats().allocationFailures(), "no allocation failed on the way");
        assertTrue(master.exists("hard") && master.exists("soft") && master.exists("k0"), "pinned and leased objects kept");
        assertFalse(master.exists("k1"), "least recently leased goes first");
        assertTrue(master.exists("k" + (i - 1)));
        assertEquals(0, master.apply(new Command.Evict()).objects(), "under the mark: nothing more goes");
    }

    /**
     * The evictor's round chooses its victims off the ordering point, then takes only those still as they were: an
     * object read, or removed and put again, after the choice stays; one removed is not counted; the rest go, leaving
     * usage under the mark, as a round under the ordering point would. A durable log carries the round: its entry
     * decodes to the same victims.
     */
    @Test
    void aPlannedRoundTakesOnlyTheVictimsStillAsTheyWereWhenChosen() {
        mount("s1");
        int i = 0;
        // far enough past the mark that the removals below leave it over: a round applied under the mark takes nothing
        while (used() <= 0.92 * SEGMENT) {
            put("k" + i++, 4096, ReplicateConfig.defaults());
        }
        Command.EvictVictims round = master.state().planEviction(master.now());
        List<String> chosen = round.memory().keys();
        assertTrue(round.disk().keys().isEmpty(), "no disk tier, no disk victims");
        assertTrue(chosen.containsAll(List.of("k0", "k1", "k2", "k3")) && !chosen.contains("k" + (i - 1)),
                "the least recently leased are chosen, the newest is not: " + chosen);
        Command.Evicted none = new Command.Evicted(0, 0);
        assertEquals(List.of(round), CommandCodec.decode(CommandCodec.encode(new CommandCodec.Entry(1, 2, List.of(round))))
                .commands(), "the round's log entry decodes to it");

        master.getReplicas("k1");
        master.remove("k2", false);
        put("k2", 4096, ReplicateConfig.defaults());
        master.remove("k3", false);
        Command.Evicted r = master.apply(round);
        assertEquals(chosen.size() - 3, r.objects(), r + " of " + chosen.size() + " chosen");
        assertEquals(r.objects() * 4096, r.bytes());
        assertTrue(master.exists("k1") && master.exists("k2"), "read or put again after the choice: kept");
        assertFalse(master.exists("k0") || master.exists("k3"));
        assertTrue(chosen.stream().filter(k -> !List.of("k1", "k2", "k3").contains(k)).noneMatch(master::exists));
        assertFalse(master.state().overHighWatermark(), "under the mark after the round: " + used());
        assertTrue(master.state().planEviction(master.now()).none(), "under the mark: no victims");
        assertEquals(none, master.apply(round), "applied again, the round finds nothing left to take");
    }

    /**
     * A table large enough for the planner to sample a run of shards for its leases: the round still names about its
     * target of the oldest objects (a sample whose bytes were not scaled up to the table would take several times it).
     */
    @Test
    void aPlanOverALargeTableSamplesShardsAndStillTakesTheOldestTarget() {
        int n = 300_000;
        long align = RangeAllocator.ALIGNMENT;
        long capacity = n * align * 100 / 95; // n objects fill it to 95 %
        master.mount("node", new SegmentSpec("big", "engine-big", "host", BASE, capacity), 1L);
        for (int i = 0; i < n; i++) {
            var t = master.putStart("w", "k" + i, align, ReplicateConfig.defaults(), "h");
            master.putEnd("w", "k" + i, t.putId());
            clock.advance(Duration.ofNanos(1000));
        }
        assertTrue(master.state().objectCount() >= Eviction.PLAN_SAMPLE_FROM, "large enough to be sampled");
        List<String> chosen = master.state().planEviction(master.now()).memory().keys();
        // down to an eviction ratio under the mark: 10 % of the capacity, the oldest ~31,580 objects
        long expected = capacity / 10 / align;
        assertTrue(chosen.size() > expected * 8 / 10 && chosen.size() < expected * 5 / 4,
                chosen.size() + " victims, about " + expected + " expected");
        int newest = chosen.stream().mapToInt(k -> Integer.parseInt(k.substring(1))).max().orElseThrow();
        assertTrue(newest < expected * 5 / 4, "only the oldest are chosen, yet k" + newest + " was");
    }

    @Test
    void theEvictorThreadEvictsOnceUsagePassesTheMarkWithoutATick() throws Exception {
        mount("s1");
        CountDownLatch evicted = new CountDownLatch(1);
        // housekeeping's tick never comes within the test: only the evictor can evict
        master.startHousekeeping(TimeUnit.HOURS.toMillis(1), r -> {
            if (r.evictedObjects() > 0) {
                evicted.countDown();
            }
        });
        put("hard", 4096, ReplicateConfig.defaults().withHardPin());
        // exactly as many as pass the watermark (the evictor then brings usage down; more puts would pass it again)
        int need = (int) (0.90 * SEGMENT / 4096);
        for (int i = 0; i < need; i++) {
            put("k" + i, 4096, ReplicateConfig.defaults());
        }
        assertTrue(evicted.await(10, TimeUnit.SECONDS), "the evictor ran");
        assertTrue(used() <= 0.90 * SEGMENT, "back under the watermark: " + used());
        assertEquals(0, master.state().stats().allocationFailures());
        assertTrue(master.exists("hard"));
        assertFalse(master.exists("k0"));
    }

    @Test
    void aFloodWithTheEvictorRunningNeverFailsAndKeepsLeasedAndPinnedObjects() throws Exception {
        mount("s1");
        mount("s2");
        master.startHousekeeping(TimeUnit.HOURS.toMillis(1));
        put("hard", 4096, ReplicateConfig.defaults().withHardPin());
        put("soft", 4096, ReplicateConfig.defaults().withSoftPin(null));
        put("leased", 4096, ReplicateConfig.defaults());
        master.getReplicas("leased"); // 10 s; the flood advances virtual time by 4 s
        // one writer (it alone moves virtual time, so every call's time is current) racing the evictor's rounds
        int n = 4000; // 16 MiB into 2 MiB
        for (int i = 0; i < n; i++) {
            put("flood/" + i, 4096, ReplicateConfig.defaults()); // a put refused for want of room throws here
        }
        MasterState.Stats st = master.state().stats();
        assertEquals(0, st.allocationFailures());
        assertTrue(st.evictedObjects() >= n - 2 * SEGMENT / 4096, "the flood was evicted: " + st.evictedObjects());
        assertTrue(master.exists("hard"), "hard-pinned kept");
        assertTrue(master.exists("soft"), "soft-pinned kept");
        assertTrue(master.exists("leased"), "leased kept");
        assertTrue(master.exists("flood/" + (n - 1)), "the newest kept");
    }

    @Test
    void aReservationRefusedAtCapacityIsServedOnceTheEvictorHasRun() throws Exception {
        mount("s1");
        mount("s2");
        // fill both segments to the last byte with committed objects, 64 KiB reservations at a time
        int n = 0;
        for (int round = 0; ; round++) {
            List<Grant> g = master.commit("c", List.of(), List.of(), new Reserve(64 << 10, 1, "h")).granted();
            if (g.isEmpty()) {
                break;
            }
            Grant grant = g.getFirst();
            List<CommitItem> items = new java.util.ArrayList<>();
            for (int k = 0; k < 16; k++) {
                items.add(new CommitItem("o" + n++, 4096, new long[]{grant.id()}, new long[]{grant.range().address() + k * 4096L}));
            }
            Command.CommitResult r = master.commit("c", items, List.of(grant.id()), null);
            for (var f : r.failures()) {
                assertEquals(null, f);
            }
            clock.advance(Duration.ofMillis(1));
            assertTrue(round < 64, "two 1 MiB segments hold 32 reservations of 64 KiB");
        }
        assertEquals(2 * SEGMENT, used(), "full");
        CountDownLatch evicted = new CountDownLatch(1);
        master.startHousekeeping(TimeUnit.HOURS.toMillis(1), r -> evicted.countDown());
        // the refusal itself wakes the evictor; the client meanwhile takes the two-call path
        assertTrue(master.commit("c", List.of(), List.of(), new Reserve(256 << 10, 2, "h")).granted().isEmpty());
        assertTrue(evicted.await(10, TimeUnit.SECONDS), "the evictor ran");
        assertTrue(used() <= 0.86 * 2 * SEGMENT, "used " + used());
        // the oldest objects were committed together, so their ranges coalesce into runs a reservation fits in (on
        // one segment or both: the oldest reservations' segments were drawn at random)
        List<Grant> g = master.commit("c", List.of(), List.of(), new Reserve(64 << 10, 1, "h")).granted();
        assertEquals(1, g.size(), "a reservation granted at capacity");
        assertFalse(master.exists("o0"));
        assertTrue(master.exists("o" + (n - 1)));
        assertEquals(0, master.state().stats().allocationFailures());
    }
}
