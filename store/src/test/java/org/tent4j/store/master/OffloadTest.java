package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.Tier;
import org.tent4j.store.master.Command.OffloadResult;
import org.tent4j.store.master.Command.OffloadTask;

/**
 * The disk tier's protocol at the master, in virtual time: eviction offloads instead of dropping, once per key; the
 * object switches to its disk replica only on the node's report; failures, expiries, removals and unmounts give the
 * disk range back (parked while the node may still write it), and nothing is published half-written.
 */
class OffloadTest {
    private static final long MEM = 64 * 4096;
    private static final long SIZE = 4000;
    private long now = 1_000_000_000L;
    private int nextKey;
    private final MasterState state = new MasterState(MasterConfig.defaults());

    private void mountNode(String node, long diskBytes) {
        state.apply(now, new Command.Mount(node, new SegmentSpec(node + "-mem", node, "h", 1L << 40, MEM), 1L));
        state.apply(now, new Command.Mount(node, new SegmentSpec(node + "-disk", node, "h", 1L << 50, diskBytes,
                Tier.DISK, "/d/" + node), 1L));
    }

    private void put(String key) {
        put(key, SIZE);
    }

    private void put(String key, long size) {
        Command.PutTicket t = state.apply(now, new Command.PutStart("writer", key, size, ReplicateConfig.defaults(), "h", false, key.hashCode()));
        state.apply(now, new Command.PutEnd("writer", key, t.putId()));
        now += 1_000;
    }

    /** Fills memory past the watermark and runs one eviction round; the keys written. */
    private List<String> fillAndEvict() {
        List<String> keys = new java.util.ArrayList<>();
        while (state.segments.allocated() < 0.95 * MEM) {
            String k = String.format(Locale.ROOT, "k%03d", nextKey++);
            put(k);
            keys.add(k);
        }
        state.apply(now, new Command.Evict());
        return keys;
    }

    private long diskUsed() {
        return state.segments().stream().filter(s -> s.tier() == Tier.DISK).mapToLong(MasterState.SegmentView::used).sum();
    }

    /**
     * The evictor plans off the ordering point, so a put may evict for itself between the plan and its entry: the
     * plan, applied after, must not offload a second object for room the put's offload already makes (the race
     * behind a RoomWaitTest that saw two offloads where one was due).
     */
    @Test
    void aPlanOvertakenByAPutsOwnEvictionTakesNothing() {
        mountNode("a", 1 << 20);
        long size = MEM / 4;
        long t0 = now;
        for (int i = 0; state.segments.allocated() + size <= MEM; i++) {
            put("v" + i, size);
            now = t0; // written at one instant, as under a clock that has not ticked: their order is a tie
        }
        Command.EvictVictims plan = state.planEviction(now);
        assertFalse(plan.none(), "a full memory tier plans a round");
        StoreException waiting = assertThrows(StoreException.class, () -> put("big", size));
        assertEquals(StoreError.NO_AVAILABLE_HANDLE, waiting.error(), waiting.getMessage());
        assertEquals(1, state.stats().tiering().offloadsStarted(), "the put offloaded one object for itself");
        long rounds = state.stats().evictionRounds();
        state.apply(now, plan);
        assertEquals(1, state.stats().tiering().offloadsStarted(), "the stale plan offloaded another");
        assertEquals(0, state.stats().evictedObjects(), "nor dropped one");
        assertEquals(rounds, state.stats().evictionRounds(), "a plan that took nothing is no round");
    }

