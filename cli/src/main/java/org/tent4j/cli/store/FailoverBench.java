package org.tent4j.cli.store;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.StoreClient;
import org.tent4j.cli.options.DurationConverter;
import org.tent4j.cli.options.SizeConverter;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code store failover-bench}: how long the store cannot take a put when its leading master dies. Starts a group of
 * three durable masters (child processes), a node and a client in this process that puts without pause, then kills
 * the leader with SIGKILL {@code --kills} times, each time measuring from the kill to the first acknowledged put that
 * was made after it, and starting the killed master again on its dir and ports so the group stays at three.
 */
@Command(name = "failover-bench", mixinStandardHelpOptions = true, sortOptions = false, usageHelpAutoWidth = true,
        description = {"Failover time of a group of three durable masters: the leader SIGKILLed N times under a "
                + "continuous put load; per kill, the time from the kill to the first acknowledged put made after it, "
                + "then p50 / p99 / max.",
                "Exit status: 0 ok, 1 a kill after which no put was acknowledged within --timeout (or a master did "
                        + "not start), 2 bad arguments."})
public final class FailoverBench implements Callable<Integer> {
    @Option(names = "--kills", defaultValue = "10", paramLabel = "N", description = "Leader kills. Default: ${DEFAULT-VALUE}.")
    int kills;

    @Option(names = "--size", defaultValue = "4k", converter = SizeConverter.class, paramLabel = "SIZE",
            description = "Value size of the puts. Default: ${DEFAULT-VALUE}.")
    long size;

    @Option(names = "--contribute", defaultValue = "256m", converter = SizeConverter.class, paramLabel = "SIZE",
            description = "Memory the node contributes (puts past it evict the oldest). Default: ${DEFAULT-VALUE}.")
    long contribute;

    @Option(names = "--host", defaultValue = "127.0.0.1", paramLabel = "ADDRESS",
            description = "Address the masters, the node and the client listen on. Default: ${DEFAULT-VALUE}.")
    String host;

    @Option(names = {"--data-dir", "--data_dir"}, paramLabel = "DIR",
            description = "Where the masters keep their logs (m0, m1, m2) and output (m<i>.log); kept afterwards. "
                    + "Default: a temporary directory, deleted at the end.")
    Path dataDir;

    @Option(names = "--timeout", defaultValue = "30s", converter = DurationConverter.class, paramLabel = "DURATION",
            description = "Longest wait for a put after a kill, and for a master to start. Default: ${DEFAULT-VALUE}.")
    Duration timeout;

    @Option(names = "--json", description = "Ends with one JSON line instead of the summary.")
    boolean json;

    @Spec
    CommandSpec spec;
    private PrintWriter out;
    private PrintWriter err;

    /** A kill being measured: its time, and the first put acknowledged that started after it. */
    private record Arm(long killedAt, CompletableFuture<Long> firstAck) {
    }

    private volatile Arm arm;
    private volatile boolean stop;
    private final AtomicLong acknowledged = new AtomicLong();
    private final AtomicLong failedPuts = new AtomicLong();
    private volatile String lastFailure;

    @Override
    public Integer call() throws Exception {
        out = spec.commandLine().getOut();
        err = spec.commandLine().getErr();
        if (kills < 1 || size < 1 || size > Integer.MAX_VALUE || contribute < size) {
            err.println("tent4j store failover-bench: --kills must be at least 1, --size positive and at most "
                    + "--contribute: " + kills + ", " + size + ", " + contribute);
            return 2;
        }
        boolean keep = dataDir != null;
        Path dir = keep ? dataDir : Files.createTempDirectory("tent4j-failover-");
        List<TransferEngine> engines = new ArrayList<>();
        List<StoreClient> clients = new ArrayList<>();
        Thread putter = null;
        FailoverGroup group = new FailoverGroup(dir, host);
        try {
            for (int i = 0; i < 3; i++) {
                group.start(i);
            }
            for (int i = 0; i < 3; i++) {
                if (!group.awaitFollowing(i, timeout.multipliedBy(2))) {
                    return startFailed(group, i);
                }
            }
            StoreClient node = StoreClient.builder(engine(engines), group.masterList())
                    .heartbeatInterval(Duration.ofMillis(500)).connect();
            clients.add(node);
            node.contribute(contribute);
            StoreClient client = StoreClient.builder(engine(engines), group.masterList()).rpcTimeout(timeout).connect();
            clients.add(client);
            putter = Thread.ofPlatform().name("failover-bench-put").start(() -> putLoop(client));

            List<Long> times = new ArrayList<>();
            for (int k = 1; k <= kills; k++) {
                long before = acknowledged.get();
                // a put lands before each kill, so the group serves when it is killed
                if (!await(() -> acknowledged.get() > before, timeout)) {
                    err.println("kill " + k + ": no put acknowledged within " + timeout.toMillis() + " ms before it");
                    return 1;
                }
                int leader = group.awaitLeader(timeout);
                if (leader < 0) {
                    err.println("kill " + k + ": no master leads");
                    return 1;
                }
                long term = group.term(leader);
                Arm a = new Arm(System.nanoTime(), new CompletableFuture<>());
                arm = a;
                group.kill(leader);
                long ns;
                try {
                    ns = a.firstAck().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
                } catch (TimeoutException e) {
                    err.println("kill " + k + ": no put acknowledged within " + timeout.toMillis() + " ms of killing "
                            + FailoverGroup.id(leader));
                    return 1;
                }
                times.add(ns);
                if (!json) {
                    out.printf(Locale.ROOT, "kill %d: %s (leader in term %d) SIGKILLed; first put acknowledged after "
                            + "%.0f ms%n", k, FailoverGroup.id(leader), term, ns / 1e6);
                    out.flush();
                }
                group.start(leader);
                if (!group.awaitFollowing(leader, timeout.multipliedBy(2))) {
                    return startFailed(group, leader);
                }
            }
            report(times);
            return 0;
        } finally {
            stop = true;
            if (putter != null) {
                putter.join(timeout.toMillis());
            }
            // while the masters live: a client leaving a dead group waits out its timeout
            clients.reversed().forEach(StoreClient::close);
            group.close();
            engines.forEach(TransferEngine::close);
            if (!keep) {
                delete(dir);
            }
        }
    }

