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
import java.util.ServiceLoader;
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
import org.tent4j.spi.TransportProvider;

/**
 * The scheduler under faults, side by side in one run (issue 4's figures). Two engines in this process; 1 MiB WRITEs
 * in batches of 32 require the {@code faulty} transport (artifact transport-faulty) wrapping tcp, so faults hit one
 * lane (path). It is never on bin/'s class path: the package phase copies it to samples/target/bench-lib, which the
 * command in docs/PERFORMANCE.md adds.
 * <ul>
 * <li>{@code one_path#N} then {@code slow#N}, five rounds: one healthy lane alone, the baseline; then two lanes,
 *     lane-1 carrying at most a tenth of what that baseline measured: lane-1's share of slices versus its share of the
 *     speed, and the median throughput with the slow lane versus the median of the healthy lane alone. Interleaved
 *     rounds and medians, because one lane alone varies by a factor of 1.5 between runs on a 2-core VM;</li>
 * <li>{@code two_paths}: two healthy lanes, against one more {@code one_path};</li>
 * <li>{@code killed}: two lanes, lane-1 failing every slice after its first 200: every task must complete with intact
 *     bytes, and the failover shows in the path metrics;</li>
 * <li>{@code overhead}: 4 KiB WRITEs with 1 path versus 4 paths, twice each, alternating: over shm split into
 *     virtual paths by faulty (only the scheduler differs), and over plain tcp with 1 versus 4 lanes.</li>
 * </ul>
 * Each scenario first runs two unmeasured seconds, so the JIT has settled and every path has a bandwidth estimate.
 * Argument: seconds per scenario (default 5). Exits 1 if a killed-path task failed or bytes differ.
 */
public final class SchedulerBench {
    private static final long BLOCK = 1 << 20;
    private static final int BATCH = 32;
    private static final long SPAN = BLOCK * BATCH * 2;
    private static final int ROUNDS = 5;

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
        if (ServiceLoader.load(TransportProvider.class).stream().noneMatch(p -> p.get().id().equals("faulty"))) {
            System.err.println("SchedulerBench needs the faulty transport: add samples/target/bench-lib/* to the class"
                    + " path (see docs/PERFORMANCE.md)");
            System.exit(2);
        }
        run("jvm_warmup", seconds, BLOCK, "faulty", faultyTcp(2, Map.of())); // not a figure: the first run pays for JIT
        // The baseline drifts with the machine (one lane alone measured 1.4 to 2.6 GB/s across runs), so each slow
        // run is paired with a healthy run just before it, and its slow lane is limited to a tenth of that run.
        List<Double> alone = new ArrayList<>();
        List<Double> withSlow = new ArrayList<>();
        for (int round = 1; round <= ROUNDS; round++) {
            Result one = run("one_path#" + round, seconds, BLOCK, "faulty", faultyTcp(1, Map.of()));
            long slowRate = (long) (one.gbps * 1e9 / 10);
            Result slow = run("slow#" + round, seconds, BLOCK, "faulty", faultyTcp(2, Map.of(
                    "transports.faulty.slow_path", 1, "transports.faulty.slow_rate", Long.toString(slowRate))));
            alone.add(one.gbps);
            withSlow.add(slow.gbps);
            System.out.printf("round %d: slow_vs_one_path throughput_ratio=%.3f slow_rate_gbps=%.3f "
                    + "slow_path share_of_slices=%.1f%% share_of_speed=%.1f%% (its rate / the run's throughput)%n",
                    round, slow.gbps / one.gbps, slowRate / 1e9, 100 * slow.shares.getOrDefault("lane-1", 0.0),
                    100 * slowRate / 1e9 / slow.gbps);
        }
        System.out.printf("slow_vs_one_path throughput_ratio=%.3f (median %.3f vs %.3f GB/s over %d rounds; "
                + "one lane alone ranged %.3f-%.3f)%n", median(withSlow) / median(alone), median(withSlow),
                median(alone), ROUNDS, alone.stream().mapToDouble(d -> d).min().orElse(0),
                alone.stream().mapToDouble(d -> d).max().orElse(0));
        Result one = run("one_path", seconds, BLOCK, "faulty", faultyTcp(1, Map.of()));
        Result two = run("two_paths", seconds, BLOCK, "faulty", faultyTcp(2, Map.of()));
        System.out.printf("two_vs_one_path throughput_ratio=%.3f%n", two.gbps / one.gbps);
        Result kill = run("killed", seconds, BLOCK, "faulty", faultyTcp(2, Map.of("transports.faulty.fail_path", 1,
                "transports.faulty.fail_path_after", 200)));

