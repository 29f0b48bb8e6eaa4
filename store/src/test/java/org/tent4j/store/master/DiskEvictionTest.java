package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.Tier;
import org.tent4j.store.master.Command.OffloadResult;
import org.tent4j.store.master.Command.OffloadTask;

/**
 * The disk tier's own eviction at the master, in virtual time, when the disk is full of objects that are also in
 * memory (written through): the least recently leased lose their disk copy only, stay readable from memory, and the
 * disk ranges go back to the node as tombstones; the disk then takes new offloads; the stream replays to the same state.
 */
class DiskEvictionTest {
    private static final long MEM = 64 * 4096;
    /** Sixteen 4 KiB blocks: sixteen objects fill it. */
    private static final long DISK = 16 * 4096;
    private static final long SIZE = 4000;
    private static final ReplicateConfig THROUGH = ReplicateConfig.defaults().withWriteThrough(true);
    private long now = 1_000_000_000L;

    private void putThrough(MasterState s, String key) {
        Command.PutTicket t = s.apply(now, new Command.PutStart("writer", key, SIZE, THROUGH, "h", false, key.hashCode()));
        s.apply(now, new Command.PutEnd("writer", key, t.putId()));
        now += 1_000;
    }

    private void offloadAll(MasterState s) {
        List<OffloadTask> tasks = s.apply(now, new Command.TakeOffloads("a", 1000));
        s.apply(now, new Command.OffloadDone("a", tasks.stream()
                .map(t -> new OffloadResult(t.taskId(), true, t.key().hashCode() & 0xffffffffL, null)).toList()));
    }

    /** Mounts node a's memory of {@code memory} bytes and its disk, and fills the disk with 16 objects written through. */
    private List<String> fillDiskThrough(MasterState s, long memory) {
        s.apply(now, new Command.Mount("a", new SegmentSpec("a-mem", "a", "h", 1L << 40, memory), 1L));
        s.apply(now, new Command.Mount("a", new SegmentSpec("a-disk", "a", "h", 1L << 50, DISK, Tier.DISK, "/d/a"), 1L));
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            String k = String.format(Locale.ROOT, "k%02d", i);
            putThrough(s, k);
            keys.add(k);
        }
        offloadAll(s);
        return keys;
    }

    private List<ReplicaLocation> replicas(MasterState s, String key) {
        return s.describe(now, key).replicas();
    }

    private static List<Tier> tiers(List<ReplicaLocation> rs) {
        return rs.stream().map(ReplicaLocation::tier).toList();
    }

    @Test
    void aDiskFullOfObjectsAlsoInMemoryDropsTheOldestDiskCopiesAndKeepsThemReadableFromMemory() {
        List<LogEntry> log = new ArrayList<>();
        MasterState s = new MasterState(MasterConfig.defaults());
        s.journal(log::add);
        List<String> keys = fillDiskThrough(s, MEM);
        for (String k : keys) {
            assertEquals(List.of(Tier.MEMORY, Tier.DISK), tiers(replicas(s, k)), k);
        }
        assertEquals(DISK, s.segments.diskAllocated(), "the disk is full");
        assertTrue(s.segments.allocated() < 0.3 * MEM, "memory is far under its watermark: its round takes nothing");
        // a write-through put finds no disk room: it stays in memory only
        putThrough(s, "late");
        assertTrue(s.apply(now, new Command.TakeOffloads("a", 1000)).isEmpty(), "no room on disk for 'late'");
        // read the newer half, so the order is not the put order alone; then past every lease
        for (String k : keys.subList(8, 16)) {
            s.apply(now, new Command.GrantRead(k));
        }
        now += 20_000_000_000L;
        for (String k : keys.subList(0, 4)) {
            s.apply(now, new Command.GrantRead(k)); // the oldest four read last: now the most recently leased
        }
        List<ReplicaLocation> before = new ArrayList<>();
        keys.forEach(k -> before.addAll(replicas(s, k)));
        long memUsed = s.segments.allocated();
        long objects = s.stats().objects();

        s.apply(now, new Command.Evict());

        // full disk: 100% over a 90% mark, 5% more: three 4 KiB blocks, the three least recently leased (k04..k06)
        List<String> dropped = keys.stream().filter(k -> !replicas(s, k).stream().anyMatch(ReplicaLocation::onDisk)).toList();
        assertEquals(List.of("k04", "k05", "k06"), dropped);
        assertEquals(DISK - 3 * 4096, s.segments.diskAllocated(), "their disk ranges are free");
        assertEquals(memUsed, s.segments.allocated(), "memory untouched");
        assertEquals(objects, s.stats().objects(), "no object gone");
        assertEquals(3, s.stats().tiering().diskEvictedObjects());
        assertEquals(0, s.stats().evictedObjects());
        for (String k : dropped) {
            ReplicaLocation mem = before.stream().filter(r -> !r.onDisk()).toList().get(keys.indexOf(k));
            List<ReplicaLocation> read = s.apply(now, new Command.GrantRead(k)).replicas();
            assertEquals(List.of(Tier.MEMORY), tiers(read), k + " readable from memory");
            assertEquals(mem.address(), read.get(0).address(), k + ": the same memory replica");
        }
        // the node is told to forget the dropped ranges (tombstones), as for any disk range freed
        List<Long> diskOffsets = new ArrayList<>();
        for (String k : dropped) {
            diskOffsets.add(before.stream().filter(ReplicaLocation::onDisk).toList().get(keys.indexOf(k)).fileOffset());
        }
        Command.DiskWork work = s.apply(now, new Command.TakeDiskWork("a", 0, 0));
        assertEquals(diskOffsets, work.freed().stream().map(Command.Freed::offset).sorted().toList());
        // the room is usable: a write-through put is offloaded again
        putThrough(s, "later");
        offloadAll(s);
        assertEquals(List.of(Tier.MEMORY, Tier.DISK), tiers(replicas(s, "later")));

        s.journal(null);
        MasterState replayed = new MasterState(MasterConfig.defaults());
        log.forEach(replayed::replay);
        assertEquals(StateDump.of(s), StateDump.of(replayed), "replayed from empty");
    }

    @Test
    void anObjectWhoseDiskCopyTheRoundTookIsDroppedFromMemoryNotWrittenToDiskAgain() {
        List<LogEntry> log = new ArrayList<>();
        MasterState s = new MasterState(MasterConfig.defaults());
        s.journal(log::add);
        // sixteen 4,032-B memory footprints in 17 blocks of memory: 92.6% over the 90% mark
        fillDiskThrough(s, 17 * 4096);
        assertEquals(DISK, s.segments.diskAllocated(), "the disk is full");
        now += 20_000_000_000L; // past every lease

        s.apply(now, new Command.Evict());

        // the disk's round takes the three least recently leased disk copies (k00..k02), memory's the two least
        // recently leased (k00, k01): those two are dropped, not offloaded into the room just made
        assertEquals(3, s.stats().tiering().diskEvictedObjects());
        assertEquals(2, s.stats().evictedObjects());
        assertFalse(s.exists("k00"));
        assertFalse(s.exists("k01"));
        assertEquals(List.of(Tier.MEMORY), tiers(replicas(s, "k02")), "k02 keeps its memory replica");
        assertTrue(s.apply(now, new Command.TakeOffloads("a", 1000)).isEmpty(), "nothing written to disk again");
        assertEquals(DISK - 3 * 4096, s.segments.diskAllocated());

        s.journal(null);
        MasterState replayed = new MasterState(MasterConfig.defaults());
        log.forEach(replayed::replay);
        assertEquals(StateDump.of(s), StateDump.of(replayed), "replayed from empty");
    }
}
