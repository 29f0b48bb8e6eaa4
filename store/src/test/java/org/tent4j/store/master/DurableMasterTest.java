package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.PutResult;
import org.tent4j.store.client.StoreClient;
import org.tent4j.store.rpc.ClientCredentials;
import org.tent4j.store.rpc.CredentialCheck;
import org.tent4j.store.rpc.MasterServer;
import org.tent4j.testkit.Poll;
import org.tent4j.testkit.net.FreePorts;

/**
 * The master on its durable log (Ratis, a group of one): what was acknowledged survives the master, a snapshot plus
 * the log's tail gives the state a full replay gives, and a data dir that is not this master's is refused.
 */
class DurableMasterTest {
    private static final DurableLog.Settings NO_SNAPSHOTS = new DurableLog.Settings(1_000_000, false, 60_000);
    private static final DurableLog.Settings SNAPSHOT_AT_STOP = new DurableLog.Settings(1_000_000, true, 60_000);

    @TempDir
    Path dir;

    private static DurableLog open(Path dir, DurableLog.Settings s) throws IOException {
        return DurableLog.open(MasterConfig.defaults(), dir, "m1", List.of(), s);
    }

    /**
     * Objects put through a client onto a node's memory are all there after the master stops without a snapshot and
     * starts again on the same dir and port: the master's state is the same, and each reads back CRC-equal from the
     * node, which never restarted.
     */
    @Test
    void acknowledgedObjectsSurviveAMasterRestart() throws Exception {
        MasterServer first = MasterServer.start(new StoreMaster(open(dir, NO_SNAPSHOTS), StoreClock.system()),
                "127.0.0.1", 0, 0, r -> { });
        int port = first.port();
        String address = "127.0.0.1:" + port;
        List<TransferEngine> engines = new ArrayList<>();
        try {
            TransferEngine nodeEngine = DurableValues.engine(engines);
            TransferEngine userEngine = DurableValues.engine(engines);
            // no heartbeats: a ping is a logged entry (a client's last-heard time, the applied index), and one landing
            // while the first master closes is in its log but not in the state it leaves (committed, not yet applied)
            StoreClient node = StoreClient.builder(nodeEngine, address).heartbeatInterval(Duration.ZERO).connect();
            StoreClient user = StoreClient.builder(userEngine, address).heartbeatInterval(Duration.ZERO).stagingBytes(1 << 20).connect();
            node.contribute(4 << 20);
            List<byte[]> values = DurableValues.put(user, "durable/", 40, 22);
            first.close();
            // every entry applied was committed (apply follows commit), so this is what the log must give back
            List<String> before = StateDump.of(first.master().state());
            assertTrue(before.stream().anyMatch(l -> l.startsWith("object durable/39 ")), "the last put is in the state");

            // open returns once the log is replayed; the state is compared before the master serves anyone
            StoreMaster reopened = new StoreMaster(open(dir, NO_SNAPSHOTS), StoreClock.system());
            try {
                assertEquals(before, StateDump.of(reopened.state()));
            } catch (AssertionError e) {
                reopened.close();
                throw e;
            }
            try (MasterServer second = MasterServer.start(reopened, "127.0.0.1", port, 0, r -> { })) {
                DurableValues.assertReadBack(user, "durable/", values);
                // a session's 40 read leases (BatchGetReplicaList) are one entry (group commit), not 40; of objects
                // never read, as a read under a lease that still runs is no entry at all
                DurableLog log = second.master().log();
                List<String> keys = java.util.stream.IntStream.range(0, values.size()).mapToObj(i -> "unread/" + i).toList();
                for (int i = 0; i < keys.size(); i++) {
                    assertEquals(PutResult.Status.STORED, user.put(keys.get(i), values.get(i), ReplicateConfig.replicas(1)).status());
                }
                List<LogEntry> during = new CopyOnWriteArrayList<>();
                second.master().state().journal(during::add);
                long entriesBefore = log.entriesApplied();
                try (var session = user.getSession(keys)) {
                    for (int i = 0; i < values.size(); i++) {
                        assertEquals(values.get(i).length, session.valueSize(i), keys.get(i));
                    }
                }
                long entries = log.entriesApplied() - entriesBefore;
                assertTrue(entries >= 1 && entries < 10, entries + " log entries for a batch of 40 reads: "
                        + during.stream().map(e -> e.command().getClass().getSimpleName()).toList());
                assertEquals(PutResult.Status.STORED, user.put("durable/after", values.get(0), ReplicateConfig.replicas(1)).status());
                assertArrayEquals(values.get(0), user.get("durable/after"));
                user.close();
                node.close();
            }
        } finally {
            engines.forEach(TransferEngine::close);
        }
    }

