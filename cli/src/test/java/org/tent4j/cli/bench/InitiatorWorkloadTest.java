package org.tent4j.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.tent4j.api.Batch;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Notification;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.SegmentInfo;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferPlan;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.api.TransportInfo;

/**
 * The workload against an engine that copies bytes itself and can be told to corrupt, drop or fail requests: proves
 * that {@code --check_consistency} catches what a broken transport would do, independent of any real transport.
 */
class InitiatorWorkloadTest {
    private static final long BLOCK = 4096;
    private static final int BATCH = 8;

    private Arena arena;
    private MemorySegment remote;
    private MemorySegment local;
    private ExecutorService completions;

    @BeforeEach
    void setUp() {
        arena = Arena.ofShared();
        remote = arena.allocate(1 << 20, 4096);
        local = arena.allocate(1 << 20, 4096);
        completions = Executors.newFixedThreadPool(2);
    }

    @AfterEach
    void tearDown() {
        completions.shutdownNow();
        arena.close();
    }

    @Test
    void cleanReadsAndWritesHaveNoErrors() throws Exception {
        DataPattern.fill(remote, 0, DataPattern.TARGET_SEED);
        for (Opcode op : Opcode.values()) {
            CopyingEngine engine = new CopyingEngine(Fault.NONE, 0);
            BenchResult r = run(engine, op, false);
            assertEquals(0, r.errors(), r.summary());
            assertEquals(0, r.mismatches());
            assertTrue(r.operations() > 0, r.summary());
            assertEquals(r.operations() * BLOCK, r.bytes());
            assertEquals(r.operations(), r.latency().count());
            assertTrue(engine.requests.get() >= r.operations(), "every measured op went through the engine");
        }
    }

    @Test
    void corruptedReadsAreCaught() throws Exception {
        DataPattern.fill(remote, 0, DataPattern.TARGET_SEED);
        BenchResult r = run(new CopyingEngine(Fault.CORRUPT, 5), Opcode.READ, false);
        assertTrue(r.mismatches() > 0, r.summary());
        assertEquals(r.mismatches(), r.errors(), "corruption is the only error");
        assertNotNull(r.firstError());
        assertTrue(r.firstError().startsWith("consistency check failed: READ of 4096 bytes"), r.firstError());
    }

    @Test
    void writesThatNeverLandAreCaughtByTheReadBack() throws Exception {
        BenchResult r = run(new CopyingEngine(Fault.DROP_WRITE, 3), Opcode.WRITE, false);
        assertTrue(r.mismatches() > 0, r.summary());
        assertTrue(r.firstError().contains("consistency check failed: WRITE"), r.firstError());
    }

    @Test
    void failedTasksCountAsErrorsAndNotAsBytes() throws Exception {
        DataPattern.fill(remote, 0, DataPattern.TARGET_SEED);
        BenchResult r = run(new CopyingEngine(Fault.FAIL, 4), Opcode.READ, false);
        assertTrue(r.errors() > 0, r.summary());
        assertEquals(0, r.mismatches(), "failed blocks are not checked: " + r.summary());
        assertTrue(r.firstError().contains("FAILED PEER_FAILED: injected failure"), r.firstError());
        assertEquals(r.operations() * BLOCK, r.bytes());
    }

    @Test
    void readsOfAnUnfilledTargetFailUnlessTheInitiatorSeedsIt() throws Exception {
        BenchResult unseeded = run(new CopyingEngine(Fault.NONE, 0), Opcode.READ, false);
        assertTrue(unseeded.mismatches() > 0, "zeroes must not pass: " + unseeded.summary());
        BenchResult seeded = run(new CopyingEngine(Fault.NONE, 0), Opcode.READ, true);
        assertEquals(0, seeded.errors(), seeded.summary());
        assertEquals(-1, DataPattern.firstMismatch(remote.asSlice(0, 2 * 16 * BLOCK), 0, DataPattern.TARGET_SEED));
    }

    private BenchResult run(CopyingEngine engine, Opcode op, boolean seed) throws InterruptedException {
        InitiatorWorkload.Plan plan = new InitiatorWorkload.Plan(op, "fake", BLOCK, BATCH, 2, Duration.ZERO,
                Duration.ofMillis(200), true, seed);
        // 16 blocks per thread: two batches each, so windows wrap around several times
        InitiatorWorkload w = new InitiatorWorkload(engine, engine.segment, remote.address(),
                local.asSlice(0, 2 * 16 * BLOCK), plan, new PrintWriter(new StringWriter()));
        return w.run();
    }

    enum Fault { NONE, CORRUPT, DROP_WRITE, FAIL }

    /** Moves bytes between {@link #local} and {@link #remote} on a small pool, with an optional fault every n-th. */
    private final class CopyingEngine implements TransferEngine {
        final SegmentHandle segment = new SegmentHandle() {
            @Override
            public String name() {
                return "fake-target";
            }

            @Override
            public int id() {
                return 1;
            }

            @Override
            public boolean isLocal() {
                return false;
            }
        };
        final AtomicLong requests = new AtomicLong();
        private final Fault fault;
        private final int every;

        CopyingEngine(Fault fault, int every) {
            this.fault = fault;
            this.every = every;
        }

