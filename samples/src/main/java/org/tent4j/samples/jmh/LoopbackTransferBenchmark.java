package org.tent4j.samples.jmh;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.tent4j.api.Batch;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.PreparedTransfer;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;

/**
 * Small transfers through a pair of engines in one JVM (a target and an initiator, as two peers), one transport
 * required per run. Run with {@code -prof gc}: {@code gc.alloc.rate.norm} is the heap the engine allocates per
 * request, which should stay flat as the runtime evolves.
 *
 * <p>{@code single}: one request, submit and wait (round-trip latency bound). {@code batch32}: 32 requests in one
 * new batch at distinct offsets (scores are per request, through {@link OperationsPerInvocation}). {@code prepared32}:
 * the same 32 requests prepared once ({@link TransferEngine#prepare}) and posted again each invocation, which is what
 * allocates nothing per request.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
        "-Dio.netty.recycler.chunkSize=1024",
        "-Xms512m", "-Xmx512m"})
public class LoopbackTransferBenchmark {
    private static final int BATCH = 32;
    private static final Duration WAIT = Duration.ofSeconds(30);

    @Param({"shm", "tcp"})
    public String transport;

    @Param({"4096"})
    public int size;

    @Param({"READ"})
    public Opcode opcode;

    private TransferEngine target;
    private TransferEngine initiator;
    private SegmentHandle segment;
    private TransferRequest one;
    private List<TransferRequest> batch;
    private PreparedTransfer prepared;

    @Setup(Level.Trial)
    public void setUp() {
        target = TransferEngine.create(EngineConfig.builder().build());
        initiator = TransferEngine.create(EngineConfig.builder().build());
        RegisteredMemory remote = target.allocate((long) size * BATCH, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate((long) size * BATCH, Location.CPU, Permission.READ_WRITE);
        segment = initiator.openSegment(target.segmentName());
        long base = initiator.segmentInfo(segment).buffers().getFirst().address();
        List<TransferRequest> requests = new ArrayList<>(BATCH);
        for (int i = 0; i < BATCH; i++) {
            requests.add(TransferRequest.builder(opcode, local.segment().asSlice((long) i * size, size), segment,
                    base + (long) i * size).require(transport).build());
        }
        batch = List.copyOf(requests);
        one = batch.getFirst();
        // fail the trial here, with the engine's reason, rather than measure errors
        initiator.transfer(one).orThrow();
        prepared = initiator.prepare(batch);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (prepared != null) {
            prepared.close();
        }
        if (initiator != null) {
            initiator.close();
        }
        if (target != null) {
            target.close();
        }
    }

    @Benchmark
    public TransferStatus single() {
        return check(initiator.submit(one).join());
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public TransferStatus batch32() throws InterruptedException {
        try (Batch b = initiator.allocateBatch(BATCH)) {
            b.submit(batch);
            return check(b.await(WAIT));
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public TransferState prepared32() throws InterruptedException {
        prepared.post();
        TransferState s = prepared.await(WAIT);
        if (s != TransferState.COMPLETED) {
            throw new IllegalStateException("prepared transfer did not complete: " + s + ", first request " + prepared.status(0));
        }
        return s;
    }

    private static TransferStatus check(TransferStatus status) {
        if (!status.isCompleted()) {
            throw new IllegalStateException("transfer did not complete: " + status);
        }
        return status;
    }
}
