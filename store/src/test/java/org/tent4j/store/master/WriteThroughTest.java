package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreException;
import org.tent4j.store.Tier;
import org.tent4j.store.master.Command.OffloadResult;
import org.tent4j.store.master.Command.OffloadTask;

/**
 * Write-through puts and the promotion window at the master, in virtual time: a write-through put is queued for its
 * node's disk as it ends, once, keeps its memory replica, and gains the disk replica only on the node's report; hits
 * count towards promotion only within the window; a stream of both replays and restores to the same state.
 */
class WriteThroughTest {
    private static final long MEM = 64 * 4096;
    private static final long SIZE = 4000;
    private static final ReplicateConfig THROUGH = ReplicateConfig.defaults().withWriteThrough(true);
    private long now = 1_000_000_000L;

    private MasterState master(MasterConfig config) {
        MasterState s = new MasterState(config);
        s.apply(now, new Command.Mount("a", new SegmentSpec("a-mem", "a", "h", 1L << 40, MEM), 1L));
        s.apply(now, new Command.Mount("a", new SegmentSpec("a-disk", "a", "h", 1L << 50, 1 << 20, Tier.DISK, "/d/a"), 1L));
        return s;
    }

    private void put(MasterState s, String key, ReplicateConfig config) {
        Command.PutTicket t = s.apply(now, new Command.PutStart("writer", key, SIZE, config, "h", false, key.hashCode()));
        s.apply(now, new Command.PutEnd("writer", key, t.putId()));
        now += 1_000;
    }

    private List<Tier> tiers(MasterState s, String key) {
        return s.describe(now, key).replicas().stream().map(ReplicaLocation::tier).toList();
    }

    private static List<OffloadTask> take(MasterState s, long now) {
        return s.apply(now, new Command.TakeOffloads("a", 1000));
    }

    private static void report(MasterState s, long now, List<OffloadTask> tasks, long crc) {
        s.apply(now, new Command.OffloadDone("a", tasks.stream().map(t -> new OffloadResult(t.taskId(), true, crc, null)).toList()));
    }

    @Test
    void aWriteThroughPutIsOnDiskWithItsCrcWithoutAnyEvictionAndKeepsItsMemoryReplica() {
        MasterState s = master(MasterConfig.defaults());
        put(s, "plain", ReplicateConfig.defaults());
        put(s, "through", THROUGH);
        long memUsed = s.segments.allocated();
        List<OffloadTask> tasks = take(s, now);
        assertEquals(List.of("through"), tasks.stream().map(OffloadTask::key).toList(), "only the write-through put");
        OffloadTask t = tasks.get(0);
        assertFalse(t.promote() || t.repair(), "an offload, as the node runs one");
        assertEquals(Tier.MEMORY, t.source().tier());
        assertEquals(Tier.DISK, t.target().tier());
        assertEquals(List.of(Tier.MEMORY), tiers(s, "through"), "no disk replica before the node's report");
        report(s, now, tasks, 0xCAFEBABEL);
        List<ReplicaLocation> rs = s.describe(now, "through").replicas();
        assertEquals(List.of(Tier.MEMORY, Tier.DISK), rs.stream().map(ReplicaLocation::tier).toList());
        assertEquals(0xCAFEBABEL, rs.get(1).crc32c());
        assertEquals(t.target().fileOffset(), rs.get(1).fileOffset());
        assertEquals(memUsed, s.segments.allocated(), "its memory replica stays");
        MasterState.Tiering tiering = s.stats().tiering();
        assertEquals(1, tiering.writeThroughStarted());
        assertEquals(1, tiering.offloadsCompleted());
        assertEquals(0, s.stats().evictedObjects(), "nothing was evicted");
        assertEquals(0, s.stats().evictionRounds());
        assertEquals(List.of(Tier.MEMORY), tiers(s, "plain"));
        assertTrue(take(s, now).isEmpty());
    }

    @Test
    void theMastersDefaultWritesThroughPutsAndCommitsThatDoNotSayOtherwise() {
        MasterState s = master(MasterConfig.defaults().withWriteThrough(true));
        put(s, "unsaid", ReplicateConfig.defaults());
        put(s, "refused", ReplicateConfig.defaults().withWriteThrough(false));
        // one commit into a reservation (the one-call path): it carries no choice, so the master's default holds
        Command.CommitResult granted = s.apply(now, new Command.Commit("writer", List.of(), List.of(),
                new Command.Reserve(64 * 1024, 1, "h"), 1));
        Command.Grant g = granted.granted().get(0);
        s.apply(now, new Command.Commit("writer", List.of(new Command.CommitItem("committed", SIZE,
                new long[]{g.id()}, new long[]{g.range().address()})), List.of(), null, 2));
        List<String> keys = take(s, now).stream().map(OffloadTask::key).sorted().toList();
        assertEquals(List.of("committed", "unsaid"), keys);
        assertEquals(2, s.stats().tiering().writeThroughStarted());
    }