    @Test
    void evictionOffloadsOnceAndSwitchesOnlyOnTheNodesReport() {
        mountNode("a", 1 << 20);
        List<String> keys = fillAndEvict();
        MasterState.Tiering t = state.stats().tiering();
        assertTrue(t.offloadsStarted() > 0, "eviction started offloads: " + t);
        assertEquals(0, state.stats().evictedObjects(), "nothing dropped while the disk has room");
        assertEquals(t.offloadsStarted() * 4096, diskUsed(), "one 4 KiB-aligned disk range per offload");
        // a second round while they are in flight starts none again, and the memory is not freed yet
        long memUsed = state.segments.allocated();
        state.apply(now, new Command.Evict());
        state.apply(now, new Command.Tick());
        assertEquals(t.offloadsStarted(), state.stats().tiering().offloadsStarted(), "no offload started twice");
        assertEquals(memUsed, state.segments.allocated(), "memory is freed only when an offload completes");
        // puts into the full memory wait for the offloads in flight (refused as transient) or evict for themselves,
        // never starting a second offload of one in flight (the oldest, so the first a sample would take)
        for (int i = 0; i < 16; i++) {
            try {
                put("more" + i);
                keys.add("more" + i);
            } catch (StoreException full) {
                assertEquals(StoreError.NO_AVAILABLE_HANDLE, full.error(), full.getMessage());
            }
        }
        assertEquals(0, state.stats().tiering().offloadsDuplicate());
        assertEquals(0, state.stats().evictedObjects(), "nothing dropped");
        t = state.stats().tiering();
        memUsed = state.segments.allocated();
        // another node's poll takes nothing; the owner's takes each task once
        assertTrue(state.apply(now, new Command.TakeOffloads("b", 1000)).isEmpty());
        List<OffloadTask> tasks = state.apply(now, new Command.TakeOffloads("a", 1000));
        assertEquals(t.offloadsStarted(), tasks.size());
        assertTrue(state.apply(now, new Command.TakeOffloads("a", 1000)).isEmpty(), "a task is handed out once");
        Set<String> offloaded = new HashSet<>();
        for (OffloadTask task : tasks) {
            assertTrue(offloaded.add(task.key()), "one task per key: " + task.key());
            assertEquals(Tier.DISK, task.target().tier());
            assertEquals(0, task.target().fileOffset() % 4096, "disk ranges are 4 KiB-aligned");
            // not yet switched: the only replica is still the memory one
            List<ReplicaLocation> before = state.apply(now, new Command.GrantRead(task.key())).replicas();
            assertEquals(List.of(Tier.MEMORY), before.stream().map(ReplicaLocation::tier).toList());
        }
        now += 20_000_000_000L; // past the read leases just granted
        // a report by another client is ignored
        state.apply(now, new Command.OffloadDone("b", List.of(new OffloadResult(tasks.get(0).taskId(), true, 7, null))));
        assertEquals(0, state.stats().tiering().offloadsCompleted());
        List<OffloadResult> ok = tasks.stream().map(x -> new OffloadResult(x.taskId(), true, 0xCAFEBABEL, null)).toList();
        state.apply(now, new Command.OffloadDone("a", ok));
        assertEquals(tasks.size(), state.stats().tiering().offloadsCompleted());
        assertTrue(state.segments.allocated() < memUsed - (tasks.size() - 1) * SIZE, "memory freed on completion");
        for (OffloadTask task : tasks) {
            List<ReplicaLocation> after = state.apply(now, new Command.GrantRead(task.key())).replicas();
            assertEquals(1, after.size());
            assertEquals(Tier.DISK, after.get(0).tier());
            assertEquals(0xCAFEBABEL, after.get(0).crc32c());
            assertEquals("/d/a", after.get(0).file());
        }
        for (String k : keys) {
            assertTrue(state.exists(k), k + " readable from memory or disk");
        }
        // a late repeat of a report changes nothing
        state.apply(now, new Command.OffloadDone("a", ok));
        assertEquals(tasks.size(), state.stats().tiering().offloadsCompleted());
        // removing a disk object gives its disk range back (its lease ended)
        now += 20_000_000_000L;
        long disk = diskUsed();
        state.apply(now, new Command.Remove(tasks.get(0).key(), false));
        assertEquals(disk - 4096, diskUsed());
    }

