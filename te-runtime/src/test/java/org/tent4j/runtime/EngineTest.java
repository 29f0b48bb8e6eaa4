package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.tent4j.api.Batch;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Notification;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;

class EngineTest {
    private final List<TransferEngine> engines = new ArrayList<>();
    private Arena arena;

    static EngineConfig.Builder cfg() {
        return EngineConfig.builder().environment(Map.of()).set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set(EngineConfig.SLICE_SIZE, "64k");
    }

    TransferEngine engine(EngineConfig.Builder b) {
        TransferEngine e = TransferEngine.create(b.build());
        engines.add(e);
        return e;
    }

    @BeforeEach
    void setUp() {
        arena = Arena.ofShared();
    }

    @AfterEach
    void tearDown() {
        engines.forEach(TransferEngine::close);
        arena.close();
    }

    static void fill(MemorySegment s, long seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + seed));
        }
    }

    static long crc(MemorySegment s) {
        CRC32C c = new CRC32C();
        c.update(s.asByteBuffer());
        return c.getValue();
    }

    @Test
    void writeAndReadAcrossTwoEnginesInP2pMode() {
        TransferEngine target = engine(cfg());
        TransferEngine initiator = engine(cfg());
        RegisteredMemory remote = target.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        fill(local.segment(), 7);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        long base = initiator.segmentInfo(seg).buffers().get(0).address();
        assertEquals(remote.address(), base);

        // unaligned offsets, more than one slice (slice size 64k)
        MemorySegment src = local.segment().asSlice(13, 300_001);
        TransferStatus w = initiator.transfer(TransferRequest.write(src, seg, base + 101));
        assertEquals(TransferState.COMPLETED, w.state(), w.message());
        assertEquals(300_001, w.bytesTransferred());
        assertEquals(crc(src), crc(remote.segment().asSlice(101, 300_001)));

        MemorySegment dst = local.segment().asSlice(500_003, 300_001);
        TransferStatus r = initiator.transfer(TransferRequest.read(dst, seg, base + 101));
        assertEquals(TransferState.COMPLETED, r.state(), r.message());
        assertEquals(crc(src), crc(dst));
    }

    @Test
    void findRegistrationAnswersWhichRegistrationHoldsARangeUntilItIsUnregistered() {
        TransferEngine e = engine(cfg());
        RegisteredMemory mem = e.allocate(8192, Location.CPU, Permission.READ_ONLY);
        MemorySegment own = arena.allocate(4096);
        RegisteredMemory local = e.register(own, Location.CPU, Permission.LOCAL_ONLY);
        assertEquals(mem, e.findRegistration(mem.segment().asSlice(100, 4000)).orElseThrow());
        assertEquals(Permission.READ_ONLY, e.findRegistration(mem.segment()).orElseThrow().permission());
        assertEquals(Permission.LOCAL_ONLY, e.findRegistration(own.asSlice(4095, 1)).orElseThrow().permission());
        // never registered, running past a registration's end, heap memory
        assertTrue(e.findRegistration(arena.allocate(64)).isEmpty());
        MemorySegment past = MemorySegment.ofAddress(mem.address() + 8000).reinterpret(300);
        assertTrue(e.findRegistration(past).isEmpty());
        assertTrue(e.findRegistration(MemorySegment.ofArray(new byte[64])).isEmpty());
        e.unregister(local);
        assertTrue(e.findRegistration(own).isEmpty());
    }

    @Test
    void everyBadInputEndsInvalidWithAMessageNamingIt() throws Exception {
        TransferEngine target = engine(cfg());
        TransferEngine initiator = engine(cfg());
        RegisteredMemory remote = target.allocate(4096, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory ro = target.allocate(4096, Location.CPU, Permission.READ_ONLY);
        RegisteredMemory local = initiator.allocate(8192, Location.CPU, Permission.READ_WRITE);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        MemorySegment unregistered = arena.allocate(4096);

        assertInvalid(initiator, TransferRequest.write(unregistered, seg, remote.address()), ErrorCode.ADDRESS_NOT_REGISTERED, "not registered");
        assertInvalid(initiator, TransferRequest.write(MemorySegment.ofAddress(local.address() + 8000).reinterpret(400), seg, remote.address()),
                ErrorCode.OUT_OF_BOUNDS, "runs past the end");
        assertInvalid(initiator, TransferRequest.write(local.segment().asSlice(0, 100), seg, remote.address() + 4000),
                ErrorCode.OUT_OF_BOUNDS, "runs past the end");
        assertInvalid(initiator, TransferRequest.write(local.segment().asSlice(0, 100), seg, 0x10),
                ErrorCode.ADDRESS_NOT_REGISTERED, "0x10");
        assertInvalid(initiator, TransferRequest.builder(Opcode.WRITE, local.segment(), seg, remote.address()).length(0).build(),
                ErrorCode.INVALID_ARGUMENT, "length must be > 0");
        assertInvalid(initiator, TransferRequest.builder(Opcode.WRITE, local.segment(), seg, remote.address()).length(-5).build(),
                ErrorCode.INVALID_ARGUMENT, "length must be > 0");
        assertInvalid(initiator, TransferRequest.write(local.segment().asSlice(0, 64), seg, ro.address()),
                ErrorCode.PERMISSION_DENIED, "READ_ONLY");
        assertInvalid(initiator, TransferRequest.read(local.segment().asSlice(0, 64).asReadOnly(), seg, remote.address()),
                ErrorCode.PERMISSION_DENIED, "read-only");
        assertInvalid(initiator, TransferRequest.builder(Opcode.WRITE, local.segment().asSlice(0, 64), seg, remote.address()).require("rdma").build(),
                ErrorCode.NO_TRANSPORT, "'rdma' is required");
        assertEquals(TransferState.COMPLETED, initiator.transfer(TransferRequest.read(local.segment().asSlice(0, 64), seg, ro.address())).state());

        TransferException unknown = assertThrows(TransferException.class, () -> initiator.openSegment("127.0.0.1:1"));
        assertEquals(ErrorCode.UNKNOWN_SEGMENT, unknown.code());
        assertTrue(unknown.getMessage().contains("127.0.0.1:1"), unknown.getMessage());

        initiator.close();
        TransferException closed = assertThrows(TransferException.class, () -> initiator.allocateBatch(1));
        assertEquals(ErrorCode.ENGINE_CLOSED, closed.code());
    }

    private static void assertInvalid(TransferEngine e, TransferRequest r, ErrorCode code, String fragment) {
        TransferStatus s = e.transfer(r);
        assertEquals(TransferState.INVALID, s.state(), String.valueOf(s));
        assertEquals(code, s.error(), s.message());
        assertTrue(s.message().contains(fragment), s.message());
    }

    @Test
    void concurrentBatchesFromSeveralThreadsAllCompleteIntact() throws Exception {
        TransferEngine target = engine(cfg());
        TransferEngine initiator = engine(cfg());
        int threads = 4;
        int perThread = 64 << 10;
        RegisteredMemory remote = target.allocate((long) threads * perThread * 2, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate((long) threads * perThread * 2, Location.CPU, Permission.READ_WRITE);
        fill(local.segment(), 3);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int th = t;
                fs.add(pool.submit(() -> {
                    for (int round = 0; round < 20; round++) {
                        try (Batch b = initiator.allocateBatch(16)) {
                            List<TransferRequest> reqs = new ArrayList<>();
                            for (int i = 0; i < 16; i++) {
                                long off = (long) th * perThread + i * 4096L;
                                reqs.add(TransferRequest.write(local.segment().asSlice(off, 4096), seg, remote.address() + off));
                            }
                            int first = b.submit(reqs);
                            assertEquals(0, first);
                            TransferStatus all = b.await(Duration.ofSeconds(20));
                            assertEquals(TransferState.COMPLETED, all.state(), all.message());
                            assertEquals(16 * 4096, all.bytesTransferred());
                            for (TransferStatus s : b.statuses()) {
                                assertEquals(TransferState.COMPLETED, s.state());
                            }
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        long n = (long) threads * perThread;
        assertEquals(crc(local.segment().asSlice(0, n)), crc(remote.segment().asSlice(0, n)));
    }

    @Test
    void awaitIsWokenByTheLastTaskNotThroughAWorker() throws Exception {
        TransferEngine target = engine(cfg());
        // one worker, and copies on the submitting thread: a blocked worker then stops futures, not the data
        TransferEngine initiator = engine(cfg().set(EngineConfig.WORKERS, "1").set("transports.inproc.inline", "true"));
        RegisteredMemory remote = target.allocate(1 << 16, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(1 << 16, Location.CPU, Permission.READ_WRITE);
        fill(local.segment(), 11);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        CountDownLatch blocked = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        InProcessTransportProvider.TARGETS.get("inproc@" + initiator.segmentName()).workers().execute(() -> {
            blocked.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        assertTrue(blocked.await(10, TimeUnit.SECONDS));
        try (Batch b = initiator.allocateBatch(16)) {
            List<TransferRequest> reqs = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                reqs.add(TransferRequest.builder(Opcode.WRITE, local.segment().asSlice(i * 4096L, 4096), seg,
                        remote.address() + i * 4096L).require("inproc").build());
            }
            b.submit(reqs);
            // the old await waited on completion(), which a worker completes: it would sit out the whole 5 minutes
            TransferStatus all = assertTimeoutPreemptively(Duration.ofSeconds(30), () -> b.await(Duration.ofMinutes(5)));
            assertEquals(TransferState.COMPLETED, all.state(), all.message());
            assertEquals(16 * 4096, all.bytesTransferred());
            assertEquals(crc(local.segment().asSlice(0, 16 * 4096)), crc(remote.segment().asSlice(0, 16 * 4096)));
        } finally {
            release.countDown();
        }
    }

    @Test
    void directPostsFromSeveralThreadsKeepThePathLimitAndEveryByte() throws Exception {
        TransferEngine target = engine(cfg());
        // copies on the posting thread, as shm's, each taking 1 ms: with one request per batch a submitter has at most
        // one slice in flight, so three submitters against a limit of two keep finding the queue empty and racing
        // each other (and the drain loop) for the last room on the path
        TransferEngine initiator = engine(cfg().set("paths.max_inflight", "2").set("transports.inproc.concurrent_posts", "true")
                .set("transports.inproc.inline", "true").set("transports.inproc.slow_delay", "1ms"));
        int threads = 3;
        int perThread = 64 << 10;
        RegisteredMemory remote = target.allocate((long) threads * perThread, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate((long) threads * perThread, Location.CPU, Permission.READ_WRITE);
        fill(local.segment(), 13);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        // connect first: slices submitted while the group connects all queue, and then nothing posts directly
        initiator.transfer(TransferRequest.builder(Opcode.WRITE, local.segment().asSlice(0, 4096), seg, remote.address())
                .require("inproc").build()).orThrow();
        long before = InProcessTransportProvider.posts("inproc", initiator.segmentName());
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int th = t;
                fs.add(pool.submit(() -> {
                    for (int i = 0; i < 16; i++) {
                        long off = (long) th * perThread + i * 4096L;
                        try (Batch b = initiator.allocateBatch(1)) {
                            b.submit(List.of(TransferRequest.builder(Opcode.WRITE, local.segment().asSlice(off, 4096), seg,
                                    remote.address() + off).require("inproc").build()));
                            TransferStatus all = b.await(Duration.ofSeconds(20));
                            assertEquals(TransferState.COMPLETED, all.state(), all.message());
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(before + threads * 16, InProcessTransportProvider.posts("inproc", initiator.segmentName()));
        for (int t = 0; t < threads; t++) {
            long off = (long) t * perThread;
            assertEquals(crc(local.segment().asSlice(off, 16 * 4096)), crc(remote.segment().asSlice(off, 16 * 4096)));
        }
        long max = InProcessTransportProvider.MAX_IN_FLIGHT.get("inproc@" + initiator.segmentName()).get();
        assertTrue(max <= 2, "slices in flight at once: " + max + ", limit 2");
    }

    @Test
    void failedSliceFailsTheTaskAndTheBatchReportsTheWorstState() throws Exception {
        TransferEngine target = engine(cfg());
        TransferEngine initiator = engine(cfg().set("transports.inproc.fail_after", 0).set(EngineConfig.TRANSPORTS_ENABLED, "inproc"));
        RegisteredMemory remote = target.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        try (Batch b = initiator.allocateBatch(4)) {
            b.submit(List.of(TransferRequest.write(local.segment(), seg, remote.address()),
                    TransferRequest.write(local.segment().asSlice(0, 10), seg, 0x42)));
            TransferStatus all = b.await(Duration.ofSeconds(10));
            assertEquals(TransferState.FAILED, all.state(), String.valueOf(all));
            assertEquals(ErrorCode.PEER_FAILED, b.status(0).error());
            assertTrue(b.status(0).message().contains("injected failure"), b.status(0).message());
            assertTrue(b.status(0).message().contains("no other transport"), b.status(0).message());
            assertEquals(TransferState.INVALID, b.status(1).state());
        }
    }

    @Test
    void batchCapacityIsEnforcedAndTaskIdsContinueAcrossSubmits() throws Exception {
        TransferEngine target = engine(cfg());
        TransferEngine initiator = engine(cfg());
        RegisteredMemory remote = target.allocate(1 << 16, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(1 << 16, Location.CPU, Permission.READ_WRITE);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        try (Batch b = initiator.allocateBatch(3)) {
            TransferRequest r = TransferRequest.write(local.segment().asSlice(0, 100), seg, remote.address());
            assertEquals(0, b.submit(List.of(r, r)));
            assertEquals(2, b.submit(List.of(r)));
            TransferException e = assertThrows(TransferException.class, () -> b.submit(List.of(r)));
            assertEquals(ErrorCode.TOO_MANY_REQUESTS, e.code());
            assertEquals(TransferState.COMPLETED, b.await(Duration.ofSeconds(10)).state());
            assertEquals(TransferState.COMPLETED, b.completion(2).get().state());
        }
    }

    @Test
    void notificationRidesOnABatchAndArrivesAfterTheData() throws Exception {
        TransferEngine target = engine(cfg());
        TransferEngine initiator = engine(cfg());
        RegisteredMemory remote = target.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        fill(local.segment(), 11);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        long expected = crc(local.segment());
        List<Long> seenAtNotification = new ArrayList<>();
        target.onNotification(n -> seenAtNotification.add(crc(remote.segment())));
        try (Batch b = initiator.allocateBatch(1)) {
            b.submit(List.of(TransferRequest.write(local.segment(), seg, remote.address())), "layer-7 done");
            Notification n = target.awaitNotification(Duration.ofSeconds(10));
            assertNotNull(n, "notification not delivered");
            assertEquals("layer-7 done", n.message());
            assertEquals(initiator.segmentName(), n.sender());
            assertEquals(List.of(expected), seenAtNotification);
        }
        initiator.sendNotification(seg, "standalone").get();
        assertEquals("standalone", target.awaitNotification(Duration.ofSeconds(10)).message());
    }

    @Test
    void inMemoryMetadataStoreResolvesSegmentsByName() {
        TransferEngine target = engine(cfg().set(EngineConfig.METADATA_URI, "memory://t1").set(EngineConfig.SEGMENT_NAME, "prefill-0"));
        TransferEngine initiator = engine(cfg().set(EngineConfig.METADATA_URI, "memory://t1").set(EngineConfig.SEGMENT_NAME, "decode-0"));
        RegisteredMemory remote = target.allocate(4096, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(4096, Location.CPU, Permission.READ_WRITE);
        fill(local.segment(), 5);
        SegmentHandle seg = initiator.openSegment("prefill-0");
        assertEquals(TransferState.COMPLETED, initiator.transfer(TransferRequest.write(local.segment(), seg, remote.address())).state());
        assertArrayEquals(local.segment().toArray(ValueLayout.JAVA_BYTE), remote.segment().toArray(ValueLayout.JAVA_BYTE));
        TransferException e = assertThrows(TransferException.class, () -> initiator.openSegment("nobody"));
        assertEquals(ErrorCode.UNKNOWN_SEGMENT, e.code());
        assertTrue(e.getMessage().contains("'nobody'"), e.getMessage());
    }

    @Test
    void registrationRejectsHeapOverlapAndForeignMemory() {
        TransferEngine e = engine(cfg());
        MemorySegment m = arena.allocate(8192);
        e.register(m.asSlice(0, 4096), Location.CPU, Permission.READ_WRITE);
        assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(TransferException.class,
                () -> e.register(m.asSlice(2048, 4096), Location.CPU, Permission.READ_WRITE)).code());
        assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(TransferException.class,
                () -> e.register(MemorySegment.ofArray(new byte[16]), Location.CPU, Permission.READ_WRITE)).code());
        RegisteredMemory other = engine(cfg()).allocate(16, Location.CPU, Permission.READ_WRITE);
        assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(TransferException.class, () -> e.unregister(other)).code());
    }

    @Test
    void localOnlyBuffersAreNotPublished() {
        TransferEngine e = engine(cfg());
        e.allocate(4096, Location.CPU, Permission.LOCAL_ONLY);
        RegisteredMemory shared = e.allocate(4096, Location.CPU, Permission.READ_ONLY);
        var info = e.segmentInfo(e.localSegment());
        assertEquals(1, info.buffers().size());
        assertEquals(shared.address(), info.buffers().get(0).address());
    }

    @Test
    void metricsNameBytesRequestsAndLatencyPerTransport() {
        TransferEngine target = engine(cfg());
        TransferEngine initiator = engine(cfg());
        RegisteredMemory remote = target.allocate(4096, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(4096, Location.CPU, Permission.READ_WRITE);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        initiator.transfer(TransferRequest.write(local.segment(), seg, remote.address())).orThrow();
        String scrape = ((TransferEngineImpl) initiator).metrics().scrape();
        assertTrue(scrape.contains("tent4j_transfer_bytes_total{operation=\"write\",segment=\"" + initiator.segmentName() + "\",transport=\"inproc\"} 4096.0"), scrape);
        assertTrue(scrape.contains("tent4j_transfer_requests_total"), scrape);
        // fixed buckets: 16 bounds + Inf per (transport, operation), not a percentile histogram's ~110
        long buckets = scrape.lines().filter(l -> l.startsWith("tent4j_transfer_latency_seconds_bucket{")
                && l.contains("operation=\"write\"") && l.contains("transport=\"inproc\"")).count();
        assertEquals(17, buckets, scrape);
        String series = "{operation=\"write\",segment=\"" + initiator.segmentName() + "\",transport=\"inproc\"}";
        assertTrue(scrape.contains("tent4j_transfer_latency_seconds_count" + series + " 1\n"), scrape);
        assertTrue(scrape.contains("tent4j_transfer_latency_seconds_bucket" + series.replace("}", ",le=\"+Inf\"} 1\n")), scrape);
        assertTrue(scrape.contains("# TYPE tent4j_transfer_latency_seconds histogram"), scrape);
        long latencySeries = scrape.lines().filter(l -> l.startsWith("tent4j_transfer_latency_seconds")).count();
        // (2 transports + none) x 2 operations, each with 17 buckets, count and sum
        assertTrue(latencySeries <= 3 * 2 * 20, "latency series: " + latencySeries);
    }
}
