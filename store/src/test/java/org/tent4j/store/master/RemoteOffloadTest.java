package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.Tier;
import org.tent4j.store.master.Command.OffloadResult;
import org.tent4j.store.master.Command.OffloadTask;

/**
 * Offloads to another node's disk, in virtual time: an object in the memory of a node without a disk (or with a full
 * one) goes to the disk segment with most room, its task handed to that disk's node only (which pulls the bytes), once
 * per key; the object switches only on that node's report; a write-through put does the same; a replay and a restore
 * choose the same disks.
 */
class RemoteOffloadTest {
    private static final long MEM = 64 * 4096;
    private static final long SIZE = 4000;
    private long now = 1_000_000_000L;
    private int nextKey;

    private void memory(MasterState s, String node, long bytes) {
        s.apply(now, new Command.Mount(node, new SegmentSpec(node + "-mem", node, "h", 1L << 40, bytes), 1L));
    }

    private void disk(MasterState s, String node, long bytes) {
        s.apply(now, new Command.Mount(node, new SegmentSpec(node + "-disk", node, "h", 1L << 50, bytes, Tier.DISK,
                "/d/" + node), 1L));
    }

    private void put(MasterState s, String key, ReplicateConfig config) {
        Command.PutTicket t = s.apply(now, new Command.PutStart("writer", key, SIZE, config, "h", false, key.hashCode()));
        s.apply(now, new Command.PutEnd("writer", key, t.putId()));
        now += 1_000;
    }

    /** Node a: memory only (or a disk of {@code aDisk} bytes); node b: a little memory and a disk; a fills a's memory. */
    private MasterState twoNodes(long aDisk) {
        MasterState s = new MasterState(MasterConfig.defaults());
        memory(s, "a", MEM);
        if (aDisk > 0) {
            disk(s, "a", aDisk);
        }
        memory(s, "b", 4 * 4096);
        disk(s, "b", 1 << 20);
        return s;
    }

    private void fillA(MasterState s) {
        while (s.segments.allocated() < 0.95 * (MEM + 4 * 4096)) {
            put(s, "k" + nextKey++, ReplicateConfig.defaults().withPreferredSegments(List.of("a-mem")));
        }
    }

    @Test
    void anObjectInMemoryOfANodeWithoutADiskIsOffloadedOnceToAnotherNodesDiskWhoseNodeAloneTakesTheTask() {
        MasterState s = twoNodes(0);
        fillA(s);
        s.apply(now, new Command.Evict());
        MasterState.Tiering t = s.stats().tiering();
        assertTrue(t.offloadsStarted() > 0, "eviction offloaded to b's disk: " + t);
        assertEquals(t.offloadsStarted(), t.offloadsRemote(), "every one to another node's disk");
        assertEquals(0, s.stats().evictedObjects(), "nothing dropped while b's disk has room");
        // more rounds and puts that evict for themselves start none a second time
        long memUsed = s.segments.allocated();
        s.apply(now, new Command.Evict());
        s.apply(now, new Command.Tick());
        assertEquals(t.offloadsStarted(), s.stats().tiering().offloadsStarted(), "no offload started twice");
        assertEquals(0, s.stats().tiering().offloadsDuplicate());
        assertEquals(memUsed, s.segments.allocated(), "a's memory stays taken until the offloads complete");

        assertTrue(s.apply(now, new Command.TakeOffloads("a", 1000)).isEmpty(), "a has no disk: no task for it");
        List<OffloadTask> tasks = s.apply(now, new Command.TakeOffloads("b", 1000));
        assertEquals(t.offloadsStarted(), tasks.size());
        Set<String> keys = new HashSet<>();
        for (OffloadTask task : tasks) {
            assertTrue(keys.add(task.key()), "one task per key: " + task.key());
            assertEquals("a-mem", task.source().segmentId(), "b pulls from a's memory");
            assertEquals(Tier.MEMORY, task.source().tier());
            assertEquals("b-disk", task.target().segmentId());
            assertEquals(0, task.target().fileOffset() % 4096);
        }
        now += 20_000_000_000L;
        // a's report (it holds the memory, not the disk) changes nothing; b's switches the objects
        s.apply(now, new Command.OffloadDone("a", tasks.stream().map(x -> new OffloadResult(x.taskId(), true, 5, null)).toList()));
        assertEquals(0, s.stats().tiering().offloadsCompleted());
        s.apply(now, new Command.OffloadDone("b", tasks.stream().map(x -> new OffloadResult(x.taskId(), true, 0xFEEDL, null)).toList()));
        assertEquals(tasks.size(), s.stats().tiering().offloadsCompleted());
        assertTrue(s.segments.allocated() <= memUsed - tasks.size() * SIZE, "a's memory freed on completion");
        for (OffloadTask task : tasks) {
            List<ReplicaLocation> after = s.apply(now, new Command.GrantRead(task.key())).replicas();
            assertEquals(1, after.size());
            assertEquals(Tier.DISK, after.get(0).tier());
            assertEquals("/d/b", after.get(0).file());
            assertEquals(0xFEEDL, after.get(0).crc32c());
        }
    }

