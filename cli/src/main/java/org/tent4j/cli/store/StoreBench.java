package org.tent4j.cli.store;

import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.GetSession;
import org.tent4j.store.client.Outcome;
import org.tent4j.store.client.PutResult;
import org.tent4j.store.client.StoreClient;
import org.tent4j.store.rpc.MasterService;
import org.tent4j.cli.options.ConciseUsageErrors;
import org.tent4j.cli.options.DurationConverter;
import org.tent4j.cli.options.SizeConverter;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code store-bench}: put / get / mixed load against a store, zero-copy from registered buffers, with batches and
 * threads, or more than its memory holds ({@link OverflowBench}); a live progress line on stderr, a summary (or
 * {@code --json}) on stdout. Keys are {@code <prefix>/<thread>/<n>}, so a get run reads what a put run with the same
 * prefix, threads and count wrote.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, sortOptions = false, usageHelpAutoWidth = true,
        description = {"Put / get / mixed load on the store, zero-copy from registered buffers.",
                "Keys are <prefix>/<thread>/<n>, so a get run reads what a put run with the same prefix, threads and "
                        + "count wrote. Latency percentiles are per call (one batch call when --batch > 1).",
                "Exit status: 0 ok, 1 errors or mismatches, 2 bad arguments."})
public final class StoreBench implements Callable<Integer> {
    @Mixin
    ClientOptions connection;

    @Option(names = "--mode", defaultValue = "put", paramLabel = "put|get|get-session|mixed|exist|overflow", description = {
            "put: writes count values per thread (batch > 1 uses batch put).",
            "get: reads them back (run a put with the same prefix/threads/count first).",
            "get-session: reads them back through a GetSession per thread: one replica-list fetch for the thread's "
                    + "count keys (at most 65536), then reads without the master until the leases end, then one fetch again.",
            "mixed: each thread writes its values, then alternates a get of a written value with a put.",
            "exist: metadata only (batched exist checks of the keys a put wrote): the master's RPC rate.",
            "overflow: writes --total (more than the memory tier holds: the rest is offloaded to the nodes' disks), "
                    + "waits for the offloads, reads every key back; put rate (and into a full memory tier), read rate "
                    + "from memory and from disk. Puts one key per call, reads --batch keys per call (getBatchInto: the reads "
                    + "of a batch in flight at once); ignores --count. With --duration, each thread then "
                    + "reads its disk keys again in a cycle, --warmup unmeasured and --duration measured: the warm disk read rate.",
            "Default: ${DEFAULT-VALUE}."})
    String mode;

    @Option(names = "--size", defaultValue = "4k", converter = SizeConverter.class, paramLabel = "SIZE",
            description = "Value size. Default: ${DEFAULT-VALUE}.")
    long size;

    @Option(names = {"--batch", "--batch-size", "--batch_size"}, defaultValue = "1", paramLabel = "N",
            description = "Keys per call. Default: ${DEFAULT-VALUE}.")
    int batchOption;

    @Option(names = "--threads", defaultValue = "4", paramLabel = "N", description = "Default: ${DEFAULT-VALUE}.")
    int threadsOption;

    @Option(names = "--count", defaultValue = "1000", paramLabel = "N", description = "Operations per thread. Default: ${DEFAULT-VALUE}.")
    int count;

    @Option(names = "--replicas", defaultValue = "1", paramLabel = "N", description = "Replicas per put. Default: ${DEFAULT-VALUE}.")
    int replicas;

    @Option(names = "--prefix", defaultValue = "bench", paramLabel = "PREFIX", description = "Key prefix. Default: ${DEFAULT-VALUE}.")
    String prefix;

    @Option(names = "--contribute", defaultValue = "0", converter = SizeConverter.class, paramLabel = "SIZE",
            description = "Memory this process contributes to the store. Default: ${DEFAULT-VALUE}.")
    long contribute;

    @Option(names = "--warmup", defaultValue = "2s", converter = DurationConverter.class, paramLabel = "DURATION",
            description = "Runs the same load first for this long, unmeasured (puts go to <prefix>/<thread>/w<n>), so the "
                    + "figures are the JIT-compiled steady state. Default: ${DEFAULT-VALUE}.")
    Duration warmup;

    @Option(names = "--duration", defaultValue = "0s", converter = DurationConverter.class, paramLabel = "DURATION",
            description = "Measures for this long instead of count ops per thread (put: keys go on past count; get, "
                    + "exist: cycle over the count keys). Default: ${DEFAULT-VALUE} (count ops).")
    Duration duration;

    @Option(names = "--verify", description = "Checks every value read (gets): each 512-byte block of a value starts with "
            + "an 8-byte stamp of its key and block index, and the rest is one body shared by all values, compared byte "
            + "for byte. So a value of another key, a block out of place or from another value, and any byte not as "
            + "written are counted as mismatches; puts only rewrite the stamps, not the whole value.")
    boolean verify;