    @Test
    void aPutFloodIntoMemoryFullOfOffloadsInFlightWaitsForThemAndOffloadsOnlyTheExcess() {
        mountNode("a", 4 << 20);
        long value = 8 << 10; // 32 values fill memory, as the overflow bench's 256 KiB fill 8 MiB
        int capacity = (int) (MEM / value);
        int n = 4 * capacity;
        Map<String, Long> crcs = new HashMap<>();
        long lowest = MEM;
        for (int i = 0; i < n; i++) {
            String key = "flood" + i;
            for (int attempt = 0; ; attempt++) {
                try {
                    put(key, value);
                    break;
                } catch (StoreException full) {
                    assertEquals(StoreError.NO_AVAILABLE_HANDLE, full.error(), full.getMessage());
                    assertTrue(full.isTransient(), "offloads in flight free room by themselves: " + full.getMessage());
                    assertTrue(attempt < 32, key + " never found room: " + full.getMessage());
                    // the client asks again with backoff (1 ms doubling: 8 tries) before the node's next poll (100 ms)
                    // completes the offloads in flight
                    if (attempt % 8 == 7) {
                        completeOffloads(crcs);
                    }
                }
            }
            state.apply(now, new Command.Evict()); // the evictor, woken by puts over the watermark
            if (i >= capacity) {
                lowest = Math.min(lowest, state.segments.allocated() - state.offloads.memoryBytesInFlight());
            }
        }
        completeOffloads(crcs);
        MasterState.Tiering t = state.stats().tiering();
        assertEquals(n, state.objectCount(), "nothing dropped");
        assertEquals(0, t.offloadsDuplicate() + t.offloadsFailed(), t.toString());
        assertEquals(t.offloadsStarted(), t.offloadsCompleted(), t.toString());
        assertTrue(lowest >= MEM / 2, "once full, memory kept as little as " + lowest + " of " + MEM
                + " bytes (less what was being offloaded): " + t);
        assertTrue(state.segments.allocated() >= MEM / 2, "memory holds " + state.segments.allocated() + " of " + MEM
                + " bytes after the flood: " + t);
        assertTrue(t.offloadsStarted() <= n - capacity / 2, t.offloadsStarted() + " offloads for " + n + " puts into "
                + capacity + " values' worth of memory");
        long inMemory = 0;
        for (int i = 0; i < n; i++) {
            String key = "flood" + i;
            List<ReplicaLocation> rs = state.describe(now, key).replicas();
            assertEquals(1, rs.size(), key + ": " + rs);
            if (rs.get(0).onDisk()) {
                assertEquals(crcs.get(key), rs.get(0).crc32c(), key + ": the CRC its node reported");
            } else {
                inMemory += value;
            }
        }
        assertEquals(inMemory, state.segments.allocated(), "memory used = the objects in memory");
        assertEquals(n - inMemory / value, t.offloadsCompleted(), "every value not in memory went to disk once");
    }

    @Test
    void aPutLargerThanAnyObjectWaitsForNeighboursBeingOffloadedRatherThanOffloadOthers() {
        mountNode("a", 1 << 20);
        fillAndEvict(); // offloads the oldest: written first, so neighbours
        int i = 0;
        try {
            while (true) {
                put("fill" + i++);
            }
        } catch (StoreException full) {
            assertEquals(StoreError.NO_AVAILABLE_HANDLE, full.error(), full.getMessage());
        }
        long started = state.stats().tiering().offloadsStarted();
        long memUsed = state.segments.allocated();
        assertTrue(started >= 2, "the round started offloads: " + state.stats().tiering());
        StoreException wait = assertThrows(StoreException.class, () -> put("large", 2 * SIZE));
        assertEquals(StoreError.NO_AVAILABLE_HANDLE, wait.error(), wait.getMessage());
        assertTrue(wait.isTransient(), wait.getMessage());
        assertTrue(wait.getMessage().contains("'large'"), wait.getMessage());
        assertEquals(started, state.stats().tiering().offloadsStarted(), "neighbours being offloaded make its room: "
                + "no other object offloaded");
        assertEquals(memUsed, state.segments.allocated(), "nothing placed, nothing freed");
        assertEquals(0, state.stats().evictedObjects());
        completeOffloads(new HashMap<>());
        put("large", 2 * SIZE);
        assertEquals(started, state.stats().tiering().offloadsStarted());
        assertTrue(state.exists("large"));
    }

    /** The node's poll: takes every waiting offload and reports it written, with a CRC32C per key. */
    private void completeOffloads(Map<String, Long> crcs) {
        List<OffloadTask> tasks = state.apply(now, new Command.TakeOffloads("a", 1000));
        List<OffloadResult> done = new java.util.ArrayList<>();
        for (OffloadTask task : tasks) {
            long crc = Integer.toUnsignedLong(task.key().hashCode());
            crcs.put(task.key(), crc);
            done.add(new OffloadResult(task.taskId(), true, crc, null));
        }
        state.apply(now, new Command.OffloadDone("a", done));
    }