    @Test
    void aFullDiskOfTheOwnerSendsTheRestToTheDiskWithMostRoom() {
        MasterState s = twoNodes(4096); // a's disk takes one object
        disk(s, "c", 2 << 20); // c: a disk only, with more room than b's
        fillA(s);
        s.apply(now, new Command.Evict());
        List<OffloadTask> own = s.apply(now, new Command.TakeOffloads("a", 1000));
        assertEquals(1, own.size(), "a's own disk first");
        assertTrue(s.apply(now, new Command.TakeOffloads("b", 1000)).isEmpty(), "b's disk has less room than c's");
        List<OffloadTask> toC = s.apply(now, new Command.TakeOffloads("c", 1000));
        assertEquals(s.stats().tiering().offloadsStarted() - 1, toC.size());
        assertEquals(toC.size(), s.stats().tiering().offloadsRemote());
        assertEquals(0, s.stats().tiering().offloadsNoSpace());

        // equal room: the lower segment index (b's disk, mounted first) takes it
        MasterState tie = twoNodes(0);
        disk(tie, "c", 1 << 20);
        put(tie, "one", ReplicateConfig.defaults().withPreferredSegments(List.of("a-mem")).withWriteThrough(true));
        assertEquals(1, tie.apply(now, new Command.TakeOffloads("b", 10)).size());
    }

    @Test
    void aWriteThroughPutOnANodeWithoutADiskLandsOnAnotherNodesDiskBesideItsMemoryCopy() {
        MasterState s = twoNodes(0);
        put(s, "through", ReplicateConfig.defaults().withPreferredSegments(List.of("a-mem")).withWriteThrough(true));
        assertEquals(1, s.stats().tiering().writeThroughStarted());
        assertEquals(1, s.stats().tiering().offloadsRemote());
        assertTrue(s.apply(now, new Command.TakeOffloads("a", 10)).isEmpty());
        List<OffloadTask> tasks = s.apply(now, new Command.TakeOffloads("b", 10));
        assertEquals(1, tasks.size());
        assertEquals("a-mem", tasks.get(0).source().segmentId());
        s.apply(now, new Command.OffloadDone("b", List.of(new OffloadResult(tasks.get(0).taskId(), true, 77, null))));
        List<ReplicaLocation> both = s.apply(now, new Command.GrantRead("through")).replicas();
        assertEquals(List.of(Tier.MEMORY, Tier.DISK), both.stream().map(ReplicaLocation::tier).toList());
        assertEquals("a-mem", both.get(0).segmentId());
        assertEquals("/d/b", both.get(1).file());
        assertEquals(77, both.get(1).crc32c());
    }

    @Test
    void aRemovalDuringAnOffloadKeepsItsMemoryFromReuseUntilThePullingNodeCanNoLongerReadIt() {
        MasterState s = twoNodes(0);
        put(s, "x", ReplicateConfig.defaults().withPreferredSegments(List.of("a-mem")).withWriteThrough(true));
        assertEquals(1, s.apply(now, new Command.TakeOffloads("b", 10)).size());
        long used = s.segments.allocated();
        now += 20_000_000_000L; // past any read lease, not past the task's deadline
        s.apply(now, new Command.Remove("x", false));
        assertEquals(1, s.stats().tiering().offloadsCancelled());
        assertEquals(used, s.segments.allocated(), "b may still be reading x's memory on a: not reusable yet");
        now += MasterConfig.defaults().offloadTimeout().toNanos();
        s.apply(now, new Command.Tick());
        assertEquals(used - RangeAllocator.aligned(SIZE), s.segments.allocated(), "freed once the task's time is over");
    }

    @Test
    void aStreamOfOffloadsToAnotherNodesDiskReplaysAndRestoresToTheSameState() {
        MasterState s = twoNodes(0);
        List<LogEntry> log = new ArrayList<>();
        s.journal(log::add);
        MasterState empty = twoNodes(0); // the same mounts, applied before the journal
        fillA(s);
        s.apply(now, new Command.Evict());
        put(s, "through", ReplicateConfig.defaults().withPreferredSegments(List.of("a-mem")).withWriteThrough(true));
        List<OffloadTask> first = s.apply(now, new Command.TakeOffloads("b", 2));
        byte[] mid = s.snapshot();
        long midIndex = s.lastApplied();
        s.apply(now, new Command.OffloadDone("b", List.of(new OffloadResult(first.get(0).taskId(), true, 42, null),
                new OffloadResult(first.get(1).taskId(), false, 0, "io error"))));
        List<OffloadTask> rest = s.apply(now, new Command.TakeOffloads("b", 1000));
        s.apply(now, new Command.Remove(rest.get(0).key(), false));
        s.apply(now, new Command.Unmount("a", "a-mem")); // the source of the rest goes: they are cancelled
        s.journal(null);
        assertTrue(s.stats().tiering().offloadsRemote() > 2);

        log.forEach(e -> empty.replay(new LogEntry(e.index(), e.now(), e.command())));
        assertEquals(StateDump.of(s), StateDump.of(empty), "replayed");
        MasterState restored = MasterState.restore(MasterConfig.defaults(), mid);
        log.stream().filter(e -> e.index() > midIndex).forEach(restored::replay);
        assertEquals(StateDump.of(s), StateDump.of(restored), "restored mid-offload and replayed");
        assertEquals(s.stats().tiering(), restored.stats().tiering());
    }
}