    /**
     * A master restored from a snapshot taken at a stop, plus the entries written after it, is in the state a replay
     * of every entry from empty gives (segments, allocators, objects, clients, reservations, counters); its log purged
     * past the client-credential key's entry, it holds the same key from the snapshot and accepts what it issued.
     */
    @Test
    void snapshotPlusTailIsTheStateOfAFullReplay() throws Exception {
        List<LogEntry> journal = new CopyOnWriteArrayList<>();
        byte[] key;
        ClientCredentials.Issued issued;
        // snapshots every 10 entries and small segments: the log is purged past its first entries, the key's among them
        try (StoreMaster m = new StoreMaster(open(dir, new DurableLog.Settings(10, true, 60_000, 2 << 10, 1)),
                StoreClock.system())) {
            m.state().journal(journal::add);
            workload(m, 0);
            key = m.log().credentialKey().get(10, TimeUnit.SECONDS);
            issued = ClientCredentials.of(m).issue();
            Poll.until("the log purged past the key entry", Duration.ofSeconds(10), Duration.ofMillis(20),
                    () -> m.log().role().startIndex() > 10);
        }
        try (Stream<Path> files = Files.walk(dir)) {
            assertTrue(files.anyMatch(f -> f.getFileName().toString().startsWith("snapshot.")), "a snapshot was taken at stop");
        }
        List<String> afterTail;
        try (StoreMaster m = new StoreMaster(open(dir, NO_SNAPSHOTS), StoreClock.system())) {
            assertEquals(journal.size(), m.state().lastApplied(), "restored from the snapshot at the last entry");
            // the key came back with the snapshot (its entry is gone): the same key, and what was issued still holds
            assertArrayEquals(key, m.log().credentialKey().getNow(null), "the group's key after a restart");
            assertTrue(CredentialCheck.accepts(ClientCredentials.of(m), issued), "a credential issued before the restart");
            m.state().journal(journal::add);
            workload(m, 1);
            m.close();
            afterTail = StateDump.of(m.state());
        }
        try (StoreMaster m = new StoreMaster(open(dir, NO_SNAPSHOTS), StoreClock.system())) {
            MasterState replayed = new MasterState(MasterConfig.defaults());
            journal.forEach(replayed::replay);
            assertEquals(StateDump.of(replayed), StateDump.of(m.state()));
            assertEquals(afterTail, StateDump.of(m.state()));
        }
    }

    /** Mounts, puts (some ended, some revoked, some left in flight), reads, removes, a commit into a reservation, ticks. */
    private static void workload(StoreMaster m, int round) {
        String client = "c" + round;
        m.mount(client, new SegmentSpec("seg" + round, "engine" + round, "host" + round, 0, 8 << 20), 1L);
        m.heartbeat(client);
        for (int i = 0; i < 60; i++) {
            String key = "k" + round + "/" + i;
            Command.PutTicket t = m.putStart(client, key, 1000 + i * 64L, ReplicateConfig.defaults(), "host" + round);
            switch (i % 4) {
                case 0, 1 -> m.putEnd(client, key, t.putId());
                case 2 -> m.putRevoke(client, key, t.putId());
                default -> { }
            }
        }
        m.getReplicas("k" + round + "/0");
        m.remove("k" + round + "/1", false);
        StoreException refused = assertThrows(StoreException.class, () -> m.remove("k" + round + "/0", false));
        assertEquals(StoreError.OBJECT_HAS_LEASE, refused.error());
        Command.CommitResult r = m.commit(client, List.of(), List.of(), new Command.Reserve(64 << 10, 1, "host" + round));
        Command.Grant g = r.granted().getFirst();
        m.commit(client, List.of(new Command.CommitItem("r" + round, 4096, new long[] {g.id()},
                new long[] {g.range().address()})), List.of(), null);
        m.apply(new Command.RemoveKeys(List.of("k" + round + "/4", "k" + round + "/5"), false));
        m.tick();
    }

