package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.tent4j.store.ManualClock;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command.CommitItem;
import org.tent4j.store.master.Command.Grant;
import org.tent4j.store.master.Command.PutTicket;
import org.tent4j.store.master.Command.Reserve;

/**
 * The master's one ordering point: the command stream recorded from a concurrent workload (writers putting values of
 * mixed sizes, upserting, revoking, committing into reservations, reading and removing on four threads; a housekeeper mounting, unmounting,
 * heartbeating, ticking and evicting while an injected clock moves; a node that goes silent and is expired; a node
 * started again, mounting its segment in a new incarnation, then its memory under a new id; a node mounting and
 * unmounting in a loop, many times over the master's small segment table, so indexes are freed and reused) replays
 * into an empty state as the same state: every object, every allocator's free list, every client and reservation,
 * every parked range, the segment table's free slots.
 */
class ReplayDeterminismTest {
    private static final int WRITERS = 4;
    private static final int ROUNDS = 1500;
    private static final long SEGMENT = 256 << 10;
    /**
     * Segment indexes the master hands out: more than are ever mounted or named by a reservation at once (3 nodes, node3's
     * one or two, node4's, node5's, and the writers' 8 reservations), far fewer than the workload mounts.
     */
    private static final int INDEXES = 24;

    private final ManualClock clock = new ManualClock();

    @Test
    void aRecordedConcurrentStreamReplaysToTheSameState() throws Exception {
        List<LogEntry> log = record();
        assertTrue(log.size() > WRITERS * ROUNDS, "every call was logged: " + log.size());
        Map<Class<?>, Long> kinds = log.stream().collect(Collectors.groupingBy(e -> e.command().getClass(), Collectors.counting()));
        for (Class<?> k : List.of(Command.PutStart.class, Command.PutEnd.class, Command.PutRevoke.class, Command.Commit.class,
                Command.GrantRead.class, Command.Remove.class, Command.Mount.class, Command.Unmount.class,
                Command.Heartbeat.class, Command.Leave.class, Command.Tick.class, Command.Evict.class)) {
            assertTrue(kinds.getOrDefault(k, 0L) > 0, "the workload logged " + k.getSimpleName() + ": " + kinds);
        }
        assertSameState(recorded, StateDump.of(replay(log, Function.identity())));
    }

    /** Equal dumps, or a failure naming the first line that differs (a whole dump is too long to read). */
    private static void assertSameState(List<String> expected, List<String> actual) {
        for (int i = 0; i < Math.min(expected.size(), actual.size()); i++) {
            assertEquals(expected.get(i), actual.get(i), "line " + i + " of the state dump");
        }
        assertEquals(expected.size(), actual.size(), "lines in the state dump");
    }