    @Test
    void aWriteThroughPutIsNeverOffloadedTwiceUnderEvictionsAndItsEvictionAfterwardsOnlyDropsMemory() {
        MasterState s = master(MasterConfig.defaults());
        put(s, "through", THROUGH);
        // fill memory past the watermark and evict, by rounds and by puts' own evictions, while its task waits
        for (int i = 0; s.segments.allocated() < 0.95 * MEM; i++) {
            put(s, String.format(Locale.ROOT, "k%03d", i), ReplicateConfig.defaults());
        }
        now += 20_000_000_000L; // past every lease: the write-through object is the least recently leased
        for (int round = 0; round < 3; round++) {
            s.apply(now, new Command.Evict());
            try {
                put(s, "more" + round, ReplicateConfig.defaults());
            } catch (StoreException full) {
                // memory full of offloads in flight: refused, as documented
            }
        }
        List<OffloadTask> tasks = take(s, now);
        assertEquals(1, tasks.stream().filter(t -> t.key().equals("through")).count(), "one task for the key");
        assertEquals(0, s.stats().tiering().offloadsDuplicate());
        assertEquals(List.of(Tier.MEMORY), tiers(s, "through"), "not evicted while its offload is in flight");
        report(s, now, tasks, 42);
        assertEquals(List.of(Tier.MEMORY, Tier.DISK), tiers(s, "through"));
        long diskOffset = s.describe(now, "through").replicas().get(1).fileOffset();
        long started = s.stats().tiering().offloadsStarted();
        now += 20_000_000_000L;
        for (int round = 0; round < 3 && tiers(s, "through").contains(Tier.MEMORY); round++) {
            for (int i = 0; s.segments.allocated() < 0.95 * MEM; i++) {
                put(s, "fill" + round + "/" + i, ReplicateConfig.defaults());
            }
            now += 20_000_000_000L;
            s.apply(now, new Command.Evict());
        }
        assertEquals(List.of(Tier.DISK), tiers(s, "through"), "its memory copy was evicted");
        assertFalse(take(s, now).stream().anyMatch(t -> t.key().equals("through")), "nothing written again");
        ReplicaLocation disk = s.apply(now, new Command.GrantRead("through")).replicas().get(0);
        assertEquals(diskOffset, disk.fileOffset(), "the same disk replica");
        assertEquals(42, disk.crc32c());
        assertEquals(0, s.stats().tiering().offloadsDuplicate());
        assertEquals(1, s.stats().tiering().writeThroughStarted());
        assertTrue(s.stats().tiering().offloadsStarted() >= started, "others offloaded meanwhile");
    }

    /** A disk-only object: written through, then its memory copy evicted (its lease the oldest). */
    private String diskOnly(MasterState s, String key) {
        put(s, key, THROUGH);
        report(s, now, take(s, now), 7);
        for (int round = 0; round < 8 && tiers(s, key).contains(Tier.MEMORY); round++) {
            for (int i = 0; s.segments.allocated() < 0.95 * MEM; i++) {
                put(s, key + "-" + round + "/" + i, ReplicateConfig.defaults());
            }
            now += 20_000_000_000L;
            s.apply(now, new Command.Evict());
            report(s, now, take(s, now), 7);
        }
        assertEquals(List.of(Tier.DISK), tiers(s, key));
        return key;
    }

    @Test
    void hitsSpreadBeyondThePromotionWindowDoNotPromoteAndHitsWithinItDo() {
        MasterState s = master(MasterConfig.defaults().withPromoteAfterHits(2).withPromoteWindow(Duration.ofSeconds(1)));
        String key = diskOnly(s, "cold");
        long promoted = s.stats().tiering().promotionsStarted();
        s.apply(now, new Command.GrantRead(key));
        now += 1_500_000_000L; // 1.5 s later: the first hit is out of the window
        s.apply(now, new Command.GrantRead(key));
        assertEquals(promoted, s.stats().tiering().promotionsStarted(), "two hits 1.5 s apart do not promote");
        now += 900_000_000L; // 0.9 s after the last: within the window it started
        s.apply(now, new Command.GrantRead(key));
        assertEquals(promoted + 1, s.stats().tiering().promotionsStarted(), "two hits within 1 s promote");
    }