        double[] shm = {0, 0};
        double[] tcp = {0, 0};
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < 2; i++) {
                int paths = i == 0 ? 1 : 4;
                shm[i] += run("overhead_shm_" + paths + "path", seconds, 4096, "faulty", Map.of(
                        EngineConfig.TRANSPORTS_ENABLED, "faulty", "transports.faulty.wraps", "shm",
                        "transports.faulty.paths", paths)).opsPerSec;
                tcp[i] += run("overhead_tcp_" + paths + "path", seconds, 4096, "tcp", Map.of(
                        EngineConfig.TRANSPORTS_ENABLED, "tcp", "transports.tcp.lanes", paths)).opsPerSec;
            }
        }
        System.out.printf("overhead shm 4paths_vs_1path ops_ratio=%.3f (%.0f vs %.0f ops/s, mean of 2)%n",
                shm[1] / shm[0], shm[1] / 2, shm[0] / 2);
        System.out.printf("overhead tcp 4paths_vs_1path ops_ratio=%.3f (%.0f vs %.0f ops/s, mean of 2)%n",
                tcp[1] / tcp[0], tcp[1] / 2, tcp[0] / 2);
        System.exit(kill.failed == 0 && kill.intact ? 0 : 1);
    }

    /** Settings for faulty wrapping tcp with {@code lanes} lanes, plus {@code faults}. */
    private static Map<String, Object> faultyTcp(int lanes, Map<String, Object> faults) {
        Map<String, Object> m = new LinkedHashMap<>(faults);
        m.put(EngineConfig.TRANSPORTS_ENABLED, "faulty");
        m.put("transports.faulty.wraps", "tcp");
        m.put("transports.faulty.wrapped_options", "lanes=" + lanes);
        return m;
    }

    /** @param shares each path's share of the completed slices, by path name */
    private record Result(double gbps, double opsPerSec, long failed, boolean intact, Map<String, Double> shares) {
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
            long warmEnd = System.nanoTime() + 2_000_000_000L;
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
            Map<String, double[]> paths = pathStats(metricsPort, transport);
            double total = paths.values().stream().mapToDouble(v -> v[0]).sum();
            Map<String, Double> shares = new LinkedHashMap<>();
            StringBuilder line = new StringBuilder("paths:");
            paths.forEach((k, v) -> {
                shares.put(k, total == 0 ? 0 : v[0] / total);
                line.append(String.format(" %s=%.1f%%(est %.2f GB/s)%s%s", k, total == 0 ? 0 : 100 * v[0] / total,
                        v[3] / 1e9, v[1] > 0 ? "(failed " + (long) v[1] + ")" : "", v[2] > 0 ? "(paused)" : ""));
            });
            System.out.printf("%s gbps=%.3f ops_per_sec=%.0f failed=%d intact=%s %s%n", name, requests * block / took / 1e9,
                    requests / took, failed, intact, line);
            return new Result(requests * block / took / 1e9, requests / took, failed, intact, shares);
        }
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(null);
        return sorted.get(sorted.size() / 2);
    }

    private static long crc(MemorySegment s) {
        CRC32C c = new CRC32C();
        c.update(s.asByteBuffer());
        return c.getValue();
    }

    /** Per path: completed slices, failed slices, 1 if it is paused, and its estimated bandwidth; from the metrics. */
    private static Map<String, double[]> pathStats(int port, String transport) throws IOException, InterruptedException {
        String text = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        Map<String, double[]> paths = new LinkedHashMap<>();
        Pattern slices = Pattern.compile("tent4j_path_slices_total\\{([^}]*)\\} ([0-9.eE+-]+)");
        Pattern paused = Pattern.compile("tent4j_path_paused\\{([^}]*)\\} ([0-9.eE+-]+)");
        Pattern bandwidth = Pattern.compile("tent4j_path_bandwidth_bytes_per_second\\{([^}]*)\\} ([0-9.eE+-]+)");
        for (String line : text.split("\n")) {
            Matcher m = slices.matcher(line);
            if (m.find() && m.group(1).contains("transport=\"" + transport + "\"")) {
                double[] v = paths.computeIfAbsent(label(m.group(1), "path"), k -> new double[4]);
                v[m.group(1).contains("outcome=\"completed\"") ? 0 : 1] += Double.parseDouble(m.group(2));
            }
            Matcher p = paused.matcher(line);
            if (p.find() && p.group(1).contains("transport=\"" + transport + "\"")) {
                paths.computeIfAbsent(label(p.group(1), "path"), k -> new double[4])[2] = Double.parseDouble(p.group(2));
            }
            Matcher b = bandwidth.matcher(line);
            if (b.find() && b.group(1).contains("transport=\"" + transport + "\"")) {
                paths.computeIfAbsent(label(b.group(1), "path"), k -> new double[4])[3] = Double.parseDouble(b.group(2));
            }
        }
        return paths;
    }

    private static String label(String labels, String name) {
        Matcher m = Pattern.compile(name + "=\"([^\"]*)\"").matcher(labels);
        return m.find() ? m.group(1) : "?";
    }
}
