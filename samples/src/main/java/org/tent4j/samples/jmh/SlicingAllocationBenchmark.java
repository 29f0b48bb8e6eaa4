package org.tent4j.samples.jmh;

import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferStatus;

/**
 * Whether slices allocate: the same 1 MiB WRITE cut into 1, 16 or 256 slices ({@code slice.size} 1m, 64k, 4k).
 * Run with {@code -prof gc}: if {@code gc.alloc.rate.norm} (bytes per request) does not grow with the slice count,
 * the runtime's slicing, scheduling and completion path allocates nothing per slice; what it does allocate is per
 * request (task, future, status). The transport's own per-slice allocation shows in the difference between them.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
        "-Dio.netty.recycler.chunkSize=1024",
        "-Xms512m", "-Xmx512m"})
public class SlicingAllocationBenchmark {
    private static final int SIZE = 1 << 20;

    @Param({"shm", "tcp"})
    public String transport;

    @Param({"1m", "64k", "4k"})
    public String sliceSize;

    private TransferEngine target;
    private TransferEngine initiator;
    private TransferRequest request;

    @Setup(Level.Trial)
    public void setUp() {
        target = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1").build());
        initiator = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set(EngineConfig.SLICE_SIZE, sliceSize).set("paths.max_inflight", 512).build());
        RegisteredMemory remote = target.allocate(SIZE, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(SIZE, Location.CPU, Permission.READ_WRITE);
        SegmentHandle segment = initiator.openSegment(target.segmentName());
        request = TransferRequest.builder(org.tent4j.api.Opcode.WRITE, local.segment(), segment, remote.address())
                .require(transport).build();
        initiator.transfer(request).orThrow();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        initiator.close();
        target.close();
    }

    @Benchmark
    public TransferStatus write1MiB() {
        TransferStatus s = initiator.submit(request).join();
        if (!s.isCompleted()) {
            throw new IllegalStateException("transfer did not complete: " + s);
        }
        return s;
    }
}
