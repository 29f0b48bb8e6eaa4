package org.tent4j.store.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.tent4j.testkit.Poll;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.store.ManualClock;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.Tier;
import org.tent4j.store.master.Command;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.MasterState;

/**
 * The disk tier end to end: a master, two nodes with memory and disk segments and a writer, each on its own engine
 * (real tcp between them, nvmeof for a node's own file), in virtual time that only the test moves. Every value is
 * compared byte for byte.
 */
class DiskTierTest {
    private static final int VALUE = 64 << 10;
    private static final long MEMORY = 1 << 20;
    private static final Duration LIMIT = Duration.ofSeconds(20);
    /** In-process state, looked at every millisecond: a round waits on it 32 times. */
    private static final Duration PAUSE = Duration.ofMillis(1);

    @TempDir
    Path dir;

    @Test
    void aFloodOfFourTimesMemoryIsReadableFromMemoryOrDiskAndNoKeyIsOffloadedTwice() throws Exception {
        ManualClock clock = new ManualClock();
        // clients never expire here: the test moves virtual time past read leases while real pings lag behind
        try (LoopbackStore store = LoopbackStore.start(clock, MasterConfig.defaults().withClientTtl(Duration.ofDays(1)))) {
            StoreClient a = node(store, "a");
            StoreClient b = node(store, "b");
            StoreClient writer = writer(store, clock);
            try {
                MasterState state = store.server().master().state();
                long capacity = 2 * MEMORY;
                Map<String, Long> written = new ConcurrentHashMap<>();
                for (int round = 0; round < 32; round++) { // 32 x 4 x 64 KiB = 8 MiB into 2 MiB
                    putRound(writer, state, clock, written, "flood/" + round + "/", round * 100L);
                    long used = memoryUsed(state);
                    assertTrue(used <= 0.90 * capacity, "after round " + round + " " + used + " of " + capacity
                            + " bytes used; " + state.stats() + " " + state.segments());
                }
                MasterState.Tiering t = state.stats().tiering();
                assertEquals(0, t.offloadsFailed(), t.toString());
                assertEquals(t.offloadsStarted(), t.offloadsCompleted(), t.toString());
                assertEquals(t.offloadsCompleted(), a.offloadsCompleted() + b.offloadsCompleted());
                assertEquals(t.offloadsCompleted(), state.stats().evictedObjects(), "every victim went to disk");
                assertEquals(written.size(), state.objectCount(), "nothing dropped");

                // every object is held once, in memory or on disk, and each tier's usage is exactly its objects'
                long memoryBytes = 0;
                long diskBytes = 0;
                int onDisk = 0;
                for (String key : written.keySet()) {
                    List<ReplicaLocation> rs = state.describe(clock.nanoTime(), key).replicas();
                    assertEquals(1, rs.size(), key + ": " + rs);
                    if (rs.get(0).onDisk()) {
                        onDisk++;
                        diskBytes += (VALUE + 4095) / 4096 * 4096;
                    } else {
                        memoryBytes += VALUE;
                    }
                }
                assertTrue(onDisk >= written.size() / 2, onDisk + " of " + written.size() + " on disk");
                assertEquals(memoryBytes, memoryUsed(state), "memory used = the objects in memory");
                assertEquals(diskBytes, state.segments().stream().filter(s -> s.tier() == Tier.DISK)
                        .mapToLong(MasterState.SegmentView::used).sum(), "disk used = the objects on disk");

                // read back: the writer reads every disk object from another engine's file (tcp file serving), a node
                // its own (nvmeof) and the other's
                for (Map.Entry<String, Long> e : written.entrySet()) {
                    assertArrayEquals(value(e.getValue()), writer.get(e.getKey()), e.getKey());
                }
                assertTrue(state.stats().tiering().diskReads() >= onDisk, state.stats().tiering().toString());
                String ofA = diskKeyOf(state, clock, written, "a");
                String ofB = diskKeyOf(state, clock, written, "b");
                assertArrayEquals(value(written.get(ofA)), a.get(ofA), "node a reads its own disk");
                assertArrayEquals(value(written.get(ofB)), a.get(ofB), "node a reads node b's disk (same host: nvmeof)");
                // a range inside a disk object (read whole, checked, copied out) and a session's batch
                RegisteredMemory dst = writer.engine().allocate(2 * VALUE, Location.CPU, Permission.READ_WRITE);
                try (GetSession s = writer.getSession(List.of(ofA, ofB))) {
                    MemorySegment part = dst.segment().asSlice(0, 1000);
                    s.read(0, 5000, part);
                    assertArrayEquals(Arrays.copyOfRange(value(written.get(ofA)), 5000, 6000), part.toArray(ValueLayout.JAVA_BYTE));
                    var batch = s.readBatch(0, List.of(dst.segment().asSlice(0, VALUE), dst.segment().asSlice(VALUE, VALUE)));
                    assertEquals(VALUE, batch.get(0).get());
                    assertEquals(VALUE, batch.get(1).get());
                    assertArrayEquals(value(written.get(ofB)), dst.segment().asSlice(VALUE, VALUE).toArray(ValueLayout.JAVA_BYTE));
                } finally {
                    writer.engine().unregister(dst);
                }

                // readers racing evictions and offloads: every value they get is checked, no key is offloaded twice
                AtomicBoolean stop = new AtomicBoolean();
                AtomicReference<Throwable> readerFailed = new AtomicReference<>();
                AtomicLong reads = new AtomicLong();
                List<Thread> readers = new ArrayList<>();
                for (int r = 0; r < 2; r++) {
                    long seed = r;
                    Thread reader = new Thread(() -> {
                        Random rnd = new Random(seed);
                        try (StoreClient c = StoreClient.builder(remote(store), store.address()).clock(clock).connect()) {
                            while (!stop.get()) {
                                List<String> keys = new ArrayList<>(written.keySet());
                                String k = keys.get(rnd.nextInt(keys.size()));
                                assertArrayEquals(value(written.get(k)), c.get(k), k);
                                reads.incrementAndGet();
                            }
                        } catch (Throwable x) {
                            readerFailed.set(x);
                        }
                    });
                    reader.start();
                    readers.add(reader);
                }
                for (int round = 0; round < 12; round++) {
                    putRound(writer, state, clock, written, "race/" + round + "/", 10_000 + round * 100L);
                }
                stop.set(true);
                for (Thread r : readers) {
                    r.join(30_000);
                }
                if (readerFailed.get() != null) {
                    throw new AssertionError("a concurrent reader failed", readerFailed.get());
                }
                assertTrue(reads.get() > 0);
                t = state.stats().tiering();
                assertEquals(0, t.offloadsDuplicate(), "no key offloaded twice: " + t);
                assertEquals(0, a.duplicateOffloads() + b.duplicateOffloads());
                assertEquals(t.offloadsStarted(), t.offloadsCompleted() + t.offloadsCancelled() + t.offloadsFailed(), t.toString());
                for (Map.Entry<String, Long> e : written.entrySet()) {
                    assertArrayEquals(value(e.getValue()), writer.get(e.getKey()), e.getKey());
                }
                assertEquals(0, writer.checksumFailures() + a.checksumFailures());
            } finally {
                writer.close();
                a.close();
                b.close();
            }
        }
    }