        private TransferStatus execute(TransferRequest r) {
            assertEquals("fake", r.transport());
            long n = requests.incrementAndGet();
            boolean faulty = fault != Fault.NONE && n % every == 0;
            if (faulty && fault == Fault.FAIL) {
                return TransferStatus.failed(TransferState.FAILED, ErrorCode.PEER_FAILED, "injected failure");
            }
            MemorySegment target = remote.asSlice(r.targetOffset() - remote.address(), r.length());
            MemorySegment mine = r.local().asSlice(0, r.length());
            if (r.opcode() == Opcode.READ) {
                mine.copyFrom(target);
                if (faulty && fault == Fault.CORRUPT) {
                    mine.set(ValueLayout.JAVA_BYTE, r.length() / 2, (byte) ~mine.get(ValueLayout.JAVA_BYTE, r.length() / 2));
                }
            } else if (!(faulty && fault == Fault.DROP_WRITE)) {
                target.copyFrom(mine);
            }
            return TransferStatus.completed(r.length());
        }

        @Override
        public Batch allocateBatch(int capacity) {
            return new Batch() {
                private final List<CompletableFuture<TransferStatus>> tasks = new ArrayList<>();

                @Override
                public int capacity() {
                    return capacity;
                }

                @Override
                public synchronized int submit(List<TransferRequest> requests) {
                    int first = tasks.size();
                    for (TransferRequest r : requests) {
                        tasks.add(CompletableFuture.supplyAsync(() -> execute(r), completions));
                    }
                    return first;
                }

                @Override
                public int submit(List<TransferRequest> requests, String notification) {
                    throw new UnsupportedOperationException();
                }

                @Override
                public synchronized int size() {
                    return tasks.size();
                }

                @Override
                public synchronized TransferStatus status(int taskId) {
                    return tasks.get(taskId).getNow(TransferStatus.PENDING);
                }

                @Override
                public List<TransferStatus> statuses() {
                    throw new UnsupportedOperationException();
                }

                // TransferEngine.prepare's default posts through batches and reads their overall status
                @Override
                public synchronized TransferStatus overallStatus() {
                    long bytes = 0;
                    TransferStatus worst = null;
                    for (CompletableFuture<TransferStatus> f : tasks) {
                        TransferStatus s = f.getNow(TransferStatus.PENDING);
                        if (!s.isTerminal()) {
                            return TransferStatus.PENDING;
                        }
                        if (s.isCompleted()) {
                            bytes += s.bytesTransferred();
                        } else if (worst == null || s.state().severity() > worst.state().severity()) {
                            worst = s;
                        }
                    }
                    return worst != null ? worst : TransferStatus.completed(bytes);
                }

                @Override
                public CompletableFuture<TransferStatus> completion() {
                    throw new UnsupportedOperationException();
                }

                @Override
                public synchronized CompletableFuture<TransferStatus> completion(int taskId) {
                    return tasks.get(taskId);
                }

                @Override
                public TransferStatus await(Duration timeout) throws InterruptedException {
                    CompletableFuture<?>[] all;
                    synchronized (this) {
                        all = tasks.toArray(new CompletableFuture<?>[0]);
                    }
                    try {
                        CompletableFuture.allOf(all).get(timeout.toNanos(), java.util.concurrent.TimeUnit.NANOSECONDS);
                    } catch (java.util.concurrent.TimeoutException e) {
                        return TransferStatus.PENDING;
                    } catch (java.util.concurrent.ExecutionException e) {
                        throw new IllegalStateException(e.getCause());
                    }
                    for (CompletableFuture<?> f : all) {
                        if (!((TransferStatus) f.join()).isCompleted()) {
                            return TransferStatus.failed(TransferState.FAILED, ErrorCode.INTERNAL, "a task did not complete");
                        }
                    }
                    return TransferStatus.completed(0);
                }

                @Override
                public boolean cancel(int taskId) {
                    return false;
                }

                @Override
                public void close() {
                }
            };
        }

        @Override
        public String segmentName() {
            return "fake-initiator";
        }

        @Override
        public SegmentHandle localSegment() {
            throw new UnsupportedOperationException();
        }

        @Override
        public RegisteredMemory register(MemorySegment memory, Location location, Permission permission) {
            throw new UnsupportedOperationException();
        }

        @Override
        public RegisteredMemory allocate(long size, Location location, Permission permission) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void unregister(RegisteredMemory memory) {
            throw new UnsupportedOperationException();
        }

        @Override
        public SegmentHandle openSegment(String name) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void closeSegment(SegmentHandle s) {
            throw new UnsupportedOperationException();
        }

        @Override
        public SegmentInfo segmentInfo(SegmentHandle s) {
            throw new UnsupportedOperationException();
        }

        @Override
        public CompletableFuture<TransferStatus> submit(TransferRequest request) {
            throw new UnsupportedOperationException();
        }

        @Override
        public CompletableFuture<Void> sendNotification(SegmentHandle target, String message) {
            throw new UnsupportedOperationException();
        }

        @Override
        public List<Notification> drainNotifications() {
            throw new UnsupportedOperationException();
        }

        @Override
        public Notification awaitNotification(Duration timeout) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void onNotification(Consumer<Notification> listener) {
            throw new UnsupportedOperationException();
        }

        @Override
        public TransferPlan explain(TransferRequest request) {
            return new TransferPlan(null, List.of(), "copy", null, request.length(), 1, null);
        }

        @Override
        public List<TransportInfo> transports() {
            throw new UnsupportedOperationException();
        }

        @Override
        public void close() {
        }
    }
}
