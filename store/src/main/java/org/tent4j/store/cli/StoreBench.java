package org.tent4j.store.cli;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.Outcome;
import org.tent4j.store.client.PutResult;
import org.tent4j.store.client.StoreClient;

/**
 * {@code store-bench}: put / get / mixed load against a store, zero-copy from registered buffers, with batches and
 * threads; a live progress line on stderr, a summary (or {@code --json}) on stdout. Keys are
 * {@code <prefix>/<thread>/<n>}, so a get run reads what a put run with the same prefix, threads and count wrote.
 */
public final class StoreBench {
    private StoreBench() {
    }

    public static void main(String[] args) throws Exception {
        Options o;
        try {
            o = new Options(args, Set.of("master", "mode", "size", "batch", "threads", "count", "replicas", "prefix",
                    "contribute", "control-host", "client-id", "warmup", "duration"), Set.of("verify", "json", "help"));
        } catch (IllegalArgumentException e) {
            System.err.println("store-bench: " + e.getMessage());
            System.exit(2);
            return;
        }
        if (o.flag("help")) {
            System.out.println("""
                    usage: store-bench --master host:port [--mode put|get|mixed|exist] [--size 4k] [--batch 1] [--threads 4]
                                       [--count 1000 (per thread)] [--warmup 2s] [--duration 0s] [--replicas 1]
                                       [--prefix bench] [--contribute 0] [--verify] [--json] [--control-host ip]
                      put:   writes count values per thread (batch > 1 uses batch put)
                      get:   reads them back (run a put with the same prefix/threads/count first)
                      mixed: each thread writes its values, then alternates a get of a written value with a put
                      exist: metadata only (batched exist checks of the keys a put wrote): the master's RPC rate
                      --warmup: runs the same load first for this long, unmeasured (puts go to <prefix>/<thread>/w<n>),
                                so the figures are the JIT-compiled steady state
                      --duration: measures for this long instead of count ops per thread (put: keys go on past count;
                                  get, exist: cycle over the count keys)
                      latency percentiles are per call (one batch call when --batch > 1)""");
            return;
        }
        String mode = o.string("mode", "put").toLowerCase(Locale.ROOT);
        if (!Set.of("put", "get", "mixed", "exist").contains(mode)) {
            System.err.println("store-bench: --mode must be put, get, mixed or exist: " + mode);
            System.exit(2);
            return;
        }
        long size = o.size("size", 4096);
        int batch = Math.max(1, o.integer("batch", 1));
        int threads = Math.max(1, o.integer("threads", 4));
        int count = o.integer("count", 1000);
        int replicas = o.integer("replicas", 1);
        String prefix = o.string("prefix", "bench");
        boolean verify = o.flag("verify");
        long warmupNanos = o.duration("warmup", Duration.ofSeconds(2)).toNanos();
        long durationNanos = o.duration("duration", Duration.ZERO).toNanos();
        EngineConfig.Builder cfg = EngineConfig.builder();
        if (o.string("control-host", null) != null) {
            cfg.set(EngineConfig.CONTROL_HOST, o.string("control-host", null));
        }
        try (TransferEngine engine = TransferEngine.create(cfg.build());
             StoreClient client = connect(o, engine)) {
            if (o.size("contribute", 0) > 0) {
                client.contribute(o.size("contribute", 0));
            }
            Run run = new Run(warmupNanos, durationNanos);
            AtomicLong firstError = new AtomicLong();
            String[] firstErrorText = new String[1];
            CountDownLatch done = new CountDownLatch(threads);
            List<Worker> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int tid = t;
                Thread.ofPlatform().name("store-bench-" + t).start(() -> {
                    RegisteredMemory buf = engine.allocate(size * batch * 2, Location.CPU, Permission.READ_WRITE);
                    try {
                        Worker w = new Worker(client, buf.segment(), size, batch, replicas, prefix + "/" + tid, verify, run);
                        synchronized (workers) {
                            workers.add(w);
                        }
                        w.run(mode, count);
                    } catch (RuntimeException e) {
                        run.errors.increment();
                        if (firstError.compareAndSet(0, 1)) {
                            firstErrorText[0] = e.toString();
                        }
                    } finally {
                        engine.unregister(buf);
                        done.countDown();
                    }
                });
            }
            long last = System.nanoTime();
            long lastOps = 0;
            while (!done.await(1, java.util.concurrent.TimeUnit.SECONDS)) {
                long now = System.nanoTime();
                long n = run.ops.sum() + run.warmOps.sum();
                System.err.printf("\r%s %s %6.1fs  %,d ops  %,.0f ops/s  %,.1f MiB/s  errors %d   ", mode,
                        run.measuring() ? "measure" : "warm-up", (now - run.begin) / 1e9, n, (n - lastOps) / ((now - last) / 1e9),
                        (n - lastOps) * size / ((now - last) / 1e9) / (1 << 20), run.errors.sum());
                last = now;
                lastOps = n;
            }
            long end = System.nanoTime();
            double secs = (end - Math.min(end, run.measureStart)) / 1e9;
            long n = run.ops.sum();
            long[] lat = Worker.merged(workers);
            System.err.println();
            if (o.flag("json")) {
                System.out.printf(Locale.ROOT, "{\"mode\":\"%s\",\"size\":%d,\"batch\":%d,\"threads\":%d,\"replicas\":%d,\"ops\":%d,"
                                + "\"seconds\":%.3f,\"warmupSeconds\":%.3f,\"opsPerSecond\":%.1f,\"mibPerSecond\":%.1f,"
                                + "\"callP50Us\":%.1f,\"callP99Us\":%.1f,\"callP999Us\":%.1f,\"calls\":%d,"
                                + "\"errors\":%d,\"mismatches\":%d,\"verified\":%b}%n",
                        mode, size, batch, threads, replicas, n, secs, warmupNanos / 1e9, n / secs, n * size / secs / (1 << 20),
                        pct(lat, 0.5), pct(lat, 0.99), pct(lat, 0.999), lat.length, run.errors.sum(), run.mismatches.sum(), verify);
            } else {
                System.out.printf(Locale.ROOT, "%s: %,d ops of %d B (batch %d, %d threads, %d replicas) in %.2f s after %.1f s warm-up:"
                                + " %,.0f ops/s, %,.1f MiB/s; per call p50 %.0f us, p99 %.0f us, p99.9 %.0f us; %d errors%s%n",
                        mode, n, size, batch, threads, replicas, secs, warmupNanos / 1e9, n / secs, n * size / secs / (1 << 20),
                        pct(lat, 0.5), pct(lat, 0.99), pct(lat, 0.999), run.errors.sum(),
                        verify ? ", " + run.mismatches.sum() + " CRC mismatches" : "");
            }
            if (firstErrorText[0] != null) {
                System.err.println("first error: " + firstErrorText[0]);
            }
            if (run.errors.sum() > 0 || run.mismatches.sum() > 0) {
                System.exit(1);
            }
        }
    }

    private static double pct(long[] sorted, double q) {
        return sorted.length == 0 ? 0 : sorted[Math.min(sorted.length - 1, (int) (q * sorted.length))] / 1e3;
    }

    /**
     * The run's phases on one clock: warm-up until {@code measureStart}, then either until {@code measureEnd}
     * (--duration) or until every worker has done its count. A call counts only if it started while measuring.
     */
    private static final class Run {
        final long begin = System.nanoTime();
        final long measureStart;
        final long measureEnd;
        final LongAdder ops = new LongAdder();
        final LongAdder warmOps = new LongAdder();
        final LongAdder errors = new LongAdder();
        final LongAdder mismatches = new LongAdder();

        Run(long warmupNanos, long durationNanos) {
            measureStart = begin + warmupNanos;
            measureEnd = durationNanos > 0 ? measureStart + durationNanos : Long.MAX_VALUE;
        }

        boolean measuring() {
            return System.nanoTime() >= measureStart;
        }

        boolean timed() {
            return measureEnd != Long.MAX_VALUE;
        }
    }

    private static StoreClient connect(Options o, TransferEngine engine) {
        StoreClient.Builder b = StoreClient.builder(engine, o.string("master", "127.0.0.1:50051"));
        if (o.string("client-id", null) != null) {
            b.clientId(o.string("client-id", null));
        }
        return b.connect();
    }

    /** One thread's load; values are a function of the key so a reader can check them without the writer. */
    private static final class Worker {
        /** Latency samples kept per thread; beyond this the first ones stand for the run. */
        private static final int MAX_SAMPLES = 1 << 21;
        private final StoreClient client;
        private final MemorySegment buf;
        private final long size;
        private final int batch;
        private final String prefix;
        private final boolean verify;
        private final Run run;
        private final ReplicateConfig cfg;
        private final MemorySegment expect;
        private long[] samples = new long[1024];
        private int sampleCount;
        private long succeeded;

        Worker(StoreClient client, MemorySegment buf, long size, int batch, int replicas, String prefix, boolean verify, Run run) {
            this.client = client;
            this.buf = buf;
            this.size = size;
            this.batch = batch;
            this.prefix = prefix;
            this.verify = verify;
            this.run = run;
            this.cfg = ReplicateConfig.replicas(replicas);
            this.expect = verify ? MemorySegment.ofArray(new long[(int) ((size + 7) / 8)]).asSlice(0, size) : null;
        }

        /** Warm-up calls until the measured phase starts, then count ops (or calls until the duration ends). */
        void run(String mode, int count) {
            int half = Math.max(1, count / 2);
            if (mode.equals("mixed")) {
                for (int i = 0; i < half; i += batch) {
                    put("", i, Math.min(batch, half - i));
                }
            }
            long i = 0;
            while (!run.measuring()) {
                long before = succeeded;
                i += step(mode, "w", i, count, half);
                run.warmOps.add(succeeded - before);
            }
            long limit = run.timed() ? Long.MAX_VALUE : count;
            for (i = 0; i < limit && System.nanoTime() < run.measureEnd; ) {
                long before = succeeded;
                long t0 = System.nanoTime();
                i += step(mode, "", i, count, half);
                sample(System.nanoTime() - t0);
                run.ops.add(succeeded - before);
            }
        }

        /** One call (a batch or a single op) at position {@code i}; returns how many ops it made. */
        private int step(String mode, String putTag, long i, int count, int half) {
            return switch (mode) {
                case "put" -> put(putTag, i, Math.min(batch, run.timed() || putTag.equals("w") ? batch : (int) (count - i)));
                case "get" -> get(i % count, (int) Math.min(batch, count - i % count));
                case "exist" -> exist(i % count, (int) Math.min(batch, count - i % count));
                case "mixed" -> {
                    long g = (i / 2) % half;
                    yield get(g, (int) Math.min(batch, half - g)) + put(putTag, half + i / 2, batch);
                }
                default -> throw new IllegalArgumentException("--mode must be put, get, mixed or exist: " + mode);
            };
        }

        private void sample(long nanos) {
            if (sampleCount == samples.length) {
                if (samples.length >= MAX_SAMPLES) {
                    return;
                }
                samples = Arrays.copyOf(samples, samples.length * 2);
            }
            samples[sampleCount++] = nanos;
        }

        static long[] merged(List<Worker> workers) {
            synchronized (workers) {
                long[] all = new long[workers.stream().mapToInt(w -> w.sampleCount).sum()];
                int at = 0;
                for (Worker w : workers) {
                    System.arraycopy(w.samples, 0, all, at, w.sampleCount);
                    at += w.sampleCount;
                }
                Arrays.sort(all);
                return all;
            }
        }

        private int put(String tag, long i, int n) {
            if (n == 1) {
                fill(buf.asSlice(0, size), i);
                count(client.putFrom(key(tag, i), buf.asSlice(0, size), cfg) != null);
                return 1;
            }
            List<String> keys = new ArrayList<>(n);
            List<MemorySegment> srcs = new ArrayList<>(n);
            for (int j = 0; j < n; j++) {
                MemorySegment s = buf.asSlice(j * size, size);
                fill(s, i + j);
                keys.add(key(tag, i + j));
                srcs.add(s);
            }
            for (Outcome<PutResult> r : client.putBatchFrom(keys, srcs, cfg)) {
                count(r.ok());
            }
            return n;
        }

        private int get(long i, int n) {
            if (n == 1) {
                try {
                    client.getInto(key("", i), buf.asSlice(0, size));
                    count(true);
                    check(buf.asSlice(0, size), i);
                } catch (StoreException e) {
                    count(false);
                }
                return 1;
            }
            List<String> keys = new ArrayList<>(n);
            List<MemorySegment> dsts = new ArrayList<>(n);
            for (int j = 0; j < n; j++) {
                keys.add(key("", i + j));
                dsts.add(buf.asSlice(j * size, size));
            }
            List<Outcome<Long>> rs = client.getBatchInto(keys, dsts);
            for (int j = 0; j < n; j++) {
                count(rs.get(j).ok());
                if (rs.get(j).ok()) {
                    check(dsts.get(j), i + j);
                }
            }
            return n;
        }

        private int exist(long i, int n) {
            List<String> keys = new ArrayList<>(n);
            for (int j = 0; j < n; j++) {
                keys.add(key("", i + j));
            }
            for (Outcome<Boolean> r : client.existsBatch(keys)) {
                count(r.ok() && r.value());
            }
            return n;
        }

        private void count(boolean ok) {
            if (ok) {
                succeeded++;
            } else {
                run.errors.increment();
            }
        }

        private String key(String tag, long i) {
            return prefix + "/" + tag + i;
        }

        private void fill(MemorySegment s, long i) {
            long seed = (prefix.hashCode() * 31L + i) * 0x9E3779B97F4A7C15L;
            long n = s.byteSize() / 8;
            for (long k = 0; k < n; k++) {
                s.set(ValueLayout.JAVA_LONG_UNALIGNED, k * 8, seed ^ k);
            }
        }

        private void check(MemorySegment s, long i) {
            if (!verify) {
                return;
            }
            fill(expect, i);
            if (s.mismatch(expect) >= 0) {
                run.mismatches.increment();
            }
        }
    }
}
