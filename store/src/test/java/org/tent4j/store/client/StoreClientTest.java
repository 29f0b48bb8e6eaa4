package org.tent4j.store.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.rpc.MasterServer;

/** Clients and a master in one JVM, over real gRPC and real transfer engines (loopback). */
class StoreClientTest {
    private static MasterServer server;
    private static LoopbackStore store;
    private static StoreClient a;
    private static StoreClient b;
    private static StoreClient requester;
    private static String address;

    static TransferEngine engine() {
        return store.engine();
    }

    @BeforeAll
    static void start() throws Exception {
        store = LoopbackStore.start();
        server = store.server();
        address = store.address();
        a = store.client(8 << 20);
        b = store.client(8 << 20);
        requester = store.client(8 << 20);
        a.contribute(32 << 20);
        b.contribute(32 << 20);
    }

    @AfterAll
    static void stop() {
        for (StoreClient c : new StoreClient[]{requester, a, b}) {
            if (c != null) {
                c.close();
            }
        }
        if (store != null) {
            store.close();
        }
    }

    static byte[] random(int n, long seed) {
        byte[] v = new byte[n];
        new Random(seed).nextBytes(v);
        return v;
    }

    static long crc(byte[] v) {
        CRC32C c = new CRC32C();
        c.update(v);
        return c.getValue();
    }

    private static void assertError(StoreError expected, String part, Executable call) {
        StoreException e = assertThrows(StoreException.class, call);
        assertEquals(expected, e.error(), e.getMessage());
        assertTrue(e.getMessage().contains(part), e.getMessage() + " should mention " + part);
    }

    @Test
    void putAndGetAcrossClientsWithTwoReplicasOnDistinctSegments() {
        byte[] v = random(1 << 20, 1);
        assertEquals(PutResult.Status.STORED, requester.put("t/two", v, ReplicateConfig.replicas(2)).status());
        List<ReplicaLocation> rs = requester.master().getReplicaList("t/two").getReplicasList().stream()
                .map(org.tent4j.store.rpc.Wire::replica).toList();
        assertEquals(2, rs.stream().map(ReplicaLocation::segmentId).distinct().count());
        assertEquals(crc(v), crc(requester.get("t/two")));
        assertEquals(crc(v), crc(a.get("t/two")), "read from a's own segment by copy");
        assertEquals(PutResult.Status.ALREADY_EXISTS, b.put("t/two", random(10, 2)).status());
        assertEquals(crc(v), crc(b.get("t/two")));
        assertEquals(1 << 20, requester.size("t/two"));
    }

