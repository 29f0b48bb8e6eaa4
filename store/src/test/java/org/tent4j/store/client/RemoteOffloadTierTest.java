package org.tent4j.store.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.store.ManualClock;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.Tier;
import org.tent4j.store.master.Command;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.MasterState;
import org.tent4j.testkit.Poll;

/**
 * Offloads to another node's disk end to end: node a contributes memory only, node b memory and a disk, each on its
 * own engine (real tcp between them). Objects in a's memory are evicted to b's disk (b reads them from a through its
 * engine and writes its own file), once each, and read back byte for byte from b's disk by a client on another engine.
 */
class RemoteOffloadTierTest {
    private static final int VALUE = 64 << 10;
    private static final Duration LIMIT = Duration.ofSeconds(20);
    private static final Duration PAUSE = Duration.ofMillis(1);

    @TempDir
    Path dir;

    @Test
    void objectsEvictedFromANodeWithoutADiskLandOnAnotherNodesDiskOnceAndReadBackIntact() throws Exception {
        ManualClock clock = new ManualClock();
        try (LoopbackStore store = LoopbackStore.start(clock, MasterConfig.defaults().withClientTtl(Duration.ofDays(1)))) {
            StoreClient a = StoreClient.builder(store.engine(Map.of()), store.address()).offloadPollInterval(Duration.ofMillis(5))
                    .connect();
            String aMemory = a.contribute(1 << 20).id();
            StoreClient b = StoreClient.builder(store.engine(Map.of()), store.address()).offloadPollInterval(Duration.ofMillis(5))
                    .stagingBytes(1 << 20).connect();
            b.contribute(VALUE);
            b.contributeDisk(Files.createDirectories(dir.resolve("b")), 8 << 20);
            StoreClient writer = StoreClient.builder(store.engine(Map.of("transports.enabled", "tcp")), store.address())
                    .clock(clock).reservationBytes(0).stagingBytes(1 << 20).connect();
            try {
                MasterState state = store.server().master().state();
                ReplicateConfig onA = ReplicateConfig.defaults().withPreferredSegments(List.of(aMemory));
                Map<String, Long> written = new ConcurrentHashMap<>();
                for (int round = 0; round < 8; round++) { // 8 x 4 x 64 KiB = 2 MiB into a's 1 MiB
                    for (int i = 0; i < 4; i++) {
                        String key = "r" + round + "/" + i;
                        writer.put(key, value(round * 100L + i), onA);
                        written.put(key, round * 100L + i);
                    }
                    clock.advance(Duration.ofSeconds(11)); // past the put's leases
                    // evictions racing each other while b's offloads are in flight: none may start a second of a key
                    CountDownLatch go = new CountDownLatch(1);
                    List<Thread> evictors = new ArrayList<>();
                    for (int e = 0; e < 3; e++) {
                        Command evict = e % 2 == 0 ? new Command.Evict() : new Command.Tick();
                        Thread t = new Thread(() -> {
                            try {
                                go.await();
                                state.apply(clock.nanoTime(), evict);
                            } catch (InterruptedException x) {
                                Thread.currentThread().interrupt();
                            }
                        });
                        t.start();
                        evictors.add(t);
                    }
                    state.apply(clock.nanoTime(), new Command.Tick());
                    go.countDown();
                    for (Thread t : evictors) {
                        t.join(10_000);
                    }
                    Poll.until("the offloads of round " + round + " are done", LIMIT, PAUSE, () -> {
                        MasterState.Tiering t = state.stats().tiering();
                        return t.offloadsInFlight() == 0
                                && t.offloadsStarted() == t.offloadsCompleted() + t.offloadsFailed() + t.offloadsCancelled();
                    });
                }
                MasterState.Tiering t = state.stats().tiering();
                assertTrue(t.offloadsRemote() > 0, "offloads went to b's disk: " + t);
                assertEquals(0, t.offloadsFailed(), t.toString());
                assertEquals(0, t.offloadsDuplicate(), "no key offloaded twice: " + t);
                assertEquals(0, b.duplicateOffloads());
                assertEquals(t.offloadsStarted(), t.offloadsCompleted(), t.toString());
                assertEquals(t.offloadsCompleted(), b.offloadsCompleted(), "b ran every offload");
                assertEquals(0, a.offloadsCompleted(), "a has no disk: it ran none");
                assertEquals(written.size(), state.objectCount(), "nothing dropped");

                // each object on disk is on b's, its CRC32C that of its bytes, and every one reads back intact through
                // the writer's engine (b's tcp file serving for the disk ones)
                Set<Long> offsets = new HashSet<>();
                int onDisk = 0;
                for (Map.Entry<String, Long> e : written.entrySet()) {
                    List<ReplicaLocation> rs = state.describe(clock.nanoTime(), e.getKey()).replicas();
                    for (ReplicaLocation r : rs) {
                        if (r.onDisk()) {
                            onDisk++;
                            assertTrue(r.file().startsWith(dir.resolve("b").toString()), r.file());
                            assertEquals(crc(value(e.getValue())), r.crc32c(), e.getKey());
                            assertTrue(offsets.add(r.fileOffset()), "one disk range per object");
                            assertArrayEquals(value(e.getValue()), fileBytes(r), e.getKey() + " as b's file holds it");
                        }
                    }
                    assertArrayEquals(value(e.getValue()), writer.get(e.getKey()), e.getKey());
                }
                assertTrue(onDisk >= written.size() / 2, onDisk + " of " + written.size() + " on b's disk");
                assertTrue(state.stats().tiering().diskReads() >= onDisk);
                assertEquals(0, writer.checksumFailures());
            } finally {
                writer.close();
                a.close();
                b.close();
            }
        }
    }