    @Test
    void theComparisonSeesTwoPutsLandInTheOtherOrderAndALeaseLeftOut() throws Exception {
        List<LogEntry> log = record();
        List<Object> results = new ArrayList<>();
        MasterState fresh = new MasterState(config(), INDEXES);
        for (LogEntry e : log) {
            results.add(fresh.replay(e));
        }
        // the race the ordering point closes: of two put starts of different keys that both took space, the later
        // applied first (as two event loops could apply them without the ordering point)
        int first = 0;
        while (!(results.get(first) instanceof PutTicket)) {
            first++;
        }
        String firstKey = ((Command.PutStart) log.get(first).command()).key();
        int later = first + 1;
        while (!(results.get(later) instanceof PutTicket && !((Command.PutStart) log.get(later).command()).key().equals(firstKey))) {
            later++;
        }
        int i = first;
        int j = later;
        List<String> reordered = StateDump.of(replay(log, l -> {
            List<Command<?>> commands = new ArrayList<>(l.stream().map(LogEntry::command).toList());
            commands.add(i, commands.remove(j));
            List<LogEntry> out = new ArrayList<>();
            for (int k = 0; k < l.size(); k++) {
                out.add(new LogEntry(l.get(k).index(), l.get(k).now(), commands.get(k)));
            }
            return out;
        }));
        assertTrue(!recorded.equals(reordered), "entry " + (j + 1) + " moved before entry " + (i + 1) + ": the same state");
        // and a lease granted outside the stream: the last read whose lease the object still carries (and the only
        // read of that key at that time), replaced by a call that changes nothing, leaves another state
        long ttl = config().leaseTtl().toNanos();
        Map<String, Integer> readsAt = new java.util.HashMap<>();
        List<LogEntry> granted = new ArrayList<>();
        for (LogEntry e : log) {
            if (results.get((int) e.index() - 1) instanceof Command.ReplicaList && e.command() instanceof Command.GrantRead g) {
                readsAt.merge(g.key() + "@" + e.now(), 1, Integer::sum);
                granted.add(e);
            }
        }
        int drop = -1;
        for (LogEntry e : granted) {
            String k = ((Command.GrantRead) e.command()).key();
            if (readsAt.get(k + "@" + e.now()) == 1 && recorded.stream().anyMatch(line -> line.startsWith("object " + k + " ")
                    && line.contains(" lease " + (e.now() + ttl) + " "))) {
                drop = (int) e.index() - 1;
            }
        }
        assertTrue(drop >= 0, "some object still carries the lease of its last read");
        int at = drop;
        List<String> lessOne = StateDump.of(replay(log, l -> {
            List<LogEntry> out = new ArrayList<>(l);
            out.set(at, new LogEntry(l.get(at).index(), l.get(at).now(), new Command.Heartbeat("nobody")));
            return out;
        }));
        String key = ((Command.GrantRead) log.get(at).command()).key();
        assertNotEquals(recorded.stream().filter(line -> line.startsWith("object " + key + " ")).toList(),
                lessOne.stream().filter(line -> line.startsWith("object " + key + " ")).toList(),
                "entry " + (at + 1) + " (a read lease of " + key + ") left out");
    }