    @Test
    void zeroCopyAndMultiBufferPutAndGet() {
        TransferEngine e = requester.engine();
        RegisteredMemory src = e.allocate(3 << 20, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory dst = e.allocate(3 << 20, Location.CPU, Permission.READ_WRITE);
        try {
            MemorySegment.copy(MemorySegment.ofArray(random(3 << 20, 3)), 0, src.segment(), 0, 3 << 20);
            requester.putFrom("t/zc", src.segment().asSlice(0, 1 << 20), ReplicateConfig.defaults());
            assertEquals(1 << 20, requester.getInto("t/zc", dst.segment()));
            assertEquals(src.segment().asSlice(0, 1 << 20).mismatch(dst.segment().asSlice(0, 1 << 20)), -1);

            requester.putFromParts("t/parts", List.of(src.segment().asSlice(0, 1000), src.segment().asSlice(2 << 20, 5000)), ReplicateConfig.replicas(2));
            MemorySegment d1 = dst.segment().asSlice(0, 3000);
            MemorySegment d2 = dst.segment().asSlice(1 << 20, 3000);
            assertEquals(6000, requester.getIntoParts("t/parts", List.of(d1, d2)));
            assertEquals(-1, d1.asSlice(0, 1000).mismatch(src.segment().asSlice(0, 1000)));
            assertEquals(-1, d1.asSlice(1000, 2000).mismatch(src.segment().asSlice(2 << 20, 2000)));
            assertEquals(-1, d2.mismatch(src.segment().asSlice((2 << 20) + 2000, 3000)));

            assertError(StoreError.INVALID_PARAMS, "too small for key 't/zc'", () -> requester.getInto("t/zc", dst.segment().asSlice(0, 100)));
        } finally {
            e.unregister(src);
            e.unregister(dst);
        }
    }

    @Test
    void batchPutAndBatchGet() {
        TransferEngine e = requester.engine();
        int n = 64;
        RegisteredMemory src = e.allocate(n * 4096L, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory dst = e.allocate(n * 4096L, Location.CPU, Permission.READ_WRITE);
        try {
            MemorySegment.copy(MemorySegment.ofArray(random(n * 4096, 4)), 0, src.segment(), 0, n * 4096L);
            List<String> keys = new ArrayList<>();
            List<MemorySegment> srcs = new ArrayList<>();
            List<MemorySegment> dsts = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                keys.add("t/batch/" + i);
                srcs.add(src.segment().asSlice(i * 4096L, 4096));
                dsts.add(dst.segment().asSlice(i * 4096L, 4096));
            }
            requester.putBatchFrom(keys, srcs, ReplicateConfig.defaults()).forEach(o -> assertEquals(PutResult.Status.STORED, o.get().status()));
            List<String> withMissing = new ArrayList<>(keys);
            withMissing.add("t/batch/missing");
            List<MemorySegment> dstsPlus = new ArrayList<>(dsts);
            dstsPlus.add(dst.segment().asSlice(0, 16));
            List<Outcome<Long>> got = requester.getBatchInto(withMissing, dstsPlus);
            for (int i = 0; i < n; i++) {
                assertEquals(4096L, got.get(i).get());
            }
            assertEquals(StoreError.OBJECT_NOT_FOUND, got.get(n).error().error());
            assertEquals(-1, src.segment().mismatch(dst.segment()));
            assertTrue(requester.existsBatch(List.of("t/batch/0", "t/batch/missing")).stream().map(Outcome::get).toList().equals(List.of(true, false)));
            assertEquals(0, requester.removeByRegex("t/batch/.*"), "every one was just read, so every one is leased");
            assertEquals(n, requester.removeByRegex("t/batch/.*", true));
        } finally {
            e.unregister(src);
            e.unregister(dst);
        }
    }

    private static long calls(String method) {
        var m = server.stats().methods().get(method);
        return m == null ? 0 : m.calls();
    }

    @Test
    void singlePutsAndOneMiBPutsTakeOneRoundTripThroughReservations() {
        StoreClient w = StoreClient.builder(engine(), address).stagingBytes(2 << 20).heartbeatInterval(Duration.ZERO).connect();
        try {
            long commits = calls("Commit");
            long starts = calls("PutStart");
            long ends = calls("PutEnd");
            for (int i = 0; i < 10; i++) {
                assertEquals(PutResult.Status.STORED, w.put("t/one/small/" + i, random(4000 + i, i)).status());
            }
            assertEquals(11, calls("Commit") - commits, "a reservation asked for, then one commit per put");
            // 1 MiB values: reservations of 8 MiB, each asked for on the commit that fills the one before
            commits = calls("Commit");
            int big = 20;
            for (int i = 0; i < big; i++) {
                assertEquals(PutResult.Status.STORED, w.put("t/one/big/" + i, random(1 << 20, 100 + i)).status());
            }
            assertEquals(big + 1, calls("Commit") - commits, "the small values' reservation retired and a large one asked for, then one call per put");
            assertEquals(0, calls("PutStart") - starts);
            assertEquals(0, calls("PutEnd") - ends);
            for (int i = 0; i < 10; i++) {
                assertEquals(crc(random(4000 + i, i)), crc(requester.get("t/one/small/" + i)));
            }
            for (int i = 0; i < big; i++) {
                assertEquals(crc(random(1 << 20, 100 + i)), crc(requester.get("t/one/big/" + i)));
            }
            // an existing key says so in its one call; an upsert takes the two-call path
            commits = calls("Commit");
            assertEquals(PutResult.Status.ALREADY_EXISTS, w.put("t/one/small/0", random(10, 1)).status());
            assertEquals(1, calls("Commit") - commits);
            w.upsert("t/one/small/0", random(5000, 5), ReplicateConfig.defaults());
            assertEquals(1, calls("PutStart") - starts);
            assertEquals(crc(random(5000, 5)), crc(requester.get("t/one/small/0")));
        } finally {
            requester.removeByRegex("t/one/.*", true);
            w.close();
        }
    }

    @Test
    void smallBatchPutsTakeOneRoundTripThroughReservations() {
        StoreClient w = StoreClient.builder(engine(), address).stagingBytes(1 << 20).heartbeatInterval(Duration.ZERO).connect();
        TransferEngine e = w.engine();
        int n = 32;
        int batches = 12;
        RegisteredMemory src = e.allocate((long) batches * n * 4096, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory dst = e.allocate((long) batches * n * 4096, Location.CPU, Permission.READ_WRITE);
        try {
            MemorySegment.copy(MemorySegment.ofArray(random(batches * n * 4096, 7)), 0, src.segment(), 0, src.segment().byteSize());
            long commits = calls("Commit");
            long starts = calls("BatchPutStart");
            List<String> all = new ArrayList<>();
            List<MemorySegment> dsts = new ArrayList<>();
            for (int b = 0; b < batches; b++) {
                List<String> keys = new ArrayList<>();
                List<MemorySegment> srcs = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    long at = ((long) b * n + i) * 4096;
                    keys.add("t/res/" + b + "/" + i);
                    srcs.add(src.segment().asSlice(at, 4096 - i)); // sizes not a multiple of the alignment
                    dsts.add(dst.segment().asSlice(at, 4096 - i));
                }
                all.addAll(keys);
                w.putBatchFrom(keys, srcs, ReplicateConfig.replicas(2)).forEach(o -> assertEquals(PutResult.Status.STORED, o.get().status()));
            }
            // the first batch asks for a reservation, then one call per batch (refills ride on the commits)
            assertEquals(batches + 1, calls("Commit") - commits);
            assertEquals(0, calls("BatchPutStart") - starts);
            List<Outcome<Long>> got = w.getBatchInto(all, dsts);
            for (int i = 0; i < all.size(); i++) {
                assertEquals(4096L - i % n, got.get(i).get());
                assertEquals(2, requester.master().getReplicaList(all.get(i)).getReplicasCount());
            }
            for (int i = 0; i < all.size(); i++) {
                long at = (long) i * 4096;
                assertEquals(-1, src.segment().asSlice(at, 4096 - i % n).mismatch(dst.segment().asSlice(at, 4096 - i % n)), all.get(i));
            }
            // a key that exists reports so, the others in its batch are stored
            List<Outcome<PutResult>> again = w.putBatchFrom(List.of("t/res/0/0", "t/res/new"),
                    List.of(src.segment().asSlice(0, 100), src.segment().asSlice(4096, 100)), ReplicateConfig.replicas(2));
            assertEquals(List.of(PutResult.Status.ALREADY_EXISTS, PutResult.Status.STORED),
                    again.stream().map(o -> o.get().status()).toList());
            // a pinned value takes the two-call path (a commit carries no pins)
            long before = calls("BatchPutStart");
            w.putBatchFrom(List.of("t/res/big"), List.of(src.segment().asSlice(0, 128 << 10)), ReplicateConfig.defaults().withHardPin())
                    .forEach(o -> assertEquals(PutResult.Status.STORED, o.get().status()));
            assertEquals(1, calls("BatchPutStart") - before);
            requester.removeByRegex("t/res/.*", true);
        } finally {
            e.unregister(src);
            e.unregister(dst);
            w.close();
        }
    }

    @Test
    void reservationsAreRetiredWhenTheMasterWasNotHeardFromLatelyAndOnClose() {
        org.tent4j.store.ManualClock clk = new org.tent4j.store.ManualClock();
        StoreClient w = StoreClient.builder(engine(), address).clock(clk).stagingBytes(1 << 20).heartbeatInterval(Duration.ZERO).connect();
        RegisteredMemory src = w.engine().allocate(8 * 1024, Location.CPU, Permission.READ_WRITE);
        var state = server.master().state();
        try {
            long before = state.reservedBytes();
            List<MemorySegment> vals = List.of(src.segment().asSlice(0, 1024), src.segment().asSlice(1024, 1024));
            long commits = calls("Commit");
            w.putBatchFrom(List.of("t/fresh/a", "t/fresh/b"), vals, ReplicateConfig.defaults()).forEach(o -> assertEquals(PutResult.Status.STORED, o.get().status()));
            assertEquals(2, calls("Commit") - commits, "reserve, then commit");
            long held = state.reservedBytes();
            assertTrue(held > before, "this client holds a reservation");
            // silent for longer than the freshness window: the master may have released it, so it is not written into
            clk.advance(Duration.ofSeconds(4));
            w.putBatchFrom(List.of("t/fresh/c", "t/fresh/d"), vals, ReplicateConfig.defaults()).forEach(o -> assertEquals(PutResult.Status.STORED, o.get().status()));
            assertEquals(4, calls("Commit") - commits, "retire and reserve again, then commit");
            assertEquals(held, state.reservedBytes(), "the stale reservation was retired, not leaked");
            w.close();
            assertEquals(before, state.reservedBytes(), "closing retires what the client held");
            assertTrue(requester.existsBatch(List.of("t/fresh/a", "t/fresh/b", "t/fresh/c", "t/fresh/d")).stream().allMatch(Outcome::get));
            requester.removeByRegex("t/fresh/.*", true);
        } finally {
            w.close();
        }
    }

    @Test
    void aReservationIdleForAMinuteIsRetiredEvenWhileHeartbeatsKeepTheMasterFresh() {
        // the master releases a live client's reservation once unused for its put release timeout; the client must
        // stop writing into one long before that, whatever its heartbeats say
        org.tent4j.store.ManualClock clk = new org.tent4j.store.ManualClock();
        StoreClient w = StoreClient.builder(engine(), address).clock(clk).stagingBytes(1 << 20).heartbeatInterval(Duration.ZERO).connect();
        RegisteredMemory src = w.engine().allocate(8 * 1024, Location.CPU, Permission.READ_WRITE);
        var state = server.master().state();
        try {
            List<MemorySegment> vals = List.of(src.segment().asSlice(0, 1024), src.segment().asSlice(1024, 1024));
            long commits = calls("Commit");
            w.putBatchFrom(List.of("t/idle/a", "t/idle/b"), vals, ReplicateConfig.defaults()).forEach(o -> assertEquals(PutResult.Status.STORED, o.get().status()));
            assertEquals(2, calls("Commit") - commits, "reserve, then commit");
            long held = state.reservedBytes();
            for (int i = 0; i < 61; i++) {
                clk.advance(Duration.ofSeconds(1));
                w.heartbeat();
            }
            w.putBatchFrom(List.of("t/idle/c", "t/idle/d"), vals, ReplicateConfig.defaults()).forEach(o -> assertEquals(PutResult.Status.STORED, o.get().status()));
            assertEquals(4, calls("Commit") - commits, "the idle reservation retired and a fresh one asked for, then commit");
            assertEquals(held, state.reservedBytes(), "the idle reservation was retired, not leaked");
            assertTrue(requester.existsBatch(List.of("t/idle/a", "t/idle/b", "t/idle/c", "t/idle/d")).stream().allMatch(Outcome::get));
            requester.removeByRegex("t/idle/.*", true);
        } finally {
            w.close();
        }
    }

    @Test
    void largeBatchGetOutlivingTheLeaseStillReturnsEveryValueAndNeverAStaleOne() throws Exception {
        // each clock read moves time 1 s, so reading 100 values one after another spans 10 leases
        AtomicLong now = new AtomicLong();
        StoreClient slow = StoreClient.builder(requester.engine(), address).clock(() -> now.addAndGet(1_000_000_000L))
                .heartbeatInterval(Duration.ZERO).connect();
        try {
            int n = 100;
            List<String> keys = new ArrayList<>();
            List<byte[]> values = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                keys.add("t/slow/" + i);
                values.add(random(512, 100 + i));
                requester.put(keys.get(i), values.get(i));
            }
            RegisteredMemory dst = requester.engine().allocate(n * 512L, Location.CPU, Permission.READ_WRITE);
            List<MemorySegment> dsts = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                dsts.add(dst.segment().asSlice(i * 512L, 512));
            }
            List<Outcome<Long>> got = slow.getBatchInto(keys, dsts);
            for (int i = 0; i < n; i++) {
                assertEquals(512L, got.get(i).get(), "key " + i);
                assertArrayEquals(values.get(i), dsts.get(i).toArray(ValueLayout.JAVA_BYTE), "key " + i);
            }
            assertTrue(slow.leaseExpiredReads() > 0, "some reads ran past their lease and were discarded");
            requester.engine().unregister(dst);
        } finally {
            slow.close();
        }
    }

    @Test
    void readWhoseLeaseEndsWhileBytesMoveIsDiscardedNotReturned() {
        requester.put("t/late", random(100, 5));
        AtomicLong now = new AtomicLong();
        // 11 s pass between asking the master and the bytes arriving, every time
        StoreClient late = StoreClient.builder(requester.engine(), address).clock(() -> now.addAndGet(11_000_000_000L))
                .heartbeatInterval(Duration.ZERO).connect();
        try {
            assertError(StoreError.LEASE_EXPIRED, "finished after its lease ended", () -> late.get("t/late"));
            assertEquals(StoreClient.READ_ATTEMPTS, late.leaseExpiredReads());
            GetSession s = late.getSession(List.of("t/late"));
            assertError(StoreError.LEASE_EXPIRED, "renew the session", () -> s.read(0, MemorySegment.ofArray(new byte[100])));
        } finally {
            late.close();
        }
    }

    @Test
    void putOfAKeyInFlightIsReportedAsSuch() {
        try (PutSession s = a.putSession(List.of("t/inflight"), List.of(100L), ReplicateConfig.defaults())) {
            assertError(StoreError.OBJECT_IN_FLIGHT, "being written by client " + a.clientId(), () -> b.put("t/inflight", random(100, 6)));
            assertFalse(b.exists("t/inflight"));
        }
        assertFalse(b.exists("t/inflight"), "closing the session revoked it");
        assertEquals(PutResult.Status.STORED, b.put("t/inflight", random(100, 6)).status());
    }

    @Test
    void sessionsWriteAndReadRanges() {
        TransferEngine e = a.engine();
        RegisteredMemory buf = e.allocate(1 << 16, Location.CPU, Permission.READ_WRITE);
        try {
            byte[] v = random(1 << 15, 7);
            MemorySegment.copy(MemorySegment.ofArray(v), 0, buf.segment(), 0, v.length);
            PutSession ps = a.putSession(List.of("t/s1", "t/s2"), List.of((long) v.length, 10L), ReplicateConfig.replicas(2));
            ps.write(0, 1 << 14, buf.segment().asSlice(1 << 14, 1 << 14));
            ps.write(0, 0, buf.segment().asSlice(0, 1 << 14));
            ps.write(1, 0, buf.segment().asSlice(0, 10));
            assertError(StoreError.INVALID_PARAMS, "outside key 't/s2'", () -> ps.write(1, 5, buf.segment().asSlice(0, 10)));
            ps.end().forEach(o -> assertEquals(PutResult.Status.STORED, o.get().status()));
            GetSession gs = b.getSession(List.of("t/s1", "t/nope"));
            assertEquals(v.length, gs.valueSize(0));
            assertError(StoreError.OBJECT_NOT_FOUND, "'t/nope'", () -> gs.valueSize(1));
            // b reads into memory registered with its own engine (zero-copy destinations must be: issue 28)
            RegisteredMemory bBuf = b.engine().allocate(100, Location.CPU, Permission.LOCAL_ONLY);
            MemorySegment part = bBuf.segment();
            gs.read(0, 1000, part);
            assertEquals(-1, part.mismatch(MemorySegment.ofArray(v).asSlice(1000, 100)));
            b.engine().unregister(bBuf);
        } finally {
            e.unregister(buf);
        }
    }

    @Test
    void upsertReplacesTheValue() {
        a.put("t/up", random(1000, 8));
        byte[] v2 = random(3000, 9);
        b.upsert("t/up", v2, ReplicateConfig.defaults());
        assertArrayEquals(v2, requester.get("t/up"));
    }

    @Test
    void badInputGetsPreciseErrors() throws Exception {
        assertError(StoreError.INVALID_KEY, "key is empty", () -> requester.put("", new byte[10]));
        assertError(StoreError.INVALID_KEY, "longer than the limit", () -> requester.put("k".repeat(5000), new byte[10]));
        assertError(StoreError.INVALID_PARAMS, "must be > 0: 0", () -> requester.put("t/zero", new byte[0]));
        assertError(StoreError.OBJECT_TOO_LARGE, "larger than the largest mounted segment", () -> requester.put("t/huge", new byte[40 << 20]));
        assertError(StoreError.OBJECT_NOT_FOUND, "'t/unknown'", () -> requester.get("t/unknown"));
        assertError(StoreError.OBJECT_NOT_FOUND, "'t/unknown'", () -> requester.remove("t/unknown"));
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        int closed = port;
        assertError(StoreError.RPC_FAIL, "master unreachable", () -> StoreClient.builder(requester.engine(), "127.0.0.1:" + closed)
                .rpcTimeout(Duration.ofSeconds(2)).connect());
    }

    @Test
    void removeIsRefusedWhileLeasedUnlessForced() {
        a.put("t/rm", random(100, 10));
        b.get("t/rm");
        assertError(StoreError.OBJECT_HAS_LEASE, "leased to a reader", () -> a.remove("t/rm"));
        a.remove("t/rm", true);
        assertFalse(a.exists("t/rm"));
        assertNotEquals(0, server.stats().methods().size());
    }
}