    /** Puts without pause under new keys; each acknowledged put completes the armed kill's wait if made after it. */
    private void putLoop(StoreClient client) {
        byte[] value = new byte[(int) size];
        new Random(1).nextBytes(value);
        for (long n = 0; !stop; n++) {
            long start = System.nanoTime();
            try {
                client.put("failover/" + n, value, ReplicateConfig.replicas(1));
            } catch (StoreException e) {
                // a put that broke with the leader and found none in time: the next one is measured
                failedPuts.incrementAndGet();
                lastFailure = e.getMessage();
                continue;
            }
            long ack = System.nanoTime();
            acknowledged.incrementAndGet();
            Arm a = arm;
            if (a != null && start > a.killedAt()) {
                a.firstAck().complete(ack - a.killedAt());
            }
        }
    }

    private void report(List<Long> times) {
        List<Long> sorted = times.stream().sorted().toList();
        double p50 = percentile(sorted, 0.50) / 1e6;
        double p99 = percentile(sorted, 0.99) / 1e6;
        double max = sorted.getLast() / 1e6;
        if (json) {
            StringBuilder b = new StringBuilder("{\"kills\":").append(times.size()).append(",\"failover_ms\":[");
            for (int i = 0; i < times.size(); i++) {
                b.append(i == 0 ? "" : ",").append(String.format(Locale.ROOT, "%.1f", times.get(i) / 1e6));
            }
            b.append(String.format(Locale.ROOT, "],\"p50_ms\":%.1f,\"p99_ms\":%.1f,\"max_ms\":%.1f", p50, p99, max))
                    .append(",\"puts_acknowledged\":").append(acknowledged.get())
                    .append(",\"puts_failed\":").append(failedPuts.get()).append('}');
            out.println(b);
        } else {
            out.printf(Locale.ROOT, "failover over %d kills: p50 %.0f ms, p99 %.0f ms, max %.0f ms (%d puts acknowledged,"
                    + " %d failed)%n", times.size(), p50, p99, max, acknowledged.get(), failedPuts.get());
            if (lastFailure != null) {
                out.println("last failed put: " + lastFailure);
            }
        }
    }

    /** Nearest rank: the smallest value at or above the fraction {@code q} of the sorted values. */
    static long percentile(List<Long> sorted, double q) {
        int rank = (int) Math.ceil(q * sorted.size());
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, rank - 1)));
    }

    private int startFailed(FailoverGroup group, int i) {
        err.println("tent4j store failover-bench: master " + FailoverGroup.id(i) + " did not start and follow a "
                + "leader within " + timeout.multipliedBy(2).toMillis() + " ms; its output: " + group.log(i));
        return 1;
    }

    private TransferEngine engine(List<TransferEngine> engines) {
        TransferEngine e = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, host).build());
        engines.add(e);
        return e;
    }

    private static boolean await(java.util.function.BooleanSupplier condition, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L);
        }
        return true;
    }

    private static void delete(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (IOException | UncheckedIOException e) {
            System.err.println("tent4j store failover-bench: could not delete " + dir + ": " + e.getMessage());
        }
    }
}
