package org.tent4j.samples.bench;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;

import org.tent4j.api.Batch;
import org.tent4j.api.EngineConfig;
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
 * The scheduler under faults, side by side in one run (issue 4's figures). Two engines in this process; the initiator
 * requires the {@code faulty} transport of te-testkit wrapping tcp (4 lanes = 4 paths), so faults hit one path:
 * <ul>
 * <li>{@code healthy}: no fault;</li>
 * <li>{@code slow}: lane-1 made 10x slower: throughput versus healthy, and each path's share of slices;</li>
 * <li>{@code killed}: lane-1 fails every slice after its first 200: every task must complete with intact bytes, and
 *     the failover shows in the path metrics;</li>
 * <li>{@code overhead}: 4 KiB WRITEs over plain tcp with 1 path versus 4 paths.</li>
 * </ul>
 * Each scenario first runs one unmeasured second (as te-bench's warm-up), so every path has a bandwidth estimate.
 * Argument: seconds per scenario (default 5).
 */
public final class SchedulerBench {
    private static final long BLOCK = 1 << 20;
    private static final int BATCH = 32;
    private static final long SPAN = BLOCK * BATCH * 2;

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
        Map<String, Object> faulty = Map.of(EngineConfig.TRANSPORTS_ENABLED, "tcp,faulty", "transports.faulty.wraps", "tcp");
        Result healthy = run("healthy", seconds, BLOCK, "faulty", faulty);
        Map<String, Object> slow = new LinkedHashMap<>(faulty);
        slow.put("transports.faulty.slow_path", 1);
        slow.put("transports.faulty.slow_factor", 10);
        Result slowed = run("slow", seconds, BLOCK, "faulty", slow);
        Map<String, Object> killed = new LinkedHashMap<>(faulty);
        killed.put("transports.faulty.fail_path", 1);
        killed.put("transports.faulty.fail_path_after", 200);
        Result kill = run("killed", seconds, BLOCK, "faulty", killed);
        Result one = run("overhead_1path", seconds, 4096, "tcp", Map.of(EngineConfig.TRANSPORTS_ENABLED, "tcp", "transports.tcp.lanes", 1));
        Result four = run("overhead_4paths", seconds, 4096, "tcp", Map.of(EngineConfig.TRANSPORTS_ENABLED, "tcp", "transports.tcp.lanes", 4));
        System.out.printf("slow_vs_healthy throughput_ratio=%.3f%n", slowed.gbps / healthy.gbps);
        System.out.printf("overhead 4paths_vs_1path ops_ratio=%.3f%n", four.opsPerSec / one.opsPerSec);
        System.exit(kill.failed == 0 && kill.intact ? 0 : 1);
    }

    private record Result(double gbps, double opsPerSec, long failed, boolean intact) {
    }

    private static Result run(String name, double seconds, long block, String transport, Map<String, Object> settings) throws Exception {
        int metricsPort;
        try (ServerSocket s = new ServerSocket(0)) {
            metricsPort = s.getLocalPort();
        }
        EngineConfig.Builder base = EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1");
        settings.forEach(base::set);
        EngineConfig.Builder initiatorCfg = EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set(EngineConfig.METRICS_PORT, metricsPort);
        settings.forEach(initiatorCfg::set);
        try (TransferEngine target = TransferEngine.create(base.build());
             TransferEngine initiator = TransferEngine.create(initiatorCfg.build())) {
            RegisteredMemory remote = target.allocate(SPAN, Location.CPU, Permission.READ_WRITE);
            RegisteredMemory local = initiator.allocate(SPAN, Location.CPU, Permission.READ_WRITE);
            for (long i = 0; i < SPAN; i += 8) {
                local.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L);
            }
            SegmentHandle seg = initiator.openSegment(target.segmentName());
            long requests = 0;
            long failed = 0;
            long warmEnd = System.nanoTime() + 1_000_000_000L;
            long start = warmEnd;
            long end = start + (long) (seconds * 1e9);
            boolean warm = true;
            int round = 0;
            while (System.nanoTime() < end) {
                if (warm && System.nanoTime() >= warmEnd) {
                    warm = false;
                    requests = 0;
                    start = System.nanoTime();
                    end = start + (long) (seconds * 1e9);
                }
                try (Batch b = initiator.allocateBatch(BATCH)) {
                    List<TransferRequest> reqs = new ArrayList<>(BATCH);
                    long base0 = (round++ % 2) * BLOCK * BATCH;
                    for (int i = 0; i < BATCH; i++) {
                        long off = base0 + i * block;
                        reqs.add(TransferRequest.builder(Opcode.WRITE, local.segment().asSlice(off, block), seg, remote.address() + off)
                                .require(transport).build());
                    }
                    b.submit(reqs);
                    TransferStatus s = b.await(Duration.ofSeconds(60));
                    for (TransferStatus t : b.statuses()) {
                        requests++;
                        if (t.state() != TransferState.COMPLETED) {
                            failed++;
                            if (failed == 1) {
                                System.err.println(name + ": first failure: " + t);
                            }
                        }
                    }
                    if (!s.isTerminal()) {
                        throw new IllegalStateException(name + ": a batch did not finish in 60 s");
                    }
                }
            }
            double took = (System.nanoTime() - start) / 1e9;
            boolean intact = block != BLOCK || crc(local.segment()) == crc(remote.segment());
            String shares = pathShares(metricsPort, transport);
            System.out.printf("%s gbps=%.3f ops_per_sec=%.0f failed=%d intact=%s %s%n", name, requests * block / took / 1e9,
                    requests / took, failed, intact, shares);
            return new Result(requests * block / took / 1e9, requests / took, failed, intact);
        }
    }

    private static long crc(MemorySegment s) {
        CRC32C c = new CRC32C();
        c.update(s.asByteBuffer());
        return c.getValue();
    }

    /** Each path's share of completed slices, its failed slices and whether it is paused, from the engine's metrics. */
    private static String pathShares(int port, String transport) throws IOException, InterruptedException {
        String text = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        Map<String, double[]> paths = new LinkedHashMap<>();
        Pattern slices = Pattern.compile("tent4j_path_slices_total\\{([^}]*)\\} ([0-9.eE+-]+)");
        Pattern paused = Pattern.compile("tent4j_path_paused\\{([^}]*)\\} ([0-9.eE+-]+)");
        for (String line : text.split("\n")) {
            Matcher m = slices.matcher(line);
            if (m.find() && m.group(1).contains("transport=\"" + transport + "\"")) {
                double[] v = paths.computeIfAbsent(label(m.group(1), "path"), k -> new double[3]);
                v[m.group(1).contains("outcome=\"completed\"") ? 0 : 1] += Double.parseDouble(m.group(2));
            }
            Matcher p = paused.matcher(line);
            if (p.find() && p.group(1).contains("transport=\"" + transport + "\"")) {
                paths.computeIfAbsent(label(p.group(1), "path"), k -> new double[3])[2] = Double.parseDouble(p.group(2));
            }
        }
        double total = paths.values().stream().mapToDouble(v -> v[0]).sum();
        StringBuilder sb = new StringBuilder("paths:");
        paths.forEach((k, v) -> sb.append(String.format(" %s=%.1f%%%s%s", k, total == 0 ? 0 : 100 * v[0] / total,
                v[1] > 0 ? "(failed " + (long) v[1] + ")" : "", v[2] > 0 ? "(paused)" : "")));
        return sb.toString();
    }

    private static String label(String labels, String name) {
        Matcher m = Pattern.compile(name + "=\"([^\"]*)\"").matcher(labels);
        return m.find() ? m.group(1) : "?";
    }
}