    @Test
    void aCorruptSnapshotIsRefusedNamingIt() throws Exception {
        try (StoreMaster m = new StoreMaster(open(dir, SNAPSHOT_AT_STOP), StoreClock.system())) {
            workload(m, 0);
        }
        Path snapshot;
        try (Stream<Path> files = Files.walk(dir)) {
            snapshot = files.filter(f -> f.getFileName().toString().matches("snapshot\\.\\d+_\\d+")).findFirst().orElseThrow();
        }
        byte[] b = Files.readAllBytes(snapshot);
        b[b.length / 2] ^= 0x40;
        Files.write(snapshot, b);
        IOException e = assertThrows(IOException.class, () -> open(dir, NO_SNAPSHOTS));
        assertTrue(chain(e).contains(snapshot.toString()) && chain(e).contains("corrupt"), chain(e));
    }

    @Test
    void aCorruptLogSegmentIsRefusedNamingIt() throws Exception {
        try (StoreMaster m = new StoreMaster(open(dir, NO_SNAPSHOTS), StoreClock.system())) {
            workload(m, 0);
        }
        Path segment;
        try (Stream<Path> files = Files.walk(dir)) {
            segment = files.filter(f -> f.getFileName().toString().startsWith("log_")).findFirst().orElseThrow();
        }
        byte[] b = Files.readAllBytes(segment);
        b[b.length / 2] ^= 0x40;
        Files.write(segment, b);
        IOException e = assertThrows(IOException.class, () -> open(dir, NO_SNAPSHOTS));
        assertTrue(chain(e).contains(segment.getFileName().toString()), chain(e));
    }

    @Test
    void aForeignDataDirIsRefusedNamingTheFile() throws Exception {
        Files.writeString(dir.resolve("notes.txt"), "someone else's");
        IOException e = assertThrows(IOException.class, () -> open(dir, NO_SNAPSHOTS));
        assertTrue(e.getMessage().contains(dir.resolve(DurableLog.MARKER).toString()), e.getMessage());

        Path other = dir.resolve("other");
        open(other, NO_SNAPSHOTS).close();
        // made by the master: owner-only, as its log and snapshots hold the group's client-credential key
        assertEquals(java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"),
                Files.getPosixFilePermissions(other));
        IOException wrongId = assertThrows(IOException.class,
                () -> DurableLog.open(MasterConfig.defaults(), other, "m2", List.of(), NO_SNAPSHOTS));
        assertTrue(wrongId.getMessage().contains(other.resolve(DurableLog.MARKER).toString())
                && wrongId.getMessage().contains("m1"), wrongId.getMessage());
    }