    @Test
    void aFailedOffloadGivesTheRangeBackAndTheNextEvictionDropsTheObject() {
        mountNode("a", 1 << 20);
        fillAndEvict();
        List<OffloadTask> tasks = state.apply(now, new Command.TakeOffloads("a", 1000));
        assertFalse(tasks.isEmpty());
        state.apply(now, new Command.OffloadDone("a", tasks.stream()
                .map(x -> new OffloadResult(x.taskId(), false, 0, "disk full")).toList()));
        assertEquals(tasks.size(), state.stats().tiering().offloadsFailed());
        assertEquals(0, diskUsed(), "failed offloads' ranges back at once (the node stopped writing)");
        for (OffloadTask task : tasks) {
            assertEquals(List.of(Tier.MEMORY), state.describe(now, task.key()).replicas()
                    .stream().map(ReplicaLocation::tier).toList(), "never published: still in memory");
        }
        now += 20_000_000_000L;
        state.apply(now, new Command.Evict());
        assertEquals(0, state.stats().tiering().offloadsDuplicate());
        assertTrue(state.stats().evictedObjects() > 0, "a failed object is dropped by the next round, not offloaded again");
        for (OffloadTask task : tasks) {
            ObjectRecord rec = state.objects.shard(task.key()).map.get(task.key());
            assertTrue(rec == null || (rec.offloadTask == 0 && rec.disk == -1), task.key() + " not offloaded again");
        }
    }

    @Test
    void anExpiredOffloadIsParkedUntilTheNodeCannotWriteAndALateReportIsIgnored() {
        mountNode("a", 1 << 20);
        fillAndEvict();
        List<OffloadTask> tasks = state.apply(now, new Command.TakeOffloads("a", 1000));
        long disk = diskUsed();
        assertTrue(disk > 0);
        long timeout = MasterConfig.defaults().offloadTimeout().toNanos();
        now += timeout + 1;
        state.apply(now, new Command.Heartbeat("a")); // the node lives; only its offloads are late
        state.apply(now, new Command.Tick());
        assertEquals(tasks.size(), state.stats().tiering().offloadsFailed());
        assertEquals(disk, diskUsed(), "expired ranges stay parked: the node may still be writing them");
        state.apply(now, new Command.OffloadDone("a", tasks.stream().map(x -> new OffloadResult(x.taskId(), true, 1, null)).toList()));
        assertEquals(0, state.stats().tiering().offloadsCompleted(), "a report after expiry publishes nothing");
        for (OffloadTask task : tasks) {
            MasterState.KeyView v = state.describe(now, task.key()); // gone (the tick's round dropped it) or in memory
            assertTrue(v == null || v.replicas().stream().noneMatch(ReplicaLocation::onDisk), task.key());
        }
        now += timeout + 1;
        state.apply(now, new Command.Heartbeat("a"));
        state.apply(now, new Command.Tick());
        assertEquals(0, diskUsed(), "released after another timeout");
    }

    @Test
    void removingUpsertingOrUnmountingDuringAnOffloadCancelsIt() {
        mountNode("a", 1 << 20);
        fillAndEvict();
        List<OffloadTask> tasks = state.apply(now, new Command.TakeOffloads("a", 1000));
        assertTrue(tasks.size() >= 2);
        state.apply(now, new Command.Remove(tasks.get(0).key(), false));
        Command.PutTicket up = state.apply(now, new Command.PutStart("writer", tasks.get(1).key(), SIZE,
                ReplicateConfig.defaults(), "h", true, 1));
        state.apply(now, new Command.PutEnd("writer", tasks.get(1).key(), up.putId()));
        assertEquals(2, state.stats().tiering().offloadsCancelled());
        state.apply(now, new Command.OffloadDone("a", List.of(new OffloadResult(tasks.get(0).taskId(), true, 1, null),
                new OffloadResult(tasks.get(1).taskId(), true, 1, null))));
        assertEquals(0, state.stats().tiering().offloadsCompleted(), "cancelled offloads publish nothing");
        assertThrows(StoreException.class, () -> state.apply(now, new Command.GrantRead(tasks.get(0).key())));
        assertFalse(state.apply(now, new Command.GrantRead(tasks.get(1).key())).replicas().get(0).onDisk(),
                "the upserted version is the memory one");
        // unmounting the disk cancels the rest; their objects stay in memory
        state.apply(now, new Command.Unmount("a", "a-disk"));
        assertEquals(tasks.size(), state.stats().tiering().offloadsCancelled());
        for (OffloadTask task : tasks.subList(2, tasks.size())) {
            assertTrue(state.exists(task.key()));
        }
        assertEquals(0, state.stats().tiering().offloadsInFlight());
    }

