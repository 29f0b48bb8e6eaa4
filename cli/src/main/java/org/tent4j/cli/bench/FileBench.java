package org.tent4j.cli.bench;

import java.io.IOException;
import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.tent4j.cli.options.DurationConverter;
import org.tent4j.cli.options.SizeConverter;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredFile;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * te-bench over a file segment, shaped like fio so the two can be run on the same file: {@code --iodepth} requests
 * stay in flight (each completion submits the next, as fio's io_uring engine does), each of {@code --bs} bytes,
 * sequential or random over {@code [0, --size)}. The engine registers the file ({@code TransferEngine.registerFile})
 * and targets it through its own segment, so the nvmeof transport moves every byte.
 */
@Command(name = "file-bench", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Throughput and IOPS of file segments (nvmeof transport), fio-style: "
                + "file-bench --file=/data/f --rw=randread --bs=4k --iodepth=64")
public final class FileBench implements Callable<Integer> {
    /** fio's names for the access patterns. */
    public enum Rw { READ, WRITE, RANDREAD, RANDWRITE }

    @Spec
    CommandSpec spec;

    @Option(names = "--file", required = true, paramLabel = "PATH", description = "File or block device (created when missing).")
    Path file;

    @Option(names = "--size", defaultValue = "4g", converter = SizeConverter.class, paramLabel = "SIZE",
            description = "Bytes of the file to use; a new or shorter file is filled first, as fio lays out its files. Default: ${DEFAULT-VALUE}.")
    long size;

    @Option(names = "--rw", defaultValue = "read", paramLabel = "read|write|randread|randwrite",
            description = "Access pattern. Default: ${DEFAULT-VALUE}.")
    Rw rw;

    @Option(names = "--bs", defaultValue = "1m", converter = SizeConverter.class, paramLabel = "SIZE",
            description = "Bytes per request. Default: ${DEFAULT-VALUE}.")
    long bs;

    @Option(names = "--iodepth", defaultValue = "32", paramLabel = "N", description = "Requests in flight. Default: ${DEFAULT-VALUE}.")
    int iodepth;

    @Option(names = "--runtime", defaultValue = "10s", converter = DurationConverter.class, paramLabel = "DURATION",
            description = "Measured time (10s, 500ms; a plain number is seconds, as fio counts). Default: ${DEFAULT-VALUE}.")
    Duration runtime;

    @Option(names = "--warmup", defaultValue = "1s", converter = DurationConverter.class, paramLabel = "DURATION",
            description = "Unmeasured time first. Default: ${DEFAULT-VALUE}.")
    Duration warmup;

    @Option(names = "--engine", defaultValue = "auto", paramLabel = "auto|io_uring|filechannel",
            description = "transports.nvmeof.engine. Default: ${DEFAULT-VALUE}.")
    String ioEngine;

    @Option(names = "--rings", defaultValue = "1", paramLabel = "N", description = "transports.nvmeof.rings. Default: ${DEFAULT-VALUE}.")
    int rings;

    // remote file segments (issue 12)
    @Option(names = "--via", defaultValue = "local", paramLabel = "local|tcp|tcp-memory",
            description = "local: this engine's own file through nvmeof; tcp: the file belongs to a second engine (in this "
                    + "process, tcp only) and is reached over tcp, that engine doing the file I/O; tcp-memory: the same "
                    + "over tcp but to --size bytes of the second engine's memory instead of a file. Default: ${DEFAULT-VALUE}.")
    String viaName;
    private Via via;

    enum Via { LOCAL, TCP, TCP_MEMORY }

    @Option(names = "--set", paramLabel = "KEY=VALUE", description = "Any engine config key, repeatable.")
    Map<String, String> settings;

    @Option(names = "--json", description = "End with one JSON line: mib_per_sec, iops, p50_us, p99_us, errors.")
    boolean json;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        if (bs <= 0 || iodepth <= 0 || size < bs || runtime.isZero() || rings <= 0) {
            throw new CommandLine.ParameterException(spec.commandLine(), "need --bs > 0, --iodepth > 0, --size >= --bs, --runtime > 0, --rings > 0");
        }
        via = switch (viaName.toLowerCase(Locale.ROOT)) {
            case "local" -> Via.LOCAL;
            case "tcp" -> Via.TCP;
            case "tcp-memory" -> Via.TCP_MEMORY;
            default -> throw new CommandLine.ParameterException(spec.commandLine(), "--via must be local, tcp or tcp-memory, got " + viaName);
        };
        EngineConfig.Builder b = EngineConfig.builder()
                .set(EngineConfig.METADATA_URI, "memory://file-bench")
                .set(EngineConfig.TRANSPORTS_ENABLED, via == Via.LOCAL ? "nvmeof" : "tcp")
                // one request = one slice, and the path admits the whole queue depth
                .set(EngineConfig.SLICE_SIZE, Math.max(bs, 4096))
                .set("paths.max_inflight", iodepth)
                .set("paths.max_inflight_bytes", (long) iodepth * bs)
                .set("transports.nvmeof.engine", ioEngine)
                .set("transports.nvmeof.rings", rings)
                .set("transports.nvmeof.queue_depth", Math.max(iodepth * 2, 8));
        if (settings != null) {
            b.setAll(settings);
        }
        boolean layOut = !Files.exists(file) || (Files.isRegularFile(file) && allocatedBytes(file) < size);
        try (TransferEngine owner = via == Via.LOCAL ? null : TransferEngine.create(EngineConfig.builder()
                .set(EngineConfig.METADATA_URI, "memory://file-bench").set(EngineConfig.SEGMENT_NAME, "file-bench-owner")
                .set(EngineConfig.TRANSPORTS_ENABLED, "tcp").build());
             TransferEngine engine = TransferEngine.create(b.build())) {
            long base;
            SegmentHandle target;
            if (via == Via.TCP_MEMORY) {
                base = owner.allocate(size, Location.CPU, Permission.READ_WRITE).address();
                target = engine.openSegment(owner.segmentName());
            } else {
                TransferEngine fileOwner = owner == null ? engine : owner;
                RegisteredFile f = fileOwner.registerFile(file, Files.exists(file) && Files.size(file) >= size ? 0 : size, Permission.READ_WRITE);
                base = f.address();
                target = owner == null ? engine.localSegment() : engine.openSegment(owner.segmentName());
            }
            RegisteredMemory memory = engine.allocate((long) iodepth * bs, Location.CPU, Permission.READ_WRITE);
            memory.segment().fill((byte) 0x5a);
            if (layOut && via != Via.TCP_MEMORY) {
                out.printf(Locale.ROOT, "file-bench: laying out %s (%d bytes)%n", file, size);
                out.flush();
                layOut(engine, target, base, memory.segment());
            }
            Opcode op = rw == Rw.READ || rw == Rw.RANDREAD ? Opcode.READ : Opcode.WRITE;
            boolean random = rw == Rw.RANDREAD || rw == Rw.RANDWRITE;
            Run run = new Run(engine, target, base, memory.segment(), op, random);
            run.go();
            double seconds = run.measuredNanos / 1e9;
            double iops = run.ops.get() / seconds;
            double mibs = run.bytes.get() / seconds / (1 << 20);
            out.printf(Locale.ROOT, "file-bench: %s %s via %s bs=%d iodepth=%d engine=%s rings=%d: %.1f MiB/s, %.0f IOPS, "
                            + "latency p50 %.1f us p99 %.1f us, %d errors%s%n",
                    rw.name().toLowerCase(Locale.ROOT), via == Via.TCP_MEMORY ? "memory" : file,
                    via.name().toLowerCase(Locale.ROOT).replace('_', '-'), bs, iodepth, ioEngine, rings, mibs, iops,
                    run.latency.percentile(50) / 1e3, run.latency.percentile(99) / 1e3, run.errors.get(),
                    run.firstError.get() == null ? "" : " (first: " + run.firstError.get() + ")");
            if (json) {
                out.printf(Locale.ROOT, "{\"mib_per_sec\":%.1f,\"iops\":%.0f,\"p50_us\":%.1f,\"p99_us\":%.1f,\"errors\":%d}%n",
                        mibs, iops, run.latency.percentile(50) / 1e3, run.latency.percentile(99) / 1e3, run.errors.get());
            }
            out.flush();
            return run.errors.get() == 0 ? 0 : 1;
        } catch (TransferException e) {
            spec.commandLine().getErr().println("file-bench: " + e.getMessage());
            return 3;
        }
    }

    private static long allocatedBytes(Path p) throws IOException {
        try {
            Process stat = new ProcessBuilder("stat", "-c", "%b %B", p.toString()).start();
            String[] v = new String(stat.getInputStream().readAllBytes()).strip().split(" ");
            return Long.parseLong(v[0]) * Long.parseLong(v[1]);
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    private void layOut(TransferEngine engine, SegmentHandle target, long base, MemorySegment memory) {
        long chunk = Math.min(memory.byteSize(), 8L << 20);
        for (long off = 0; off < size; off += chunk) {
            long n = Math.min(chunk, size - off);
            TransferStatus s = engine.transfer(TransferRequest.write(memory.asSlice(0, n), target, base + off));
            if (s.state() != TransferState.COMPLETED) {
                throw new TransferException(s.error(), "laying out the file failed: " + s.message());
            }
        }
    }

    /** {@code iodepth} chains of requests; each completion records and submits the chain's next request. */
    private final class Run {
        final TransferEngine engine;
        final SegmentHandle target;
        final long base;
        final MemorySegment memory;
        final Opcode op;
        final boolean random;
        final AtomicLong ops = new AtomicLong();
        final AtomicLong bytes = new AtomicLong();
        final AtomicLong errors = new AtomicLong();
        final AtomicLong sequential = new AtomicLong();
        final AtomicReference<String> firstError = new AtomicReference<>();
        final LatencyHistogram latency = new LatencyHistogram();
        final CountDownLatch done;
        final long blocks;
        long recordFrom;
        long deadline;
        long measuredNanos;

        Run(TransferEngine engine, SegmentHandle target, long base, MemorySegment memory, Opcode op, boolean random) {
            this.engine = engine;
            this.target = target;
            this.base = base;
            this.memory = memory;
            this.op = op;
            this.random = random;
            this.done = new CountDownLatch(iodepth);
            this.blocks = size / bs;
        }

        void go() throws InterruptedException {
            long start = System.nanoTime();
            recordFrom = start + warmup.toNanos();
            deadline = recordFrom + runtime.toNanos();
            for (int slot = 0; slot < iodepth; slot++) {
                submit(slot, new SplittableRandom(slot * 7919L + 1));
            }
            done.await();
            measuredNanos = Math.min(System.nanoTime(), deadline) - recordFrom;
        }

        private void submit(int slot, SplittableRandom rnd) {
            long block = random ? rnd.nextLong(blocks) : sequential.getAndIncrement() % blocks;
            MemorySegment local = memory.asSlice(slot * bs, bs);
            long t0 = System.nanoTime();
            engine.submit(TransferRequest.builder(op, local, target, base + block * bs).build())
                    .whenComplete((status, e) -> {
                        long now = System.nanoTime();
                        boolean okStatus = e == null && status.state() == TransferState.COMPLETED;
                        if (now >= recordFrom && now <= deadline) {
                            if (okStatus) {
                                ops.incrementAndGet();
                                bytes.addAndGet(bs);
                                synchronized (latency) {
                                    latency.record(now - t0);
                                }
                            }
                        }
                        if (!okStatus) {
                            errors.incrementAndGet();
                            firstError.compareAndSet(null, e != null ? e.toString() : status.message());
                        }
                        if (now < deadline && okStatus) {
                            submit(slot, rnd);
                        } else {
                            done.countDown();
                        }
                    });
        }
    }
}