    @Test
    void aWriteThroughPutOnANodeWithoutADiskIsWrittenToAnotherNodesDisk() throws Exception {
        ManualClock clock = new ManualClock();
        try (LoopbackStore store = LoopbackStore.start(clock, MasterConfig.defaults().withClientTtl(Duration.ofDays(1)))) {
            StoreClient a = StoreClient.builder(store.engine(Map.of()), store.address()).connect();
            String aMemory = a.contribute(1 << 20).id();
            StoreClient b = StoreClient.builder(store.engine(Map.of()), store.address()).offloadPollInterval(Duration.ofMillis(5))
                    .stagingBytes(1 << 20).connect();
            b.contributeDisk(Files.createDirectories(dir.resolve("b")), 1 << 20);
            StoreClient writer = StoreClient.builder(store.engine(Map.of("transports.enabled", "tcp")), store.address())
                    .clock(clock).reservationBytes(0).stagingBytes(1 << 20).connect();
            try {
                MasterState state = store.server().master().state();
                byte[] bytes = value(-1);
                writer.put("through", bytes, ReplicateConfig.defaults().withPreferredSegments(List.of(aMemory))
                        .withWriteThrough(true));
                Poll.until("the write-through offload is done", LIMIT, PAUSE,
                        () -> state.stats().tiering().offloadsCompleted() == 1);
                List<ReplicaLocation> both = state.describe(clock.nanoTime(), "through").replicas();
                assertEquals(List.of(Tier.MEMORY, Tier.DISK), both.stream().map(ReplicaLocation::tier).toList());
                assertEquals(aMemory, both.get(0).segmentId());
                assertTrue(both.get(1).file().startsWith(dir.resolve("b").toString()), both.get(1).file());
                assertEquals(crc(bytes), both.get(1).crc32c(), "the CRC32C of the bytes b wrote");
                assertArrayEquals(bytes, fileBytes(both.get(1)), "b's file holds the value");
                assertEquals(1, b.offloadsCompleted());
                assertEquals(1, state.stats().tiering().offloadsRemote());
                assertArrayEquals(bytes, writer.get("through"));
            } finally {
                writer.close();
                a.close();
                b.close();
            }
        }
    }

    private static byte[] fileBytes(ReplicaLocation r) throws Exception {
        try (FileChannel ch = FileChannel.open(Path.of(r.file()))) {
            ByteBuffer buf = ByteBuffer.allocate((int) r.length());
            while (buf.hasRemaining() && ch.read(buf, r.fileOffset() + buf.position()) > 0) {
                // read until the range is whole
            }
            return buf.array();
        }
    }

    private static long crc(byte[] bytes) {
        CRC32C c = new CRC32C();
        c.update(bytes);
        return c.getValue();
    }

    private static byte[] value(long seed) {
        byte[] v = new byte[VALUE];
        new Random(seed).nextBytes(v);
        return v;
    }
}