    @Test
    void anUpsertDuringAnOffloadKeepsTheOldMemoryRangeFromReuseUntilTheTasksDeadline() {
        mountNode("a", 1 << 20);
        fillAndEvict();
        OffloadTask task = state.apply(now, new Command.TakeOffloads("a", 1000)).get(0);
        long deadline = now + task.ttlNanos();
        String key = task.key();
        long old = state.objects.shard(key).map.get(key).replica0;
        MountedSegment mem = state.segments.at(ObjectRecord.segment(old));
        now += 1_000_000_000L; // the node is reading the old version for its offload meanwhile
        Command.PutTicket up = state.apply(now, new Command.PutStart("writer", key, SIZE, ReplicateConfig.defaults(), "h", true, 1));
        state.apply(now, new Command.PutEnd("writer", key, up.putId()));
        assertEquals(1, state.stats().tiering().offloadsCancelled());
        assertTrue(state.objects.shard(key).map.get(key).replica0 != old, "the new version is elsewhere");
        // the object's lease ended long ago: only the task's deadline holds the old range
        assertEquals(List.of(deadline), parkedUntil(old), "parked until the task's deadline");
        state.apply(deadline - 1, new Command.Heartbeat("a")); // its node is alive (an expired one's ranges go with it)
        state.apply(deadline - 1, new Command.Tick());
        assertEquals(List.of(deadline), parkedUntil(old), "still parked a nanosecond before it");
        assertFalse(mem.allocateAt(ObjectRecord.offset(old), SIZE), "not free for another object while the task may run");
        state.apply(deadline - 1, new Command.OffloadDone("a", List.of(new OffloadResult(task.taskId(), true, 1, null))));
        assertEquals(0, state.stats().tiering().offloadsCompleted(), "the cancelled task's report publishes nothing");
        assertFalse(state.apply(deadline - 1, new Command.GrantRead(key)).replicas().get(0).onDisk());
        state.apply(deadline, new Command.Tick());
        assertEquals(List.of(), parkedUntil(old), "released at the deadline");
        assertTrue(mem.allocateAt(ObjectRecord.offset(old), SIZE), "free again once no task can read it");
    }

    private List<Long> parkedUntil(long replica) {
        return state.parking.parked().stream().filter(p -> p.replica() == replica).map(Parking.Parked::releaseAt).toList();
    }

    @Test
    void withoutRoomOnDiskOrWithOffloadOffEvictionDropsAsBefore() {
        MasterState off = new MasterState(MasterConfig.defaults().withOffloadOnEvict(false));
        off.apply(now, new Command.Mount("a", new SegmentSpec("m", "a", "h", 1L << 40, MEM), 1L));
        off.apply(now, new Command.Mount("a", new SegmentSpec("d", "a", "h", 1L << 50, 1 << 20, Tier.DISK, "/d"), 1L));
        for (int i = 0; off.segments.allocated() < 0.95 * MEM; i++) {
            Command.PutTicket t = off.apply(now, new Command.PutStart("w", "k" + i, SIZE, ReplicateConfig.defaults(), "h", false, i));
            off.apply(now, new Command.PutEnd("w", "k" + i, t.putId()));
            now += 1000;
        }
        off.apply(now, new Command.Evict());
        assertEquals(0, off.stats().tiering().offloadsStarted());
        assertTrue(off.stats().evictedObjects() > 0);
        // a disk of one block: the first victim takes it, the rest are dropped and counted
        mountNode("a", 4096);
        fillAndEvict();
        assertEquals(1, state.stats().tiering().offloadsStarted());
        assertTrue(state.stats().tiering().offloadsNoSpace() > 0);
        assertTrue(state.stats().evictedObjects() > 0);
    }