    @Test
    void aPutFloodWithNoHousekeepingKeepsMemoryNearTheWatermarkAndOffloadsOnlyTheExcess() throws Exception {
        ManualClock clock = new ManualClock();
        try (LoopbackStore store = LoopbackStore.start(clock, MasterConfig.defaults().withClientTtl(Duration.ofDays(1)))) {
            // a node slower to come back than a waiting put's first tries (1, 2, 4, ... ms): each try finds the
            // offloads still in flight, as a node polling every 100 ms does
            StoreClient a = node(store, "a", Duration.ofMillis(40));
            StoreClient writer = writer(store, clock);
            try {
                MasterState state = store.server().master().state();
                int slots = (int) (MEMORY / VALUE);
                int n = 4 * slots;
                // no round of housekeeping: only the evictor thread and the puts themselves make room, and puts into
                // the full memory wait for the node's offloads (RoomWait)
                long lowest = MEMORY;
                for (int i = 0; i < n; i++) {
                    writer.put("overflow/" + i, value(50_000 + i), ReplicateConfig.defaults());
                    if (i >= slots) {
                        // what memory keeps, less what is being offloaded (an offload completing between the two looks
                        // makes it one value less: the bound below leaves room for that)
                        long offloading = state.stats().tiering().offloadsInFlight() * (long) VALUE;
                        lowest = Math.min(lowest, memoryUsed(state) - offloading);
                    }
                }
                Poll.until("the flood's offloads are done", LIMIT, PAUSE, () -> {
                    MasterState.Tiering t = state.stats().tiering();
                    return t.offloadsInFlight() == 0 && t.offloadsStarted() == t.offloadsCompleted() + t.offloadsFailed();
                });
                MasterState.Tiering t = state.stats().tiering();
                assertEquals(n, state.objectCount(), "nothing dropped: " + t);
                assertEquals(0, t.offloadsFailed() + t.offloadsDuplicate(), t.toString());
                long used = memoryUsed(state);
                assertTrue(lowest >= MEMORY / 2, "once full, memory kept as little as " + lowest + " of " + MEMORY
                        + " bytes (less what was being offloaded): " + t);
                assertTrue(used >= MEMORY / 2, "memory holds " + used + " of " + MEMORY + " bytes after the flood: " + t);
                assertTrue(t.offloadsStarted() <= n - slots / 2, t.offloadsStarted() + " offloads for " + n
                        + " values into memory for " + slots);
                for (int i = 0; i < n; i++) {
                    assertArrayEquals(value(50_000 + i), writer.get("overflow/" + i), "overflow/" + i);
                }
                assertEquals(0, writer.checksumFailures());
            } finally {
                writer.close();
                a.close();
            }
        }
    }

