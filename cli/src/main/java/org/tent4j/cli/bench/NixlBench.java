package org.tent4j.cli.bench;

import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

import org.tent4j.cli.options.DurationConverter;
import org.tent4j.cli.options.SizeConverter;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.Opcode;
import org.tent4j.integration.nixl.Agent;
import org.tent4j.integration.nixl.AgentConfig;
import org.tent4j.integration.nixl.DescriptorList;
import org.tent4j.integration.nixl.MemoryType;
import org.tent4j.integration.nixl.PreparedList;
import org.tent4j.integration.nixl.XferOptions;
import org.tent4j.integration.nixl.XferRequest;
import org.tent4j.integration.nixl.XferState;
import org.tent4j.integration.nixl.XferTelemetry;

import org.tent4j.cli.options.ConciseUsageErrors;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * A nixlbench-style sweep through the NIXL-style agent ({@code integration-nixl}) with its tent4j backend: block sizes
 * and batch sizes in powers of two, one row per pair with bandwidth and average / p99 of prepare, post and transfer
 * times. Descriptor lists are prepared once per block size and reused; each iteration makes a request by index
 * ({@link Agent#makeXferReq}, without merging contiguous neighbours), posts it, waits, releases it: a batch is
 * {@code batch_size} requests of {@code block_size} at consecutive blocks, the shape te-bench submits.
 *
 * <p>Two processes: {@code --mode=target} registers a buffer and prints {@code --peer=host:port}; {@code
 * --mode=initiator --peer=...} fetches the target agent's metadata straight from it and runs the sweep.
 */
@Command(name = "nixl-bench", mixinStandardHelpOptions = true, sortOptions = false, usageHelpAutoWidth = true,
        description = "nixlbench-style sweep through the NIXL-style agent (tent4j backend).")
public final class NixlBench implements Callable<Integer> {
    private static final String BUFFER_LABEL = "nixl-bench-buffer";
    private static final XferOptions UNMERGED = XferOptions.NONE.withoutMerging();

    enum Mode { TARGET, INITIATOR }

    @Option(names = "--mode", required = true, paramLabel = "target|initiator", description = "Which side this process is.")
    Mode mode;
    @Option(names = "--peer", paramLabel = "HOST:PORT", description = "The target's listen address (initiator).")
    String peer;
    @Option(names = "--operation", defaultValue = "write", paramLabel = "read|write", description = "Default: ${DEFAULT-VALUE}.")
    String operation;
    @Option(names = "--protocol", defaultValue = "tcp", paramLabel = "ID", description = "The one transport the engines run. Default: ${DEFAULT-VALUE}.")
    String protocol;
    @Option(names = {"--start-block-size", "--start_block_size"}, defaultValue = "4k", converter = SizeConverter.class, description = "Default: ${DEFAULT-VALUE}.")
    long startBlock;
    @Option(names = {"--max-block-size", "--max_block_size"}, defaultValue = "1m", converter = SizeConverter.class, description = "Default: ${DEFAULT-VALUE}.")
    long maxBlock;
    @Option(names = {"--start-batch-size", "--start_batch_size"}, defaultValue = "1", description = "Default: ${DEFAULT-VALUE}.")
    int startBatch;
    @Option(names = {"--max-batch-size", "--max_batch_size"}, defaultValue = "32", description = "Default: ${DEFAULT-VALUE}.")
    int maxBatch;
    @Option(names = "--threads", defaultValue = "2", description = "Initiator threads, each on its own range. Default: ${DEFAULT-VALUE}.")
    int threads;
    @Option(names = "--duration", defaultValue = "1s", converter = DurationConverter.class, paramLabel = "DURATION",
            description = "Measured time per row (1s, 500ms; a plain number is seconds). Default: ${DEFAULT-VALUE}.")
    Duration duration;
    @Option(names = "--warmup", defaultValue = "300ms", converter = DurationConverter.class, paramLabel = "DURATION",
            description = "Unmeasured time per row. Default: ${DEFAULT-VALUE}.")
    Duration warmup;
    @Option(names = {"--buffer-size", "--buffer_size"}, defaultValue = "256m", converter = SizeConverter.class, description = "Default: ${DEFAULT-VALUE}.")
    long bufferSize;
    @Option(names = {"--listen-port", "--listen_port"}, defaultValue = "0", description = "Target's listen (control) port; 0 picks one.")
    int listenPort;
    @Option(names = "--baseline", description = "Run the same loop straight on the agent's engine (a batch of the same "
            + "requests per iteration, built once), without the agent: what the agent itself costs. Prep and post columns are 0.")
    boolean baseline;
    @Option(names = "--set", paramLabel = "KEY=VALUE", description = "Extra engine setting (repeatable).")
    Map<String, String> settings;

    private Agent agent(String name) {
        EngineConfig.Builder b = EngineConfig.builder().set(EngineConfig.TRANSPORTS_ENABLED, protocol)
                .set(EngineConfig.CONTROL_PORT, mode == Mode.TARGET ? listenPort : 0);
        if (settings != null) {
            b.setAll(settings);
        }
        Agent a = Agent.create(AgentConfig.of(name, b.build()));
        a.createBackend("tent4j", Map.of("transport", protocol));
        return a;
    }

    @Override
    public Integer call() throws Exception {
        PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
        if (!Long.toString(Long.highestOneBit(startBlock)).equals(Long.toString(startBlock)) || startBlock > maxBlock
                || Integer.bitCount(startBatch) != 1 || startBatch > maxBatch || threads < 1 || duration.isZero()) {
            System.err.println("nixl-bench: block and batch sizes start at a power of two no larger than their maximum; threads >= 1; duration > 0");
            return 2;
        }
        return mode == Mode.TARGET ? target(out) : initiator(out);
    }

    private int target(PrintWriter out) throws InterruptedException {
        try (Agent agent = agent("nixl-bench-target"); Arena arena = Arena.ofShared()) {
            MemorySegment buffer = arena.allocate(bufferSize, 4096);
            DataPattern.fill(buffer, 0, DataPattern.TARGET_SEED);
            agent.registerMem(DescriptorList.dram(buffer));
            String where = buffer.address() + " " + buffer.byteSize() + " " + agent.engine().segmentName();
            agent.engine().offerBlob(BUFFER_LABEL, () -> where.getBytes(StandardCharsets.UTF_8));
            out.println("nixl-bench target: agent '" + agent.name() + "', buffer 0x" + Long.toHexString(buffer.address()) + " of "
                    + buffer.byteSize() + " bytes, transport " + protocol);
            out.println("--peer=" + agent.listenAddress());
            CountDownLatch stop = new CountDownLatch(1);
            TerminationSignals.install(stop::countDown);
            stop.await();
        }
        return 0;
    }

    private int initiator(PrintWriter out) throws Exception {
        if (peer == null || peer.lastIndexOf(':') < 0) {
            System.err.println("nixl-bench: --peer=host:port is required for --mode=initiator (the target prints it)");
            return 2;
        }
        String host = peer.substring(0, peer.lastIndexOf(':'));
        int port = Integer.parseInt(peer.substring(peer.lastIndexOf(':') + 1));
        Opcode op = Opcode.valueOf(operation.toUpperCase(Locale.ROOT));
        try (Agent agent = agent("nixl-bench-initiator"); Arena arena = Arena.ofShared()) {
            String remote = agent.fetchRemoteMD(host, port, Agent.FULL, Duration.ofSeconds(10));
            String[] where = new String(agent.engine().fetchBlob(host, port, BUFFER_LABEL, Duration.ofSeconds(10)), StandardCharsets.UTF_8).split(" ");
            long remoteBase = Long.parseLong(where[0]);
            long size = Math.min(bufferSize, Long.parseLong(where[1]));
            MemorySegment local = arena.allocate(size, 4096);
            local.fill((byte) 0);
            agent.registerMem(DescriptorList.dram(local));
            long range = size / threads;
            out.printf(Locale.ROOT, "nixl-bench: %s to agent '%s' over %s, %d thread(s), %.1f s (+%.1f s warm-up) per row, %d bytes per thread%n",
                    operation, remote, protocol, threads, duration.toMillis() / 1e3, warmup.toMillis() / 1e3, range);
            out.printf(Locale.ROOT, "%-14s %-10s %-12s %-13s %-13s %-13s %-13s %-13s %-11s %-11s%n", "Block Size (B)", "Batch Size",
                    "B/W (GB/Sec)", "Avg Lat. (us)", "Avg Prep (us)", "P99 Prep (us)", "Avg Post (us)", "P99 Post (us)", "Avg Tx (us)", "P99 Tx (us)");
            for (long block = startBlock; block <= maxBlock; block <<= 1) {
                int blocks = (int) Math.min(range / block, 1 << 16);
                if (blocks < startBatch) {
                    out.printf(Locale.ROOT, "%-14d (buffer too small for one batch per thread)%n", block);
                    continue;
                }
                List<PreparedList[]> lists = new ArrayList<>();
                List<long[]> bases = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    long offset = t * range;
                    bases.add(new long[]{local.address() + offset, remoteBase + offset});
                    lists.add(new PreparedList[]{
                            agent.prepXferDlist("", DescriptorList.blocks(MemoryType.DRAM, local.address() + offset, block, blocks, 0)),
                            agent.prepXferDlist(remote, DescriptorList.blocks(MemoryType.DRAM, remoteBase + offset, block, blocks, 0))});
                }
                for (int batch = startBatch; batch <= maxBatch && batch <= blocks; batch <<= 1) {
                    Row row = baseline ? runOnEngine(agent.engine(), where[2], op, local, bases, block, batch, blocks)
                            : run(agent, op, lists, block, batch, blocks);
                    if (row.error != null) {
                        System.err.println("nixl-bench: block " + block + " batch " + batch + ": " + row.error);
                        return 1;
                    }
                    out.printf(Locale.ROOT, "%-14d %-10d %-12.3f %-13.1f %-13.1f %-13.1f %-13.1f %-13.1f %-11.1f %-11.1f%n", block, batch,
                            row.bytes / (row.nanos / 1e9) / 1e9, row.avg(row.lat), row.avg(row.prep), row.prep.percentile(99) / 1e3,
                            row.avg(row.post), row.post.percentile(99) / 1e3, row.avg(row.tx), row.tx.percentile(99) / 1e3);
                }
                for (PreparedList[] l : lists) {
                    l[0].release();
                    l[1].release();
                }
            }
        }
        return 0;
    }

    /** One row's measurements, merged over threads. */
    private static final class Row {
        final LatencyHistogram prep = new LatencyHistogram();
        final LatencyHistogram post = new LatencyHistogram();
        final LatencyHistogram tx = new LatencyHistogram();
        final LatencyHistogram lat = new LatencyHistogram();
        long sumPrep;
        long sumPost;
        long sumTx;
        long sumLat;
        long bytes;
        long nanos;
        String error;

        double avg(LatencyHistogram h) {
            long n = h.count();
            long sum = h == prep ? sumPrep : h == post ? sumPost : h == tx ? sumTx : sumLat;
            return n == 0 ? 0 : sum / (double) n / 1e3;
        }

        synchronized void add(Row r) {
            prep.add(r.prep);
            post.add(r.post);
            tx.add(r.tx);
            lat.add(r.lat);
            sumPrep += r.sumPrep;
            sumPost += r.sumPost;
            sumTx += r.sumTx;
            sumLat += r.sumLat;
            bytes += r.bytes;
        }
    }

    private Row run(Agent agent, Opcode op, List<PreparedList[]> lists, long block, int batch, int blocks) throws InterruptedException {
        Row total = new Row();
        AtomicReference<String> error = new AtomicReference<>();
        int[][] localIdx = new int[blocks / batch][batch];
        int[][] remoteIdx = new int[blocks / batch][batch];
        for (int w = 0; w < localIdx.length; w++) {
            for (int k = 0; k < batch; k++) {
                localIdx[w][k] = w * batch + k;
                remoteIdx[w][k] = w * batch + k;
            }
        }
        long start = System.nanoTime();
        long recordFrom = start + warmup.toNanos();
        long deadline = recordFrom + duration.toNanos();
        long[] lastDone = new long[lists.size()];
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < lists.size(); t++) {
            PreparedList[] l = lists.get(t);
            int ti = t;
            workers.add(Thread.ofPlatform().name("nixl-bench-" + t).start(() -> {
                Row mine = new Row();
                try {
                    for (int w = 0; ; w = (w + 1) % localIdx.length) {
                        long t0 = System.nanoTime();
                        if (t0 >= deadline) {
                            break;
                        }
                        XferRequest r = agent.makeXferReq(op, l[0], localIdx[w], l[1], remoteIdx[w], UNMERGED);
                        long t1 = System.nanoTime();
                        XferState s = r.post();
                        if (s != XferState.DONE) {
                            s = r.await(Duration.ofSeconds(60));
                        }
                        long t2 = System.nanoTime();
                        if (s != XferState.DONE) {
                            error.compareAndSet(null, s + ": " + r.error());
                            break;
                        }
                        XferTelemetry tel = r.telemetry();
                        r.release();
                        if (t0 >= recordFrom) {
                            mine.prep.record(t1 - t0);
                            mine.sumPrep += t1 - t0;
                            mine.post.record(tel.postNanos());
                            mine.sumPost += tel.postNanos();
                            mine.tx.record(tel.transferNanos());
                            mine.sumTx += tel.transferNanos();
                            mine.lat.record(t2 - t0);
                            mine.sumLat += t2 - t0;
                            mine.bytes += tel.bytes();
                            lastDone[ti] = t2;
                        }
                    }
                } catch (RuntimeException e) {
                    error.compareAndSet(null, e.toString());
                } catch (InterruptedException e) {
                    error.compareAndSet(null, "interrupted");
                }
                total.add(mine);
            }));
        }
        for (Thread w : workers) {
            w.join();
        }
        long end = recordFrom;
        for (long d : lastDone) {
            end = Math.max(end, d);
        }
        total.nanos = Math.max(1, end - recordFrom);
        total.error = error.get();
        return total;
    }

    /** The baseline: te-bench's loop on the agent's engine, requests built once per window, one batch per iteration. */
    private Row runOnEngine(org.tent4j.api.TransferEngine engine, String segmentName, Opcode op, MemorySegment local, List<long[]> bases,
                            long block, int batch,
                            int blocks) throws InterruptedException {
        org.tent4j.api.SegmentHandle target = engine.openSegment(segmentName);
        Row total = new Row();
        AtomicReference<String> error = new AtomicReference<>();
        long start = System.nanoTime();
        long recordFrom = start + warmup.toNanos();
        long deadline = recordFrom + duration.toNanos();
        long[] lastDone = new long[bases.size()];
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < bases.size(); t++) {
            long[] base = bases.get(t);
            int ti = t;
            List<List<org.tent4j.api.TransferRequest>> windows = new ArrayList<>();
            for (int w = 0; w < blocks / batch; w++) {
                List<org.tent4j.api.TransferRequest> q = new ArrayList<>(batch);
                for (int k = 0; k < batch; k++) {
                    long off = (w * (long) batch + k) * block;
                    q.add(org.tent4j.api.TransferRequest.builder(op, local.asSlice(base[0] - local.address() + off, block), target,
                            base[1] + off).require(protocol).build());
                }
                windows.add(List.copyOf(q));
            }
            workers.add(Thread.ofPlatform().name("nixl-bench-baseline-" + t).start(() -> {
                Row mine = new Row();
                try {
                    for (int w = 0; ; w = (w + 1) % windows.size()) {
                        long t0 = System.nanoTime();
                        if (t0 >= deadline) {
                            break;
                        }
                        try (org.tent4j.api.Batch b = engine.allocateBatch(batch)) {
                            b.submit(windows.get(w));
                            org.tent4j.api.TransferStatus s = b.completion().get();
                            if (!s.isCompleted()) {
                                error.compareAndSet(null, s.toString());
                                break;
                            }
                        }
                        long t2 = System.nanoTime();
                        if (t0 >= recordFrom) {
                            mine.prep.record(0);
                            mine.post.record(0);
                            mine.tx.record(t2 - t0);
                            mine.sumTx += t2 - t0;
                            mine.lat.record(t2 - t0);
                            mine.sumLat += t2 - t0;
                            mine.bytes += block * batch;
                            lastDone[ti] = t2;
                        }
                    }
                } catch (Exception e) {
                    error.compareAndSet(null, e.toString());
                }
                total.add(mine);
            }));
        }
        for (Thread w : workers) {
            w.join();
        }
        engine.closeSegment(target);
        long end = recordFrom;
        for (long d : lastDone) {
            end = Math.max(end, d);
        }
        total.nanos = Math.max(1, end - recordFrom);
        total.error = error.get();
        return total;
    }
}