    @Option(names = "--json", description = "Ends with one JSON line instead of the summary.")
    boolean json;

    @Mixin
    OverflowBench.Options overflow;

    private PrintStream out = System.out;
    private PrintStream err = System.err;

    /** Runs the bench in this thread, printing to {@code out} and {@code err}; returns the exit status. */
    static int run(String[] args, PrintStream out, PrintStream err) {
        StoreBench bench = new StoreBench();
        bench.out = out;
        bench.err = err;
        java.io.PrintWriter errWriter = new java.io.PrintWriter(err, true);
        return new CommandLine(bench).setParameterExceptionHandler(new ConciseUsageErrors())
                .setOut(new java.io.PrintWriter(out, true)).setErr(errWriter).execute(args);
    }

    @Override
    public Integer call() throws InterruptedException {
        mode = mode.toLowerCase(Locale.ROOT);
        if (!Set.of("put", "get", "get-session", "mixed", "exist", "overflow").contains(mode)) {
            err.println("store-bench: --mode must be put, get, get-session, mixed, exist or overflow: " + mode);
            return 2;
        }
        int batch = Math.max(1, batchOption);
        int threads = Math.max(1, threadsOption);
        long warmupNanos = warmup.toNanos();
        long durationNanos = duration.toNanos();
        if (mode.equals("get-session") && count > MasterService.MAX_BATCH) {
            err.println("store-bench: get-session fetches a thread's keys in one call of at most " + MasterService.MAX_BATCH
                    + " keys: --count " + count);
            return 2;
        }
        if (size > Integer.MAX_VALUE) {
            err.println("store-bench: --size must be under 2 GiB: " + size);
            return 2;
        }
        if (mode.equals("overflow")) {
            return new OverflowBench(this, out, err).run();
        }
        MemorySegment body = BenchValues.body(size);
        try (TransferEngine engine = connection.engine();
             StoreClient client = connection.client(engine).connect()) {
            if (contribute > 0) {
                client.contribute(contribute);
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
                        Worker w = new Worker(client, buf.segment(), body, size, batch, replicas, prefix + "/" + tid, verify, run);
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
                err.printf("\r%s %s %6.1fs  %,d ops  %,.0f ops/s  %,.1f MiB/s  errors %d   ", mode,
                        run.measuring() ? "measure" : "warm-up", (now - run.begin) / 1e9, n, (n - lastOps) / ((now - last) / 1e9),
                        (n - lastOps) * size / ((now - last) / 1e9) / (1 << 20), run.errors.sum());
                last = now;
                lastOps = n;
            }
            long end = System.nanoTime();
            double secs = (end - Math.min(end, run.measureStart)) / 1e9;
            long n = run.ops.sum();
            long[] lat = Worker.merged(workers);
            err.println();
            if (json) {
                out.printf(Locale.ROOT, "{\"mode\":\"%s\",\"size\":%d,\"batch\":%d,\"threads\":%d,\"replicas\":%d,\"ops\":%d,"
                                + "\"seconds\":%.3f,\"warmupSeconds\":%.3f,\"opsPerSecond\":%.1f,\"mibPerSecond\":%.1f,"
                                + "\"callP50Us\":%.1f,\"callP99Us\":%.1f,\"callP999Us\":%.1f,\"calls\":%d,"
                                + "\"errors\":%d,\"mismatches\":%d,\"verified\":%b,\"sessionFetches\":%d}%n",
                        mode, size, batch, threads, replicas, n, secs, warmupNanos / 1e9, n / secs, n * size / secs / (1 << 20),
                        pct(lat, 0.5), pct(lat, 0.99), pct(lat, 0.999), lat.length, run.errors.sum(), run.mismatches.sum(), verify,
                        run.sessionFetches.sum());
            } else {
                out.printf(Locale.ROOT, "%s: %,d ops of %d B (batch %d, %d threads, %d replicas) in %.2f s after %.1f s warm-up:"
                                + " %,.0f ops/s, %,.1f MiB/s; per call p50 %.0f us, p99 %.0f us, p99.9 %.0f us; %d errors%s%n",
                        mode, n, size, batch, threads, replicas, secs, warmupNanos / 1e9, n / secs, n * size / secs / (1 << 20),
                        pct(lat, 0.5), pct(lat, 0.99), pct(lat, 0.999), run.errors.sum(),
                        verify ? ", " + run.mismatches.sum() + " mismatches" : "");
            }
            if (firstErrorText[0] != null) {
                err.println("first error: " + firstErrorText[0]);
            }
            return run.errors.sum() > 0 || run.mismatches.sum() > 0 ? 1 : 0;
        } catch (StoreException | IllegalArgumentException e) {
            // the master refused or could not be reached (a missing token, a bad token file): one line, no trace
            err.println("store-bench: " + e.getMessage());
            return 1;
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
        final LongAdder sessionFetches = new LongAdder();

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

    /** One thread's load; values are a function of the key so a reader can check them without the writer. */
    private static final class Worker {
        /** Latency samples kept per thread; beyond this the first ones stand for the run. */
        private static final int MAX_SAMPLES = 1 << 21;
        private final StoreClient client;
        /** Put buffers (batch slots holding the body, stamped per put). */
        private final List<MemorySegment> putSlots;
        /** Get buffers (batch slots the reads land in). */
        private final List<MemorySegment> getSlots;
        private final long size;
        private final int batch;
        private final String prefix;
        private final boolean verify;
        private final Run run;
        private final ReplicateConfig cfg;
        /** The body with the stamps of the value being checked. */
        private final MemorySegment expect;
        /** The keys gets read (key("", n)), made once: a get call allocates no key strings. */
        private List<String> getKeys;
        private GetSession session;
        private long[] samples = new long[1024];
        private int sampleCount;
        private long succeeded;

        Worker(StoreClient client, MemorySegment buf, MemorySegment body, long size, int batch, int replicas, String prefix,
               boolean verify, Run run) {
            this.client = client;
            this.size = size;
            this.batch = batch;
            this.prefix = prefix;
            this.verify = verify;
            this.run = run;
            this.cfg = ReplicateConfig.replicas(replicas);
            this.putSlots = new ArrayList<>(batch);
            this.getSlots = new ArrayList<>(batch);
            for (int j = 0; j < batch; j++) {
                MemorySegment p = buf.asSlice(j * size, size);
                MemorySegment.copy(body, 0, p, 0, size);
                putSlots.add(p);
                getSlots.add(buf.asSlice((batch + j) * size, size));
            }
            this.expect = verify ? MemorySegment.ofArray(new long[(int) ((size + 7) / 8)]).asSlice(0, size).copyFrom(body) : null;
        }

        /** Warm-up calls until the measured phase starts, then count ops (or calls until the duration ends). */
        void run(String mode, int count) {
            int half = Math.max(1, count / 2);
            if (!mode.equals("put")) {
                String[] ks = new String[mode.equals("mixed") ? half : count];
                for (int n = 0; n < ks.length; n++) {
                    ks[n] = key("", n);
                }
                getKeys = Arrays.asList(ks);
            }
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
                case "get-session" -> getFromSession(i % count, (int) Math.min(batch, count - i % count));
                case "exist" -> exist(i % count, (int) Math.min(batch, count - i % count));
                case "mixed" -> {
                    long g = (i / 2) % half;
                    yield get(g, (int) Math.min(batch, half - g)) + put(putTag, half + i / 2, batch);
                }
                default -> throw new IllegalArgumentException("--mode must be put, get, get-session, mixed or exist: " + mode);
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
                MemorySegment s = putSlots.getFirst();
                BenchValues.stamp(s, prefix, i);
                count(client.putFrom(key(tag, i), s, cfg) != null);
                return 1;
            }
            List<String> keys = new ArrayList<>(n);
            for (int j = 0; j < n; j++) {
                BenchValues.stamp(putSlots.get(j), prefix, i + j);
                keys.add(key(tag, i + j));
            }
            for (Outcome<PutResult> r : client.putBatchFrom(keys, putSlots.subList(0, n), cfg)) {
                count(r.ok());
            }
            return n;
        }

        private int get(long i, int n) {
            if (n == 1) {
                try {
                    client.getInto(getKeys.get((int) i), getSlots.getFirst());
                    count(true);
                    check(getSlots.getFirst(), i);
                } catch (StoreException e) {
                    count(false);
                }
                return 1;
            }
            List<Outcome<Long>> rs = client.getBatchInto(getKeys.subList((int) i, (int) i + n), getSlots.subList(0, n));
            checkAll(rs, i, n);
            return n;
        }

        /** Reads through the thread's session, fetching it (again) when none is open or its leases have ended. */
        private int getFromSession(long i, int n) {
            for (int attempt = 0; ; attempt++) {
                if (session == null || session.leaseEnded()) {
                    session = client.getSession(getKeys);
                    run.sessionFetches.increment();
                }
                List<Outcome<Long>> rs = session.readBatch((int) i, getSlots.subList(0, n));
                if (attempt == 0 && rs.stream().anyMatch(r -> !r.ok() && r.error().error() == StoreError.LEASE_EXPIRED)) {
                    // a lease ended while the bytes moved: they were discarded; read them again under a fresh session
                    session = null;
                    continue;
                }
                checkAll(rs, i, n);
                return n;
            }
        }

        private void checkAll(List<Outcome<Long>> rs, long i, int n) {
            for (int j = 0; j < n; j++) {
                boolean ok = rs.get(j).ok();
                count(ok);
                if (ok) {
                    check(getSlots.get(j), i + j);
                }
            }
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

        private void check(MemorySegment s, long i) {
            if (!verify) {
                return;
            }
            BenchValues.stamp(expect, prefix, i);
            if (s.mismatch(expect) >= 0) {
                run.mismatches.increment();
            }
        }
    }
}