    /**
     * Puts four values, moves virtual time past the read leases, and runs a housekeeping round (parked ranges back,
     * eviction: offloads), waiting until the nodes completed its offloads.
     */
    private static void putRound(StoreClient writer, MasterState state, ManualClock clock, Map<String, Long> written,
                                 String prefix, long seed) throws InterruptedException {
        putRound(writer, state, clock, written, prefix, seed, 4);
    }

    private static void putRound(StoreClient writer, MasterState state, ManualClock clock, Map<String, Long> written,
                                 String prefix, long seed, int values) throws InterruptedException {
        for (int i = 0; i < values; i++) {
            writer.put(prefix + i, value(seed + i), ReplicateConfig.defaults());
            written.put(prefix + i, seed + i);
        }
        clock.advance(Duration.ofSeconds(11));
        state.apply(clock.nanoTime(), new Command.Tick());
        // an offload leaves the in-flight set before its memory is freed and it is counted: wait for the count
        Poll.until("the offloads of " + prefix + " are done", LIMIT, PAUSE, () -> {
            MasterState.Tiering t = state.stats().tiering();
            return t.offloadsInFlight() == 0
                    && t.offloadsStarted() == t.offloadsCompleted() + t.offloadsFailed() + t.offloadsCancelled();
        });
    }