    @Test
    void aStreamWithOffloadsReplaysAndRestoresFromASnapshotTakenMidOffloadToTheSameState() {
        List<LogEntry> log = new java.util.ArrayList<>();
        state.journal(log::add);
        mountNode("a", 1 << 20);
        fillAndEvict();
        List<OffloadTask> first = state.apply(now, new Command.TakeOffloads("a", 2));
        byte[] mid = state.snapshot(); // offloads handed out, more waiting, none done
        long midIndex = state.lastApplied();
        state.apply(now, new Command.OffloadDone("a", List.of(new OffloadResult(first.get(0).taskId(), true, 42, null),
                new OffloadResult(first.get(1).taskId(), false, 0, "io error"))));
        state.apply(now, new Command.GrantRead(first.get(0).key())); // a read from disk counts a hit
        List<OffloadTask> rest = state.apply(now, new Command.TakeOffloads("a", 1000));
        assertFalse(rest.isEmpty());
        state.apply(now, new Command.Remove(rest.get(0).key(), false));
        now += MasterConfig.defaults().offloadTimeout().toNanos() + 1;
        state.apply(now, new Command.Heartbeat("a"));
        state.apply(now, new Command.Tick());
        state.journal(null);

        MasterState replayed = new MasterState(MasterConfig.defaults());
        log.forEach(replayed::replay);
        assertEquals(StateDump.of(state), StateDump.of(replayed), "replayed from empty");
        MasterState restored = MasterState.restore(MasterConfig.defaults(), mid);
        log.stream().filter(e -> e.index() > midIndex).forEach(restored::replay);
        assertEquals(StateDump.of(state), StateDump.of(restored), "restored mid-offload and replayed");
        assertTrue(StateDump.of(state).stream().anyMatch(l -> l.contains("crc 42 offloadTask 0 hits 1")),
                "the completed offload and its read are in the dump");
    }

    @Test
    void aFullDiskDropsItsLeastRecentlyLeasedDiskOnlyObjectsAndKeepsLeasedOnes() {
        mountNode("a", 16 * 4096);
        String leased = null;
        for (int round = 0; round < 6; round++) {
            fillAndEvict();
            List<OffloadTask> tasks = state.apply(now, new Command.TakeOffloads("a", 1000));
            state.apply(now, new Command.OffloadDone("a", tasks.stream().map(x -> new OffloadResult(x.taskId(), true, 1, null)).toList()));
            if (leased == null && !tasks.isEmpty()) {
                leased = tasks.get(0).key();
                state.apply(now, new Command.GrantRead(leased)); // its lease runs to the end of the test
            }
            now += 1_000_000;
            state.apply(now, new Command.Heartbeat("a"));
        }
        state.apply(now, new Command.Evict());
        MasterState.Tiering t = state.stats().tiering();
        assertTrue(t.diskEvictedObjects() > 0, "the disk filled and dropped: " + t);
        assertTrue(diskUsed() <= 0.90 * 16 * 4096, diskUsed() + " bytes of disk used");
        assertTrue(state.describe(now, leased).replicas().get(0).onDisk(), "a leased disk object is kept");
        long diskOnly = 0;
        for (ObjectTable.Shard shard : state.objects.shards()) {
            for (ObjectRecord rec : shard.map.values()) {
                diskOnly += rec.disk != -1 ? 4096 : 0;
            }
        }
        assertEquals(diskOnly, diskUsed(), "disk use is exactly the disk replicas");
        assertEquals(0, t.offloadsDuplicate());
    }