    @Test
    void aSnapshotAndTheStreamAfterItGiveTheSameState() throws Exception {
        List<LogEntry> log = record();
        MasterState whole = replay(log, Function.identity());
        assertSameState(recorded, StateDump.of(MasterState.restore(config(), whole.snapshot())));
        for (int k : new int[] {1, log.size() / 3, log.size() / 2, 2 * log.size() / 3, log.size() - 1}) {
            MasterState head = replay(log.subList(0, k), Function.identity());
            MasterState restored = MasterState.restore(config(), head.snapshot());
            assertEquals(k, restored.lastApplied());
            for (LogEntry e : log.subList(k, log.size())) {
                restored.replay(e);
            }
            assertSameState(recorded, StateDump.of(restored));
        }
        byte[] snap = whole.snapshot();
        IllegalArgumentException cut = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> MasterState.restore(config(), java.util.Arrays.copyOf(snap, snap.length / 2)));
        assertTrue(cut.getMessage().contains("cut short or corrupt"), cut.getMessage());
        snap[0] ^= 1;
        assertThrows(IllegalArgumentException.class, () -> MasterState.restore(config(), snap));
    }

    @Test
    void replayRefusesAnEntryOutOfOrder() {
        MasterState s = new MasterState(MasterConfig.defaults());
        s.replay(new LogEntry(1, 10, new Command.Tick()));
        StoreException refused = (StoreException) s.replay(new LogEntry(2, 10, new Command.Remove("k", false)));
        assertEquals(StoreError.OBJECT_NOT_FOUND, refused.error());
        IllegalStateException gap = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                () -> s.replay(new LogEntry(4, 10, new Command.Tick())));
        assertTrue(gap.getMessage().contains("entry 4"), gap.getMessage());
        org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                () -> s.replay(new LogEntry(3, 9, new Command.Tick())), "time never runs back");
        assertEquals(2, s.lastApplied());
    }

    private List<String> recorded;

    private MasterState replay(List<LogEntry> log, Function<List<LogEntry>, List<LogEntry>> edit) {
        MasterState fresh = new MasterState(config(), INDEXES);
        for (LogEntry e : edit.apply(log)) {
            fresh.replay(e);
        }
        return fresh;
    }

    private static MasterConfig config() {
        // four shards, so each map grows past its first table size (its walk order, which eviction samples in, is
        // state a snapshot must keep); segments small enough that puts find them full and the evictor runs
        MasterConfig d = MasterConfig.defaults();
        return new MasterConfig(d.leaseTtl(), d.defaultSoftPinTtl(), d.maxSoftPinTtl(), d.highWatermark(), d.evictionRatio(),
                Duration.ofSeconds(10), d.putDiscardTimeout(), d.putReleaseTimeout(), d.placement(), d.maxKeyBytes(),
                d.maxReplicas(), 4);
    }

    /** Runs the workload on a master whose journal records every entry; the stream, and the state it left in {@link #recorded}. */
    private List<LogEntry> record() throws Exception {
        StoreMaster master = new StoreMaster(new MasterState(config(), INDEXES), clock);
        ConcurrentLinkedQueue<LogEntry> log = new ConcurrentLinkedQueue<>();
        master.state().journal(log::add);
        for (int n = 0; n < 3; n++) {
            master.mount("node" + n, new SegmentSpec("s" + n, "engine-s" + n, "h" + n, 1L << 32, SEGMENT), 1L);
        }
        AtomicBoolean done = new AtomicBoolean();
        Set<String> failures = ConcurrentHashMap.newKeySet();
        CyclicBarrier start = new CyclicBarrier(WRITERS + 1);
        CountDownLatch writersDone = new CountDownLatch(WRITERS);
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < WRITERS; w++) {
            String client = "w" + w;
            long seed = w;
            threads.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                    writer(master, client, new SplittableRandom(seed));
                } catch (Throwable e) {
                    failures.add(client + ": " + e);
                } finally {
                    writersDone.countDown();
                }
            }));
        }
        threads.add(Thread.ofPlatform().start(() -> {
            try {
                start.await();
                housekeeper(master, writersDone, done);
            } catch (Throwable e) {
                failures.add("housekeeper: " + e);
            }
        }));
        for (Thread t : threads) {
            t.join();
        }
        assertEquals(Set.of(), failures);
        master.state().journal(null);
        recorded = StateDump.of(master.state());
        List<LogEntry> out = new ArrayList<>(log);
        for (int i = 0; i < out.size(); i++) {
            assertEquals(i + 1, out.get(i).index(), "the journal saw the entries in index order");
        }
        assertTrue(master.state().stats().evictedObjects() > 0, "eviction happened: " + master.state().stats());
        assertTrue(master.state().stats().clientsExpired() > 0, "a client expired: " + master.state().stats());
        assertTrue(master.state().stats().segmentsReplaced() >= 2, "restarted nodes replaced segments: " + master.state().stats());
        long mounts = out.stream().filter(e -> e.command() instanceof Command.Mount).count();
        assertTrue(mounts > 4 * INDEXES, "indexes were reused: " + mounts + " mounts over " + INDEXES + " indexes");
        return out;
    }

    private static void writer(StoreMaster master, String client, SplittableRandom rnd) {
        List<Grant> grants = List.of();
        long used = 0;
        for (int i = 0; i < ROUNDS; i++) {
            String key = "k" + rnd.nextInt(300);
            // one value in eight is 16-64 KiB among small ones: a put of it into a full segment evicts a window
            // of smaller objects between leased ones (ContiguousRoom), which must replay the same too
            long size = rnd.nextInt(8) == 0 ? (16 << 10) + rnd.nextInt(48 << 10) : 64 + rnd.nextInt(4096);
            try {
                switch (rnd.nextInt(10)) {
                    case 0, 1 -> {
                        PutTicket t = master.putStart(client, key, size, ReplicateConfig.replicas(1 + rnd.nextInt(2)), "h0");
                        if (rnd.nextInt(8) == 0) {
                            master.putRevoke(client, key, t.putId());
                        } else if (rnd.nextInt(16) != 0) {
                            master.putEnd(client, key, t.putId());
                        }
                        // else abandoned: taken over or reclaimed later
                    }
                    case 2 -> {
                        PutTicket t = master.upsertStart(client, key, size, ReplicateConfig.replicas(1), "h1");
                        master.putEnd(client, key, t.putId());
                    }
                    case 3, 4 -> {
                        long len = RangeAllocator.aligned(size);
                        if (grants.isEmpty() || used + len > 16384) {
                            List<Long> retire = grants.stream().map(Grant::id).toList();
                            grants = master.commit(client, List.of(), retire, new Reserve(16384, 2, "h2")).granted();
                            used = 0;
                        }
                        if (!grants.isEmpty()) {
                            long[] ids = grants.stream().mapToLong(Grant::id).toArray();
                            final long at = used;
                            long[] addresses = grants.stream().mapToLong(g -> g.range().address() + at).toArray();
                            used += len;
                            master.commit(client, List.of(new CommitItem(key, size, ids, addresses)), List.of(), null);
                        }
                    }
                    case 5, 6, 7 -> master.getReplicas(key);
                    case 8 -> master.remove(key, rnd.nextInt(4) == 0);
                    default -> master.exists(key);
                }
            } catch (StoreException e) {
                if (e.error() == StoreError.INTERNAL_ERROR) {
                    throw e;
                }
            }
        }
    }

    /**
     * Moves the clock 20 ms a round, heartbeats the nodes (node2 falls silent for good a third of the way in and is
     * expired; node3 mounts and unmounts a segment now and then; node4 mounts one and leaves; node5 mounts one every
     * fourth round and unmounts it two rounds later), ticks and evicts, until the writers are done.
     */
    private void housekeeper(StoreMaster master, CountDownLatch writersDone, AtomicBoolean done) {
        AtomicInteger round = new AtomicInteger();
        while (writersDone.getCount() > 0 || round.get() < 800) {
            int r = round.incrementAndGet();
            clock.advance(Duration.ofMillis(20));
            master.heartbeat("node0");
            master.heartbeat("node1");
            if (r < 200) {
                master.heartbeat("node2");
            }
            for (int w = 0; w < WRITERS; w++) {
                master.heartbeat("w" + w);
            }
            if (r % 50 == 10) {
                master.mount("node3", new SegmentSpec("x" + r, "engine-x" + r, "h3", 1L << 40, SEGMENT / 2), 1L);
            } else if (r % 50 == 20) {
                // node3 started again: the same segment in a new incarnation, its objects dropped, a fresh allocator
                master.mount("node3", new SegmentSpec("x" + (r - 10), "engine-x" + (r - 10), "h3", 1L << 40, SEGMENT / 2), r);
            } else if (r % 50 == 30) {
                // and again, its memory under a new segment id overlapping the old one's: the old one dropped
                master.mount("node3", new SegmentSpec("z" + r, "engine-x" + (r - 20), "h3", (1L << 40) + 4096, SEGMENT / 2), -r);
            } else if (r % 50 == 35) {
                master.unmount("node3", "x" + (r - 25)); // gone already: changes nothing
            } else if (r % 50 == 45) {
                master.unmount("node3", "z" + (r - 15));
            }
            if (r % 4 == 1) {
                master.mount("node5", new SegmentSpec("v" + r, "engine-v" + r, "h5", 1L << 42, SEGMENT / 4), 1L);
            } else if (r % 4 == 3) {
                master.unmount("node5", "v" + (r - 2));
            }
            if (r % 100 == 60) {
                master.mount("node4", new SegmentSpec("y" + r, "engine-y" + r, "h4", 1L << 41, SEGMENT / 2), 1L);
            } else if (r % 100 == 85) {
                // a clean exit with its segment still mounted: record, reservations and segment go at once
                master.leave("node4");
            }
            master.tick();
            master.apply(new Command.Evict());
        }
        done.set(true);
    }
}