    @Test
    void aByteFlippedInTheDiskFileIsReportedAsChecksumMismatchNamingKeyFileAndOffsetAndScrubDropsIt() throws Exception {
        ManualClock clock = new ManualClock();
        try (LoopbackStore store = LoopbackStore.start(clock, MasterConfig.defaults().withClientTtl(Duration.ofDays(1)))) {
            StoreClient a = node(store, "a");
            StoreClient writer = writer(store, clock);
            try {
                MasterState state = store.server().master().state();
                Map<String, Long> written = new ConcurrentHashMap<>();
                for (int round = 0; round < 10; round++) { // 1.25 MiB into 1 MiB
                    putRound(writer, state, clock, written, "k" + round + "/", round * 4L, 2);
                }
                String key = diskKeyOf(state, clock, written, "a");
                ReplicaLocation r = state.describe(clock.nanoTime(), key).replicas().getFirst();
                Path file = Path.of(r.file());
                try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                    ByteBuffer one = ByteBuffer.allocate(1);
                    ch.read(one, r.fileOffset() + 100);
                    one.flip();
                    byte flipped = (byte) (one.get(0) ^ 0x01);
                    ch.write(ByteBuffer.wrap(new byte[]{flipped}), r.fileOffset() + 100);
                    ch.force(false);
                }
                for (StoreClient c : List.of(writer, a)) { // over tcp, and through the node's own nvmeof
                    StoreException e = assertThrows(StoreException.class, () -> c.get(key));
                    assertEquals(StoreError.CHECKSUM_MISMATCH, e.error(), e.getMessage());
                    assertTrue(e.getMessage().contains("'" + key + "'") && e.getMessage().contains(file.toString())
                            && e.getMessage().contains("offset " + r.fileOffset()) && e.getMessage().contains(r.segmentId()),
                            e.getMessage());
                }
                var batch = writer.getBatch(List.of(key, "k9/0"));
                assertEquals(StoreError.CHECKSUM_MISMATCH, batch.get(0).error().error());
                assertArrayEquals(value(written.get("k9/0")), batch.get(1).get());
                assertEquals(2, writer.checksumFailures());
                // the other objects are intact
                for (Map.Entry<String, Long> e : written.entrySet()) {
                    if (!e.getKey().equals(key)) {
                        assertArrayEquals(value(e.getValue()), writer.get(e.getKey()), e.getKey());
                    }
                }
                // a scrub of the node's disk finds exactly that replica, and the master drops it: never read again
                long onDisk = written.keySet().stream().filter(k -> state.describe(clock.nanoTime(), k).replicas().stream()
                        .anyMatch(ReplicaLocation::onDisk)).count();
                clock.advance(Duration.ofSeconds(11)); // past the leases of the reads above
                ScrubReport report = a.scrubDisk();
                assertEquals(onDisk, report.checked());
                assertEquals(List.of(key), report.corrupt());
                assertEquals(1, report.dropped());
                assertEquals(1, state.stats().tiering().scrubDropped());
                StoreException gone = assertThrows(StoreException.class, () -> writer.get(key));
                assertEquals(StoreError.OBJECT_NOT_FOUND, gone.error(), gone.getMessage());
                assertEquals(List.of(), a.scrubDisk().corrupt(), "a second scrub finds nothing");
                assertEquals(StoreError.INVALID_PARAMS, assertThrows(StoreException.class, writer::scrubDisk).error());
            } finally {
                writer.close();
                a.close();
            }
        }
    }

    @Test
    void aDiskObjectReadTwiceIsPromotedBackIntoMemoryAndServedFromThere() throws Exception {
        ManualClock clock = new ManualClock();
        try (LoopbackStore store = LoopbackStore.start(clock, MasterConfig.defaults().withClientTtl(Duration.ofDays(1))
                .withPromoteAfterHits(2))) {
            StoreClient a = node(store, "a");
            StoreClient writer = writer(store, clock);
            try {
                MasterState state = store.server().master().state();
                Map<String, Long> written = new ConcurrentHashMap<>();
                for (int round = 0; round < 10; round++) {
                    putRound(writer, state, clock, written, "p" + round + "/", round * 4L, 2);
                }
                String key = diskKeyOf(state, clock, written, "a");
                assertArrayEquals(value(written.get(key)), writer.get(key));
                assertArrayEquals(value(written.get(key)), writer.get(key), "the read that promotes reads from disk");
                Poll.until("the promotion is done", LIMIT, PAUSE, () -> state.stats().tiering().promotionsCompleted() == 1);
                assertEquals(List.of(Tier.MEMORY, Tier.DISK), state.describe(clock.nanoTime(), key).replicas().stream()
                        .map(ReplicaLocation::tier).toList());
                long diskReads = state.stats().tiering().diskReads();
                assertArrayEquals(value(written.get(key)), writer.get(key));
                assertEquals(diskReads, state.stats().tiering().diskReads(), "served from memory now");
                assertEquals(1, state.stats().tiering().promotionsStarted());
            } finally {
                writer.close();
                a.close();
            }
        }
    }

    @Test
    void aWriteThroughPutIsOnDiskWithoutAnEvictionAndReadFromThereOnceItsMemoryCopyIsEvicted() throws Exception {
        ManualClock clock = new ManualClock();
        try (LoopbackStore store = LoopbackStore.start(clock, MasterConfig.defaults().withClientTtl(Duration.ofDays(1)))) {
            StoreClient a = node(store, "a");
            StoreClient writer = writer(store, clock);
            try {
                MasterState state = store.server().master().state();
                byte[] bytes = value(-1);
                writer.put("through", bytes, ReplicateConfig.defaults().withWriteThrough(true));
                Poll.until("the write-through offload is done", LIMIT, PAUSE,
                        () -> state.stats().tiering().offloadsCompleted() == 1);
                List<ReplicaLocation> both = state.describe(clock.nanoTime(), "through").replicas();
                assertEquals(List.of(Tier.MEMORY, Tier.DISK), both.stream().map(ReplicaLocation::tier).toList());
                java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
                crc.update(bytes);
                assertEquals(crc.getValue(), both.get(1).crc32c(), "the CRC32C of the bytes the node wrote");
                assertEquals(0, state.stats().evictedObjects(), "on disk without any eviction");
                assertEquals(1, state.stats().tiering().writeThroughStarted());
                // memory fills with other puts until its copy is evicted: only the memory copy goes
                Map<String, Long> written = new ConcurrentHashMap<>();
                for (int round = 0; round < 16 && state.describe(clock.nanoTime(), "through").replicas().size() > 1; round++) {
                    putRound(writer, state, clock, written, "fill/" + round + "/", round * 100L);
                }
                List<ReplicaLocation> disk = state.describe(clock.nanoTime(), "through").replicas();
                assertEquals(List.of(Tier.DISK), disk.stream().map(ReplicaLocation::tier).toList());
                assertEquals(both.get(1).fileOffset(), disk.get(0).fileOffset(), "the disk replica written through");
                assertArrayEquals(bytes, writer.get("through"), "read from node a's disk (tcp file serving)");
                assertEquals(1, state.stats().tiering().writeThroughStarted(), "never offloaded again");
                assertEquals(0, state.stats().tiering().offloadsDuplicate());
            } finally {
                writer.close();
                a.close();
            }
        }
    }

    @Test
    void aBadDiskDirOrSizeIsRefusedNamingTheDirAndMountsNothing() throws Exception {
        try (LoopbackStore store = LoopbackStore.start(new ManualClock())) {
            StoreClient a = StoreClient.builder(store.engine(), store.address()).connect();
            try {
                Path missing = dir.resolve("missing");
                Path plainFile = Files.writeString(dir.resolve("plain"), "x");
                for (Runnable bad : List.<Runnable>of(() -> a.contributeDisk(missing, 1 << 20),
                        () -> a.contributeDisk(plainFile, 1 << 20), () -> a.contributeDisk(dir, 0),
                        () -> a.contributeDisk(dir, -5))) {
                    StoreException e = assertThrows(StoreException.class, bad::run);
                    assertEquals(StoreError.INVALID_PARAMS, e.error());
                    assertTrue(e.getMessage().contains(dir.toString()), e.getMessage());
                }
                assertTrue(store.server().master().segments().isEmpty(), "nothing mounted");
                try (var files = Files.list(dir)) {
                    assertEquals(List.of(plainFile), files.toList(), "no file left behind");
                }
                a.contributeDisk(dir, 1 << 20);
                StoreException twice = assertThrows(StoreException.class, () -> a.contributeDisk(dir, 1 << 20));
                assertEquals(StoreError.INVALID_PARAMS, twice.error());
                assertEquals(1, store.server().master().segments().size());
            } finally {
                a.close();
            }
            try (var files = Files.list(dir)) {
                assertEquals(3, files.count(), "the disk file and its index stay for a restart");
            }
        }
    }

    @Test
    void aDiskDirHoldingAFileOfAnotherSizeOrAForeignOneIsRefusedNamingTheFile() throws Exception {
        try (LoopbackStore store = LoopbackStore.start(new ManualClock())) {
            Path made = Files.createDirectories(dir.resolve("made"));
            StoreClient first = StoreClient.builder(store.engine(), store.address()).connect();
            first.contributeDisk(made, 1 << 20);
            first.close();
            Path foreign = Files.createDirectories(dir.resolve("foreign"));
            Files.write(foreign.resolve("tent4j-store.disk"), new byte[8192]);
            Path badIndex = Files.createDirectories(dir.resolve("bad-index"));
            Files.write(badIndex.resolve("tent4j-store.disk"), new byte[8192]);
            Files.writeString(badIndex.resolve("tent4j-store.disk.index"), "not an index");
            StoreClient a = StoreClient.builder(store.engine(), store.address()).connect();
            try {
                // the file named, and why
                Map<Path, Map.Entry<String, Runnable>> bad = Map.of(
                        made.resolve("tent4j-store.disk"), Map.entry("disk file " + made.resolve("tent4j-store.disk")
                                + " holds " + (1 << 20) + " bytes, but the disk size asked for is " + (2 << 20),
                                () -> a.contributeDisk(made, 2 << 20)),
                        foreign.resolve("tent4j-store.disk"), Map.entry("disk file " + foreign.resolve("tent4j-store.disk")
                                + " has no index beside it", () -> a.contributeDisk(foreign, 8192)),
                        badIndex.resolve("tent4j-store.disk.index"), Map.entry("disk index "
                                + badIndex.resolve("tent4j-store.disk.index") + " is not a tent4j disk index",
                                () -> a.contributeDisk(badIndex, 8192)));
                for (Map.Entry<Path, Map.Entry<String, Runnable>> e : bad.entrySet()) {
                    byte[] before = Files.readAllBytes(e.getKey());
                    StoreException refused = assertThrows(StoreException.class, e.getValue().getValue()::run);
                    assertEquals(StoreError.INVALID_PARAMS, refused.error());
                    assertTrue(refused.getMessage().contains(e.getValue().getKey()), refused.getMessage());
                    assertArrayEquals(before, Files.readAllBytes(e.getKey()), "left as it was: " + e.getKey());
                }
                assertTrue(store.server().master().segments().stream().noneMatch(s -> s.tier() == Tier.DISK), "no disk mounted");
                assertEquals(1 << 20, Files.size(made.resolve("tent4j-store.disk")));
                a.contributeDisk(made, 1 << 20); // the size it was made for: reopened
            } finally {
                a.close();
            }
        }
    }

    private StoreClient node(LoopbackStore store, String name) throws Exception {
        return node(store, name, Duration.ofMillis(5));
    }

    private StoreClient node(LoopbackStore store, String name, Duration poll) throws Exception {
        // nodes on one host open each other's files through nvmeof, under the roots they are allowed
        StoreClient n = StoreClient.builder(store.engine(Map.of("transports.nvmeof.peer_roots", dir.toString())), store.address())
                .offloadPollInterval(poll).stagingBytes(1 << 20).connect();
        n.contribute(MEMORY);
        n.contributeDisk(Files.createDirectories(dir.resolve(name)), 8 << 20);
        return n;
    }

    /** A client on a {@link #remote} engine that puts without reservations, on the test's clock. */
    private static StoreClient writer(LoopbackStore store, ManualClock clock) {
        return StoreClient.builder(remote(store), store.address()).clock(clock).reservationBytes(0).stagingBytes(1 << 20)
                .connect();
    }

    /** An engine as on another host: no nvmeof, so a node's file is reached through its tcp file serving. */
    private static org.tent4j.api.TransferEngine remote(LoopbackStore store) {
        return store.engine(Map.of("transports.enabled", "tcp"));
    }

    private static long memoryUsed(MasterState state) {
        return state.segments().stream().filter(s -> s.tier() == Tier.MEMORY).mapToLong(MasterState.SegmentView::used).sum();
    }

    /** A key whose only replica is on {@code node}'s disk. */
    private static String diskKeyOf(MasterState state, ManualClock clock, Map<String, Long> keys, String node) {
        for (String k : keys.keySet()) {
            List<ReplicaLocation> rs = state.describe(clock.nanoTime(), k).replicas();
            if (rs.size() == 1 && rs.get(0).onDisk() && rs.get(0).file().contains("/" + node + "/")) {
                return k;
            }
        }
        throw new AssertionError("no object on " + node + "'s disk");
    }

    private static byte[] value(long seed) {
        byte[] v = new byte[VALUE];
        new Random(seed).nextBytes(v);
        return v;
    }
}