    @Test
    void aDiskObjectReadTwiceIsCopiedBackIntoMemoryOnceBesideItsDiskReplica() {
        MasterState promoting = new MasterState(MasterConfig.defaults().withPromoteAfterHits(2));
        promoting.apply(now, new Command.Mount("a", new SegmentSpec("a-mem", "a", "h", 1L << 40, MEM), 1L));
        promoting.apply(now, new Command.Mount("a", new SegmentSpec("a-disk", "a", "h", 1L << 50, 1 << 20, Tier.DISK, "/d/a"), 1L));
        for (int i = 0; promoting.segments.allocated() < 0.95 * MEM; i++) {
            Command.PutTicket t = promoting.apply(now, new Command.PutStart("w", "p" + i, SIZE, ReplicateConfig.defaults(), "h", false, i));
            promoting.apply(now, new Command.PutEnd("w", "p" + i, t.putId()));
            now += 1000;
        }
        promoting.apply(now, new Command.Evict());
        List<OffloadTask> offloads = promoting.apply(now, new Command.TakeOffloads("a", 1000));
        promoting.apply(now, new Command.OffloadDone("a", offloads.stream().map(x -> new OffloadResult(x.taskId(), true, 77, null)).toList()));
        String key = offloads.get(0).key();
        String other = offloads.get(1).key();
        assertTrue(promoting.apply(now, new Command.GrantRead(key)).replicas().get(0).onDisk());
        assertEquals(0, promoting.stats().tiering().promotionsStarted(), "one read is not enough");
        List<ReplicaLocation> second = promoting.apply(now, new Command.GrantRead(key)).replicas();
        assertEquals(List.of(Tier.DISK), second.stream().map(ReplicaLocation::tier).toList(), "the read that promotes reads from disk");
        assertEquals(1, promoting.stats().tiering().promotionsStarted());
        promoting.apply(now, new Command.GrantRead(key));
        assertEquals(1, promoting.stats().tiering().promotionsStarted(), "once");
        promoting.apply(now, new Command.GrantRead(other));
        promoting.apply(now, new Command.GrantRead(other));
        List<OffloadTask> tasks = promoting.apply(now, new Command.TakeOffloads("a", 1000));
        assertEquals(2, tasks.size());
        OffloadTask p = tasks.stream().filter(x -> x.key().equals(key)).findFirst().orElseThrow();
        assertTrue(p.promote());
        assertEquals(Tier.DISK, p.source().tier());
        assertEquals(77, p.source().crc32c(), "the node checks what it reads against the recorded CRC");
        assertEquals("a-mem", p.target().segmentId());
        long memBefore = promoting.segments.allocated();
        OffloadTask q = tasks.stream().filter(x -> x.key().equals(other)).findFirst().orElseThrow();
        promoting.apply(now, new Command.OffloadDone("a", List.of(new OffloadResult(p.taskId(), true, 77, null),
                new OffloadResult(q.taskId(), false, 0, "checksum mismatch"))));
        assertEquals(List.of(Tier.MEMORY, Tier.DISK), promoting.describe(now, key).replicas().stream().map(ReplicaLocation::tier).toList());
        assertEquals(List.of(Tier.DISK), promoting.describe(now, other).replicas().stream().map(ReplicaLocation::tier).toList(),
                "a failed promotion leaves the object on disk");
        assertEquals(memBefore - RangeAllocator.aligned(SIZE), promoting.segments.allocated(), "its memory range went back");
        assertEquals(1, promoting.stats().tiering().promotionsCompleted());
    }

    @Test
    void placementNeverPicksADiskSegmentAndBadDiskMountsAreRefused() {
        mountNode("a", 1 << 20);
        for (int i = 0; i < 20; i++) {
            Command.PutTicket t = state.apply(now, new Command.PutStart("w", "p" + i, SIZE, ReplicateConfig.replicas(2), "h", false, i));
            assertEquals(List.of(Tier.MEMORY), t.replicas().stream().map(ReplicaLocation::tier).toList(),
                    "one memory segment: one replica, never the disk");
        }
        StoreException small = assertThrows(StoreException.class, () -> state.apply(now, new Command.Mount("b",
                new SegmentSpec("b-disk", "b", "h", 0, 100, Tier.DISK, "/d/b"), 1L)));
        assertEquals(StoreError.INVALID_PARAMS, small.error());
        assertTrue(small.getMessage().contains("b-disk"), small.getMessage());
        assertEquals(2, state.segments().size(), "nothing mounted");
    }
}