    @Test
    void aStreamOfWriteThroughPutsAndWindowedHitsReplaysAndRestoresToTheSameState() {
        MasterConfig config = MasterConfig.defaults().withPromoteAfterHits(3).withPromoteWindow(Duration.ofSeconds(1));
        List<LogEntry> log = new ArrayList<>();
        MasterState s = new MasterState(config);
        s.journal(log::add);
        s.apply(now, new Command.Mount("a", new SegmentSpec("a-mem", "a", "h", 1L << 40, MEM), 1L));
        s.apply(now, new Command.Mount("a", new SegmentSpec("a-disk", "a", "h", 1L << 50, 1 << 20, Tier.DISK, "/d/a"), 1L));
        String key = diskOnly(s, "cold");
        s.apply(now, new Command.GrantRead(key));
        now += 2_000_000_000L;
        s.apply(now, new Command.GrantRead(key)); // out of the window: counts from 1 again
        now += 300_000_000L;
        s.apply(now, new Command.GrantRead(key)); // two hits in the window, its start in the record
        put(s, "through-1", THROUGH); // a write-through task waiting
        put(s, "upserted", THROUGH);
        Command.PutTicket up = s.apply(now, new Command.PutStart("writer", "upserted", SIZE, THROUGH, "h", true, 9));
        byte[] mid = s.snapshot(); // an upsert written through in flight, its flag on the record
        long midIndex = s.lastApplied();
        assertEquals(StateDump.of(s), StateDump.of(MasterState.restore(config, mid)), "the snapshot holds the state");
        s.apply(now, new Command.PutEnd("writer", "upserted", up.putId()));
        now += 300_000_000L;
        long promoted = s.stats().tiering().promotionsStarted();
        s.apply(now, new Command.GrantRead(key)); // the third within the window that began two hits ago
        assertEquals(promoted + 1, s.stats().tiering().promotionsStarted());
        report(s, now, take(s, now), 11);
        s.journal(null);

        MasterState replayed = new MasterState(config);
        log.forEach(replayed::replay);
        assertEquals(StateDump.of(s), StateDump.of(replayed), "replayed from empty");
        MasterState restored = MasterState.restore(config, mid);
        log.stream().filter(e -> e.index() > midIndex).forEach(restored::replay);
        assertEquals(StateDump.of(s), StateDump.of(restored), "restored mid-stream and replayed");
        // through the durable log's codec too: every entry's bytes decode to commands that rebuild the state
        MasterState decoded = new MasterState(config);
        for (LogEntry e : log) {
            CommandCodec.Entry entry = CommandCodec.decode(CommandCodec.encode(new CommandCodec.Entry(0, e.now(), List.of(e.command()))));
            decoded.replay(new LogEntry(e.index(), entry.now(), entry.commands().get(0)));
        }
        assertEquals(StateDump.of(s), StateDump.of(decoded), "replayed from the encoded log");
    }

    @Test
    void version9And10SnapshotsAreStillRead() {
        MasterState s = master(MasterConfig.defaults());
        byte[] v11 = s.snapshot();
        // version 10: the same bytes without the last counter (offloads to another node's disk); 9 also without the
        // one before it (write-through offloads) and, per object, no window start (there are no objects here)
        for (int version = 9; version <= 10; version++) {
            int lacking = 11 - version;
            ByteBuffer b = ByteBuffer.wrap(v11);
            int counters = b.getInt(56);
            int last = 60 + 8 * (counters - lacking);
            byte[] old = new byte[v11.length - 8 * lacking];
            System.arraycopy(v11, 0, old, 0, last);
            System.arraycopy(v11, last + 8 * lacking, old, last, v11.length - last - 8 * lacking);
            ByteBuffer.wrap(old).putInt(4, version).putInt(56, counters - lacking);
            MasterState restored = MasterState.restore(MasterConfig.defaults(), old);
            assertEquals(StateDump.of(s), StateDump.of(restored), "version " + version);
            assertEquals(0, restored.stats().tiering().writeThroughStarted());
            assertEquals(0, restored.stats().tiering().offloadsRemote());
            assertEquals(11, ByteBuffer.wrap(restored.snapshot()).getInt(4), "written again as version 11");
        }
    }
}
