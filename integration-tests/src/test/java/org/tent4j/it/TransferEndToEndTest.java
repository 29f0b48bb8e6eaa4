package org.tent4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.tent4j.api.Batch;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;

/**
 * Real transports, real engines: bytes checked with CRC32C for every size class at unaligned offsets, READ and WRITE,
 * within one JVM and between two JVM processes; concurrent batches; notifications; a target killed mid-batch.
 */
class TransferEndToEndTest {
    static final long[] SIZES = {1, 4095, 64 << 10, 64 << 20};
    static final long TARGET_SIZE = (64 << 20) + (1 << 20);
    private final List<AutoCloseable> open = new ArrayList<>();

    static EngineConfig.Builder cfg() {
        return EngineConfig.builder().environment(Map.of()).set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set(EngineConfig.TRANSFER_TIMEOUT, "10s");
    }

    <T extends AutoCloseable> T keep(T c) {
        open.add(c);
        return c;
    }

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    static TransferRequest req(Opcode op, MemorySegment local, SegmentHandle seg, long target, String transport) {
        return TransferRequest.builder(op, local, seg, target).require(transport).build();
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void everySizeClassWithinOneJvm(String transport) {
        TransferEngine target = keep(TransferEngine.create(cfg().build()));
        TransferEngine initiator = keep(TransferEngine.create(cfg().build()));
        RegisteredMemory remote = target.allocate(TARGET_SIZE, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(TARGET_SIZE, Location.CPU, Permission.READ_WRITE);
        TargetProcess.pattern(local.segment(), 5);
        TargetProcess.pattern(remote.segment(), 6);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        for (long size : SIZES) {
            MemorySegment src = local.segment().asSlice(3, size);
            TransferStatus w = initiator.transfer(req(Opcode.WRITE, src, seg, remote.address() + 7, transport));
            assertEquals(TransferState.COMPLETED, w.state(), w.message());
            assertEquals(TargetProcess.crc(src), TargetProcess.crc(remote.segment().asSlice(7, size)), transport + " WRITE " + size);

            MemorySegment dst = local.segment().asSlice(11, size);
            TransferStatus r = initiator.transfer(req(Opcode.READ, dst, seg, remote.address() + 13, transport));
            assertEquals(TransferState.COMPLETED, r.state(), r.message());
            assertEquals(TargetProcess.crc(remote.segment().asSlice(13, size)), TargetProcess.crc(dst), transport + " READ " + size);
        }
        TransferStatus zero = initiator.transfer(TransferRequest.builder(Opcode.WRITE, local.segment(), seg, remote.address())
                .length(0).require(transport).build());
        assertEquals(TransferState.INVALID, zero.state());
        assertEquals(ErrorCode.INVALID_ARGUMENT, zero.error());
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void everySizeClassBetweenTwoProcesses(String transport) throws Exception {
        TargetProcess.Child child = keep(new TargetProcess.Child(TARGET_SIZE));
        TransferEngine initiator = keep(TransferEngine.create(cfg().build()));
        RegisteredMemory local = initiator.allocate(TARGET_SIZE, Location.CPU, Permission.READ_WRITE);
        TargetProcess.pattern(local.segment(), 42);
        SegmentHandle seg = initiator.openSegment(child.segment);
        assertEquals(child.address, initiator.segmentInfo(seg).buffers().get(0).address());
        for (long size : SIZES) {
            // READ first: the child's memory still holds its own pattern there.
            MemorySegment dst = local.segment().asSlice(17, size);
            TransferStatus r = initiator.transfer(req(Opcode.READ, dst, seg, child.address + 5, transport));
            assertEquals(TransferState.COMPLETED, r.state(), r.message());
            assertEquals(child.crc(5, size), TargetProcess.crc(dst), transport + " READ " + size);

            MemorySegment src = local.segment().asSlice(1, size);
            TransferStatus w = initiator.transfer(req(Opcode.WRITE, src, seg, child.address + 9, transport));
            assertEquals(TransferState.COMPLETED, w.state(), w.message());
            assertEquals(TargetProcess.crc(src), child.crc(9, size), transport + " WRITE " + size);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void concurrentBatchesBetweenProcessesAndANotificationAfterTheData(String transport) throws Exception {
        TargetProcess.Child child = keep(new TargetProcess.Child(16 << 20));
        TransferEngine initiator = keep(TransferEngine.create(cfg().build()));
        RegisteredMemory local = initiator.allocate(16 << 20, Location.CPU, Permission.READ_WRITE);
        TargetProcess.pattern(local.segment(), 77);
        SegmentHandle seg = initiator.openSegment(child.segment);
        int threads = 4;
        long perThread = 4 << 20;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long base = t * perThread;
                fs.add(pool.submit(() -> {
                    for (int round = 0; round < 8; round++) {
                        try (Batch b = initiator.allocateBatch(16)) {
                            List<TransferRequest> reqs = new ArrayList<>();
                            for (int i = 0; i < 16; i++) {
                                long off = base + i * (perThread / 16);
                                reqs.add(req(Opcode.WRITE, local.segment().asSlice(off, perThread / 16), seg, child.address + off, transport));
                            }
                            b.submit(reqs);
                            TransferStatus s = b.await(Duration.ofSeconds(30));
                            assertEquals(TransferState.COMPLETED, s.state(), s.message());
                            for (int i = 0; i < 16; i++) {
                                assertEquals(TransferState.COMPLETED, b.status(i).state());
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
        assertEquals(TargetProcess.crc(local.segment()), child.crc(0, 16 << 20));

        try (Batch b = initiator.allocateBatch(1)) {
            b.submit(List.of(req(Opcode.WRITE, local.segment().asSlice(0, 1 << 20), seg, child.address, transport)), "kv-block-9 ready");
            assertEquals(TransferState.COMPLETED, b.await(Duration.ofSeconds(30)).state());
        }
        assertEquals(initiator.segmentName() + " kv-block-9 ready", child.note());
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aTargetKilledMidBatchFailsTheTasksWithinTheTimeout(String transport) throws Exception {
        TargetProcess.Child child = keep(new TargetProcess.Child(64 << 20));
        TransferEngine initiator = keep(TransferEngine.create(cfg().set(EngineConfig.TRANSFER_TIMEOUT, "5s").build()));
        RegisteredMemory local = initiator.allocate(64 << 20, Location.CPU, Permission.READ_WRITE);
        SegmentHandle seg = initiator.openSegment(child.segment);
        List<Batch> batches = new ArrayList<>();
        long start = System.nanoTime();
        int failed = 0;
        // Batches keep coming while and after the target dies, as an application's would; slices that landed before
        // the death was noticed may complete, every later one must fail, and none may hang. kill() returns once the
        // process is gone, so from then on each batch is a fresh chance to notice; the loop ends at the first failure.
        long noticeBy = start + Duration.ofSeconds(20).toNanos();
        for (int i = 0; failed == 0; i++) {
            assertTrue(System.nanoTime() - noticeBy < 0, "no batch failed within 20 s of starting, " + i
                    + " batches, the target killed after the third");
            Batch b = keep(initiator.allocateBatch(8));
            List<TransferRequest> reqs = new ArrayList<>();
            for (int j = 0; j < 8; j++) {
                reqs.add(req(j % 2 == 0 ? Opcode.WRITE : Opcode.READ, local.segment().asSlice(j * (8L << 20), 8 << 20), seg,
                        child.address + j * (8L << 20), transport));
            }
            b.submit(reqs);
            batches.add(b);
            if (i == 2) {
                child.kill();
            }
            if (i > 2) {
                TransferStatus s = b.await(Duration.ofSeconds(20));
                assertTrue(s.isTerminal(), "batch still " + s + " after the target died");
                failed += s.state() == TransferState.FAILED ? 1 : 0;
            }
        }
        for (Batch b : batches) {
            TransferStatus s = b.await(Duration.ofSeconds(20));
            assertTrue(s.isTerminal(), "batch still " + s + " after the target died");
            if (s.state() == TransferState.FAILED) {
                assertTrue(s.message() != null && !s.message().isEmpty());
            }
        }
        assertTrue(failed > 0, "killing the target failed no batch");
        assertTrue(Duration.ofNanos(System.nanoTime() - start).toSeconds() < 30, "tasks took too long to fail");
    }
}