    /**
     * Three masters on three dirs elect a leader; what the leader acknowledges (each after a majority has it) is
     * applied by both followers to the same state; a follower refuses a write rather than apply it on its own. With
     * small log segments and a snapshot every 10 entries, a follower that was down while the others snapshotted and
     * purged their logs catches up from the leader's snapshot plus the log's tail (Ratis's snapshot install) to the
     * leader's state, read through the {@link StoreMaster} that serves it; so does a follower whose data dir was
     * wiped, which gets the group's client-credential key from the snapshot. The log's metrics move meanwhile: a
     * commit-latency sample per call, the latest snapshot's index, its age on an injected wall clock.
     */
    @Test
    void threeMastersApplyTheSameLogAndOneThatWasDownCatchesUpFromASnapshot() throws Exception {
        List<MasterPeer> peers = new ArrayList<>();
        AtomicLong wallMillis = new AtomicLong(Instant.parse("2030-01-01T00:00:00Z").toEpochMilli());
        InstantSource wall = () -> Instant.ofEpochMilli(wallMillis.get());
        List<DurableLog> logs = openGroup(peers, wall);
        try {
            // a follower's open returns once it knows a leader, which may not be ready yet
            CompletableFuture.anyOf(logs.stream().map(DurableLog::leaderReady).toArray(CompletableFuture[]::new))
                    .get(30, TimeUnit.SECONDS);
            DurableLog leader = logs.stream().filter(l -> l.leaderReady().isDone() && l.leads()).findFirst().orElseThrow();
            StoreMaster m = new StoreMaster(leader, StoreClock.system());
            workload(m, 0);
            long last = leader.state().lastApplied();
            for (DurableLog f : logs) {
                if (f != leader) {
                    StoreException refused = assertThrows(StoreException.class,
                            () -> new StoreMaster(f, StoreClock.system()).heartbeat("c0"));
                    assertEquals(StoreError.NOT_LEADER, refused.error());
                }
            }
            Poll.until("both followers applied the leader's log", Duration.ofSeconds(30), Duration.ofMillis(20),
                    () -> logs.stream().allMatch(f -> f.state().lastApplied() >= last));
            List<String> expected = StateDump.of(leader.state());
            for (DurableLog f : logs) {
                assertEquals(expected, StateDump.of(f.state()));
            }

            // one commit-latency sample per call this master proposed and applied: a single put is two calls (start,
            // end), each its own entry when no other call waits beside it
            long commits = leader.metrics().commits();
            long entries = leader.entriesApplied();
            put(m, "tail/", 0, 5);
            assertEquals(10, leader.metrics().commits() - commits, "a sample per call");
            assertEquals(10, leader.entriesApplied() - entries, "each put call one entry");
            StringBuilder text = new StringBuilder();
            leader.metrics().appendPrometheus(text);
            assertTrue(text.toString().contains("\nstore_raft_commit_latency_seconds_count " + leader.metrics().commits()
                    + "\n") && text.toString().contains("store_raft_commit_latency_seconds_bucket{le=\"+Inf\"} "
                    + leader.metrics().commits() + "\n"), text.toString());

            // a follower stops; the others go on until the leader's log no longer holds the entry after its last
            int down = logs.indexOf(logs.stream().filter(l -> l != leader).findFirst().orElseThrow());
            logs.get(down).close();
            // nothing is in flight: the stopped master's log holds no entry past the leader's last applied
            long stoppedAt = leader.role().appliedIndex();
            int n = 5;
            while (leader.role().startIndex() <= stoppedAt + 1) {
                assertTrue(n < 1_000, "the leader purged its log up to a snapshot within 1,000 puts: " + leader.role());
                put(m, "tail/", n, n + 5);
                n += 5;
            }
            assertTrue(leader.metrics().snapshotIndex() > stoppedAt, "the leader snapshotted past " + stoppedAt);

            DurableLog back = openInGroup(peers.get(down), peers, wall);
            logs.set(down, back);
            StoreMaster serving = new StoreMaster(back, StoreClock.system());
            Poll.until("the restarted master applied what the leader applied", Duration.ofSeconds(20),
                    Duration.ofMillis(20), () -> back.state().lastApplied() == leader.state().lastApplied()
                            && back.role().appliedIndex() >= leader.role().appliedIndex());
            // its log starts past where it stopped: what it missed came as a snapshot, not as entries
            assertTrue(back.role().startIndex() > stoppedAt + 1, "stopped at " + stoppedAt + ", now " + back.role());
            assertTrue(back.metrics().snapshotIndex() > stoppedAt, "holds the leader's snapshot: " + back.metrics().snapshotIndex());
            // the state it serves was replaced under the master serving it
            assertEquals(StateDump.of(leader.state()), StateDump.of(serving.state()));

            // the snapshot's age moves with the wall clock, from when the leader wrote it (nothing is applied now)
            long snapshot = leader.metrics().snapshotIndex();
            wallMillis.addAndGet(7_000);
            assertEquals(7.0, leader.metrics().snapshotAgeSeconds(), 0.0);
            assertEquals(snapshot, leader.metrics().snapshotIndex(), "no snapshot taken meanwhile");

            // the other follower's data dir is wiped while it is down, and it comes back on its own: the leader that
            // tracked it would resend only past the last entry it acknowledged (docs/STORE.md), so the wiped master
            // asks it to step down (CatchUpWatch) and a leader elected after catches it up. That leader's log starts
            // past the key entry, so the wiped master catches up from its snapshot alone and gets the group's key
            // from it: it accepts a credential the first leader issued, and no leader proposed a key of its own
            byte[] key = leader.credentialKey().getNow(null);
            assertTrue(key != null, "the leader holds the group's key");
            ClientCredentials.Issued issued = ClientCredentials.of(m).issue();
            DurableLog gone = logs.stream().filter(l -> l != leader && l != back).findFirst().orElseThrow();
            MasterPeer wiped = peers.stream().filter(p -> p.id().equals(gone.id())).findFirst().orElseThrow();
            gone.close();
            try (Stream<Path> files = Files.walk(dir.resolve(wiped.id()))) {
                for (Path f : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
                    Files.delete(f);
                }
            }
            DurableLog fresh = openInGroup(wiped, peers, wall);
            logs.set(logs.indexOf(gone), fresh);
            Poll.until("the wiped master applied what a new leader applied", Duration.ofSeconds(30),
                    Duration.ofMillis(20), () -> logs.stream().anyMatch(l -> l.leads() && l.leaderReady().isDone()
                            && fresh.state().lastApplied() == l.state().lastApplied()
                            && fresh.role().appliedIndex() >= l.role().appliedIndex()));
            assertTrue(fresh.role().startIndex() > 10, "caught up from a snapshot: " + fresh.role());
            for (DurableLog l : logs) {
                assertArrayEquals(key, l.credentialKey().getNow(null), "one key in the group: " + l.id());
                assertArrayEquals(key, l.state().credentialKey(), "the key is in the state: " + l.id());
            }
            assertTrue(CredentialCheck.accepts(ClientCredentials.of(new StoreMaster(fresh, StoreClock.system())), issued),
                    "the wiped master accepts a credential the first leader issued");
        } finally {
            // each takes about a second (Ratis closes its log worker): all at once
            CompletableFuture.allOf(logs.stream().map(l -> CompletableFuture.runAsync(() -> {
                try {
                    l.close();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            })).toArray(CompletableFuture[]::new)).join();
        }
    }

    /**
     * Three logs opened at once, on fresh ports ({@link FreePorts#startOn}: opened again on other ones, in emptied dirs,
     * when one was taken); {@code peers} is set to the group's.
     */
    private List<DurableLog> openGroup(List<MasterPeer> peers, InstantSource wall) throws IOException {
        GroupPorts.keepJvmOnRatisBindFailure();
        return FreePorts.startOn(3, ports -> {
            peers.clear();
            for (int i = 1; i <= 3; i++) {
                peers.add(new MasterPeer("m" + i, "127.0.0.1:" + ports[i - 1]));
            }
            GroupPorts.wipe(peers.stream().map(p -> dir.resolve(p.id())).toArray(Path[]::new));
            List<CompletableFuture<DurableLog>> opening = new ArrayList<>();
            for (MasterPeer p : peers) {
                opening.add(CompletableFuture.supplyAsync(() -> openInGroup(p, peers, wall)));
            }
            try {
                return new ArrayList<>(opening.stream().map(CompletableFuture::join).toList());
            } catch (java.util.concurrent.CompletionException e) {
                GroupPorts.closeOpened(opening);
                throw e;
            }
        });
    }

    private DurableLog openInGroup(MasterPeer p, List<MasterPeer> peers, InstantSource wall) {
        try {
            return DurableLog.open(MasterConfig.defaults(), dir.resolve(p.id()), p.id(), peers,
                    new DurableLog.Settings(10, false, 60_000, 2 << 10, 1), wall);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Puts keys {@code prefix + from} to {@code prefix + (to - 1)} on a mounted segment, each a start and an end. */
    private static void put(StoreMaster m, String prefix, int from, int to) {
        for (int i = from; i < to; i++) {
            String key = prefix + i;
            m.putEnd("c0", key, m.putStart("c0", key, 1000 + i, ReplicateConfig.defaults(), "host0").putId());
        }
    }

    @Test
    void aPeerListNamingAMasterTwiceIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MasterPeer.parse("a=127.0.0.1:1,b=127.0.0.1:2,a=127.0.0.1:3"));
        assertTrue(e.getMessage().contains("names a"), e.getMessage());
    }

    @Test
    void everyCommandKindEncodesAndDecodesToItself() {
        List<Command<?>> all = List.of(
                new Command.PutStart("c", "k", 10, ReplicateConfig.defaults().withSoftPin(java.time.Duration.ofSeconds(3))
                        .withPreferredSegments(List.of("s")).withExcludedSegments(List.of("x")), "h", true, 7),
                new Command.PutEnd("c", "k", 3), new Command.PutRevoke("c", "k", 4),
                new Command.Commit("c", List.of(), List.of(5L), new Command.Reserve(64, 2, null), 9),
                new Command.GrantRead("k"), new Command.RenewReads(List.of("k", "l")), new Command.Remove("k", true), new Command.RemoveKeys(List.of("a", "b"), true),
                new Command.RemoveAll(false), new Command.Mount("c", new SegmentSpec("s", "e", "h", 1, 2), 1L),
                new Command.Unmount("c", "s"), new Command.Heartbeat("c"), new Command.Leave("c"), new Command.Tick(), new Command.Tick(false),
                new Command.Evict(),
                new Command.EvictVictims(new Command.Victims(7, 4096, true, List.of("d1")),
                        new Command.Victims(9, 8192, false, List.of("m1", "m2"))),
                new Command.Mount("c", new SegmentSpec("d", "e", "h", 1L << 50, 4096, org.tent4j.store.Tier.DISK, "/data/x.disk"), 1L),
                new Command.TakeOffloads("c", 64),
                new Command.OffloadDone("c", List.of(new Command.OffloadResult(3, true, 0xFFFFFFFFL, null),
                        new Command.OffloadResult(4, false, 0, "disk full"))),
                new Command.DropDiskReplicas("c", "d", List.of(new Command.DiskReplica("k", 4096, 10, 0xFFFFFFFFL))));
        CommandCodec.Entry back = CommandCodec.decode(CommandCodec.encode(new CommandCodec.Entry(1, 2, all)));
        assertEquals(all, back.commands());
        Command.CommitItem item = new Command.CommitItem("k", 1, new long[] {1, 2}, new long[] {3, 4});
        Command.Commit c = (Command.Commit) CommandCodec.decode(CommandCodec.encode(new CommandCodec.Entry(1, 2,
                List.of(new Command.Commit("c", List.of(item), List.of(), null, 1))))).commands().getFirst();
        assertArrayEquals(item.addresses(), c.items().getFirst().addresses());
        assertArrayEquals(item.reservations(), c.items().getFirst().reservations());
        byte[] cut = CommandCodec.encode(new CommandCodec.Entry(1, 2, all));
        assertThrows(IllegalArgumentException.class,
                () -> CommandCodec.decode(java.util.Arrays.copyOf(cut, cut.length - 3)));
    }

    private static String chain(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            b.append(c).append(" <- ");
        }
        return b.toString();
    }
}
