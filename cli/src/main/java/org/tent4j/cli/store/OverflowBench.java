package org.tent4j.cli.store;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;

import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.TransferEngine;
import org.tent4j.cli.options.DurationConverter;
import org.tent4j.cli.options.SizeConverter;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreException;
import org.tent4j.store.Tier;
import org.tent4j.store.client.GetSession;
import org.tent4j.store.client.Outcome;
import org.tent4j.store.client.StoreClient;
import org.tent4j.store.rpc.MasterService;

import picocli.CommandLine.Option;

/**
 * {@code store-bench --mode=overflow}: writes more than the store's memory tier holds, so later puts offload earlier
 * objects to the nodes' disks, waits until the offloads settle, and reads every key back (checked with --verify).
 * Phase 1 reports the put rate, and the rate from the first offload on (puts into a full memory tier). Phase 2 asks
 * the master where each key is (one get session per 65536 keys of a thread) and reads the memory ones, then the disk
 * ones, each timed on its own. The master's admin HTTP ({@code /metrics}) gives the tiers' capacities and its offload
 * counters.
 */
final class OverflowBench {
    /** The options only this mode reads. */
    static final class Options {
        @Option(names = "--total", defaultValue = "4x", paramLabel = "SIZE|Nx", description = "overflow: bytes to write in "
                + "all, a size or a multiple of the memory tier's capacity (4x: four times what memory holds). Default: ${DEFAULT-VALUE}.")
        String total;

        @Option(names = "--admin", paramLabel = "HOST:PORT", description = "overflow: the master's admin HTTP address, "
                + "read for the tiers' capacities and the offload counters. Default: the first master's host, port 9003.")
        String admin;

        @Option(names = {"--settle-timeout", "--settle_timeout"}, defaultValue = "120s", converter = DurationConverter.class, paramLabel = "DURATION",
                description = "overflow: how long to wait after the puts for the master's offloads in flight to end. "
                        + "Default: ${DEFAULT-VALUE}.")
        Duration settleTimeout;
    }

    private static final long POLL_MILLIS = 50;

    private final StoreBench bench;
    private final PrintStream out;
    private final PrintStream err;
    private final LongAdder errors = new LongAdder();
    private final LongAdder mismatches = new LongAdder();
    private final AtomicReference<String> firstError = new AtomicReference<>();

    OverflowBench(StoreBench bench, PrintStream out, PrintStream err) {
        this.bench = bench;
        this.out = out;
        this.err = err;
    }

    int run() throws InterruptedException {
        Options o = bench.overflow;
        String admin = o.admin != null ? o.admin : bench.connection.master.split(",")[0].replaceFirst(":[0-9]+$", "") + ":9003";
        URI metricsUri = URI.create("http://" + admin + "/metrics");
        int threads = Math.max(1, bench.threadsOption);
        long size = bench.size;
        if (size <= 0) {
            err.println("store-bench: --size must be at least 1 byte: " + size);
            return 2;
        }
        try (HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
             TransferEngine engine = bench.connection.engine();
             StoreClient client = bench.connection.client(engine).connect()) {
            if (bench.contribute > 0) {
                client.contribute(bench.contribute);
            }
            Map<String, Double> before = metrics(http, metricsUri);
            long memory = (long) value(before, "store_tier_capacity_bytes{tier=\"memory\"}");
            long disk = (long) value(before, "store_tier_capacity_bytes{tier=\"disk\"}");
            if (disk == 0) {
                err.println("store-bench: --mode overflow needs a disk tier: no node mounts a disk segment (store node --disk-dir)");
                return 1;
            }
            long total = total(o.total, memory);
            long room = memory + disk - (long) value(before, "store_tier_used_bytes{tier=\"memory\"}")
                    - (long) value(before, "store_tier_used_bytes{tier=\"disk\"}");
            if (total <= 0 || total > room) {
                err.println("store-bench: --total " + o.total + " is " + total + " bytes; overflow writes more than none "
                        + "and at most what memory (" + memory + " B) and disk (" + disk + " B) have free together ("
                        + room + " B), or values would be dropped");
                return 2;
            }
            int perThread = (int) Math.min(Integer.MAX_VALUE, (total / size + threads - 1) / threads);
            MemorySegment body = BenchValues.body(size);

            // phase 1: puts; the main thread watches the master for the first offload (memory full from then on)
            double started0 = value(before, "store_offloads_started_total");
            AtomicLong fullAt = new AtomicLong();
            LongAdder puts = new LongAdder();
            LongAdder fullPuts = new LongAdder();
            List<Thread> writers = new ArrayList<>();
            long t0 = System.nanoTime();
            for (int t = 0; t < threads; t++) {
                String prefix = bench.prefix + "/" + t;
                writers.add(Thread.ofPlatform().name("store-bench-" + t).start(() -> withBuffer(engine, size, buf -> {
                    ReplicateConfig cfg = ReplicateConfig.replicas(bench.replicas);
                    MemorySegment v = buf.asSlice(0, size).copyFrom(body);
                    for (int n = 0; n < perThread; n++) {
                        long start = System.nanoTime();
                        BenchValues.stamp(v, prefix, n);
                        try {
                            client.putFrom(prefix + "/" + n, v, cfg);
                            puts.increment();
                            long full = fullAt.get();
                            if (full != 0 && start >= full) {
                                fullPuts.increment();
                            }
                        } catch (StoreException e) {
                            failed(e);
                        }
                    }
                })));
            }
            while (alive(writers)) {
                if (fullAt.get() == 0 && value(metrics(http, metricsUri), "store_offloads_started_total") > started0) {
                    fullAt.set(System.nanoTime());
                }
                join(writers, POLL_MILLIS);
            }
            long t1 = System.nanoTime();

            // the offloads the puts started end (and no new round starts more) before the reads
            Map<String, Double> settled = null;
            boolean settledInTime = false;
            long deadline = t1 + o.settleTimeout.toNanos();
            double lastStarted = -1;
            while (System.nanoTime() < deadline) {
                settled = metrics(http, metricsUri);
                double started = value(settled, "store_offloads_started_total");
                if (value(settled, "store_offloads_in_flight") == 0 && started == lastStarted) {
                    settledInTime = true;
                    break;
                }
                lastStarted = started;
                Thread.sleep(POLL_MILLIS * 4); // between two looks at the master, not a wait for an event
            }
            long t2 = System.nanoTime();
            if (!settledInTime) {
                err.println("store-bench: offloads still in flight " + o.settleTimeout + " after the puts (store_offloads_in_flight "
                        + (settled == null ? "?" : (long) value(settled, "store_offloads_in_flight")) + "); reading anyway");
            }

            // phase 2: each thread sorts its keys by the tier the master lists first, then reads memory, then disk
            long[] marks = new long[3];
            CyclicBarrier phase = new CyclicBarrier(threads, () -> marks[marks[0] == 0 ? 0 : marks[1] == 0 ? 1 : 2] = System.nanoTime());
            LongAdder memReads = new LongAdder();
            LongAdder diskReads = new LongAdder();
            List<Thread> readers = new ArrayList<>();
            AtomicReferenceArray<List<Integer>> diskKeys = new AtomicReferenceArray<>(threads);
            for (int t = 0; t < threads; t++) {
                String prefix = bench.prefix + "/" + t;
                int thread = t;
                readers.add(Thread.ofPlatform().name("store-bench-" + t).start(
                        () -> diskKeys.set(thread, reader(engine, client, prefix, perThread, body, phase, memReads, diskReads))));
            }
            join(readers, 0);
            Map<String, Double> after = metrics(http, metricsUri);
            Warm warm = bench.duration.isZero() ? null : warm(engine, client, diskKeys, http, metricsUri);
            double putSecs = (t1 - t0) / 1e9;
            double fullSecs = fullAt.get() == 0 ? 0 : (t1 - fullAt.get()) / 1e9;
            double memSecs = (marks[1] - marks[0]) / 1e9;
            double diskSecs = (marks[2] - marks[1]) / 1e9;
            long reads = memReads.sum() + diskReads.sum();
            double readSecs = (marks[2] - marks[0]) / 1e9;
            double mib = size / (double) (1 << 20);
            long offloadsStarted = (long) (value(after, "store_offloads_started_total") - started0);
            long offloadsCompleted = (long) (value(after, "store_offloads_completed_total") - value(before, "store_offloads_completed_total"));
            if (bench.json) {
                out.printf(Locale.ROOT, "{\"mode\":\"overflow\",\"size\":%d,\"threads\":%d,\"replicas\":%d,\"memoryBytes\":%d,"
                                + "\"diskBytes\":%d,\"totalBytes\":%d,\"keys\":%d,\"puts\":%d,\"putSeconds\":%.3f,\"putsPerSecond\":%.1f,"
                                + "\"putMibPerSecond\":%.1f,\"fullPuts\":%d,\"fullSeconds\":%.3f,\"fullPutsPerSecond\":%.1f,"
                                + "\"offloadsStarted\":%d,\"offloadsCompleted\":%d,\"settled\":%b,\"settleSeconds\":%.3f,"
                                + "\"reads\":%d,\"readSeconds\":%.3f,\"readsPerSecond\":%.1f,\"readMibPerSecond\":%.1f,"
                                + "\"memoryReads\":%d,\"memoryReadsPerSecond\":%.1f,\"diskReads\":%d,\"diskReadsPerSecond\":%.1f,"
                                + "\"diskReadMibPerSecond\":%.1f,\"warmDiskReads\":%d,\"warmDiskReadsAtMaster\":%d,"
                                + "\"warmDiskReadMibPerSecond\":%.1f,\"errors\":%d,\"mismatches\":%d,\"verified\":%b}%n",
                        size, threads, bench.replicas, memory, disk, (long) perThread * threads * size, (long) perThread * threads,
                        puts.sum(), putSecs, rate(puts.sum(), putSecs), rate(puts.sum(), putSecs) * mib, fullPuts.sum(), fullSecs,
                        rate(fullPuts.sum(), fullSecs), offloadsStarted, offloadsCompleted, settledInTime, (t2 - t1) / 1e9,
                        reads, readSecs, rate(reads, readSecs), rate(reads, readSecs) * mib, memReads.sum(), rate(memReads.sum(), memSecs),
                        diskReads.sum(), rate(diskReads.sum(), diskSecs), rate(diskReads.sum(), diskSecs) * mib,
                        warm == null ? 0 : warm.reads, warm == null ? 0 : warm.atMaster,
                        warm == null ? 0 : rate(warm.reads, warm.seconds) * mib, errors.sum(), mismatches.sum(), bench.verify);
            } else {
                out.printf(Locale.ROOT, "overflow: memory tier %,d B, disk tier %,d B; %,d puts of %d B (%.1fx memory, %d threads) "
                                + "in %.2f s: %,.0f puts/s, %,.1f MiB/s; into a full memory tier (from the first offload): %,d puts "
                                + "in %.2f s, %,.0f puts/s%n", memory, disk, puts.sum(), size, puts.sum() * (double) size / memory,
                        threads, putSecs, rate(puts.sum(), putSecs), rate(puts.sum(), putSecs) * mib, fullPuts.sum(), fullSecs,
                        rate(fullPuts.sum(), fullSecs));
                out.printf(Locale.ROOT, "settle: %,d offloads started, %,d completed; %s after %.2f s%n", offloadsStarted,
                        offloadsCompleted, settledInTime ? "none in flight" : "still in flight", (t2 - t1) / 1e9);
                out.printf(Locale.ROOT, "read: %,d keys in %.2f s: %,.0f reads/s, %,.1f MiB/s; from memory %,d (%,.0f reads/s), "
                                + "from disk %,d (%,.0f reads/s, %,.1f MiB/s); %d errors%s%n", reads, readSecs, rate(reads, readSecs),
                        rate(reads, readSecs) * mib, memReads.sum(), rate(memReads.sum(), memSecs), diskReads.sum(),
                        rate(diskReads.sum(), diskSecs), rate(diskReads.sum(), diskSecs) * mib, errors.sum(),
                        bench.verify ? ", " + mismatches.sum() + " mismatches" : "");
                if (warm != null) {
                    out.printf(Locale.ROOT, "warm disk reads: %,d in %.2f s after %.2f s unmeasured: %,.0f reads/s, %,.1f MiB/s "
                                    + "(%,d reads from disk at the master, warm-up included)%n", warm.reads, warm.seconds,
                            bench.warmup.toNanos() / 1e9, rate(warm.reads, warm.seconds), rate(warm.reads, warm.seconds) * mib,
                            warm.atMaster);
                }
            }
            if (firstError.get() != null) {
                err.println("first error: " + firstError.get());
            }
            return errors.sum() > 0 || mismatches.sum() > 0 || !settledInTime ? 1 : 0;
        } catch (StoreException | IllegalArgumentException | IOException e) {
            err.println("store-bench: " + e.getMessage());
            return 1;
        }
    }

    /** The warm disk read phase: reads measured, its length, and the master's count of disk reads over it. */
    private record Warm(long reads, double seconds, long atMaster) {
    }

    /**
     * With --duration: each thread reads its disk keys again, in a cycle, for --warmup unmeasured and then --duration,
     * so the disk read rate is the JIT-compiled one, as file-bench's is after its warm-up. A call counts if it
     * started while measuring. The master's disk read count shows whether promotion turned some into memory reads.
     * These reads are not compared with --verify again (the first pass did, and file-bench compares nothing); the
     * client still checks each against the CRC32C recorded at offload, as every disk read is.
     */
    private Warm warm(TransferEngine engine, StoreClient client, AtomicReferenceArray<List<Integer>> diskKeys,
                      HttpClient http, URI metricsUri) throws IOException, InterruptedException {
        double before = value(metrics(http, metricsUri), "store_disk_reads_total");
        long from = System.nanoTime() + bench.warmup.toNanos();
        long end = from + bench.duration.toNanos();
        LongAdder measured = new LongAdder();
        List<Thread> readers = new ArrayList<>();
        for (int t = 0; t < diskKeys.length(); t++) {
            List<Integer> ns = diskKeys.get(t);
            if (ns == null || ns.isEmpty()) {
                continue;
            }
            String prefix = bench.prefix + "/" + t;
            readers.add(Thread.ofPlatform().name("store-bench-" + t).start(() -> withBuffer(engine, bench.size * batch(), buf -> {
                for (int i = 0; ; i = (i + batch()) % ns.size()) {
                    long start = System.nanoTime();
                    if (start - end >= 0) {
                        return;
                    }
                    List<Integer> chunk = new ArrayList<>(batch());
                    for (int k = 0; k < Math.min(batch(), ns.size()); k++) {
                        chunk.add(ns.get((i + k) % ns.size()));
                    }
                    int ok = readBatch(client, prefix, chunk, buf, null);
                    if (start - from >= 0) {
                        measured.add(ok);
                    }
                }
            })));
        }
        join(readers, 0);
        long atMaster = (long) (value(metrics(http, metricsUri), "store_disk_reads_total") - before);
        if (atMaster < measured.sum()) {
            err.println("store-bench: the master counted " + atMaster + " disk reads, fewer than the " + measured.sum()
                    + " warm reads measured: promotion (--promote-after-hits) turned some into memory reads");
        }
        return new Warm(measured.sum(), bench.duration.toNanos() / 1e9, atMaster);
    }

    /**
     * One reader thread: sorts its keys by tier, then reads its memory ones and its disk ones, each phase started by
     * all threads together; a thread that failed still passes every barrier, so none waits for it forever. Returns
     * its disk keys.
     */
    private List<Integer> reader(TransferEngine engine, StoreClient client, String prefix, int count, MemorySegment body,
                        CyclicBarrier phase, LongAdder memReads, LongAdder diskReads) {
        long size = bench.size;
        RegisteredMemory buf = null;
        List<List<Integer>> byTier = List.of(List.of(), List.of());
        MemorySegment expect = expected(body);
        try {
            buf = engine.allocate(size * batch(), Location.CPU, Permission.READ_WRITE);
            byTier = classify(client, prefix, count);
        } catch (RuntimeException e) {
            failed(e);
        }
        try {
            await(phase);
            if (buf != null) {
                read(client, prefix, byTier.get(Tier.MEMORY.ordinal()), buf.segment(), expect, memReads);
            }
            await(phase);
            if (buf != null) {
                read(client, prefix, byTier.get(Tier.DISK.ordinal()), buf.segment(), expect, diskReads);
            }
            await(phase);
        } catch (RuntimeException e) {
            failed(e);
        } finally {
            if (buf != null) {
                engine.unregister(buf);
            }
        }
        return byTier.get(Tier.DISK.ordinal());
    }

    /** With --verify, a heap copy of the body to stamp each expected value into; else null. */
    private MemorySegment expected(MemorySegment body) {
        long size = bench.size;
        return bench.verify ? MemorySegment.ofArray(new long[(int) ((size + 7) / 8)]).asSlice(0, size).copyFrom(body) : null;
    }

    /** The thread's key indexes by the tier of the replica a read tries first; a key the master lacks is an error. */
    private List<List<Integer>> classify(StoreClient client, String prefix, int count) {
        List<List<Integer>> byTier = List.of(new ArrayList<>(), new ArrayList<>());
        for (int from = 0; from < count; from += MasterService.MAX_BATCH) {
            List<String> keys = new ArrayList<>();
            for (int n = from; n < Math.min(count, from + MasterService.MAX_BATCH); n++) {
                keys.add(prefix + "/" + n);
            }
            try (GetSession s = client.getSession(keys)) {
                for (int i = 0; i < keys.size(); i++) {
                    try {
                        byTier.get(s.tier(i).ordinal()).add(from + i);
                    } catch (StoreException e) {
                        failed(e);
                    }
                }
            }
        }
        return byTier;
    }

    private void read(StoreClient client, String prefix, List<Integer> ns, MemorySegment buf, MemorySegment expect, LongAdder done) {
        for (int from = 0; from < ns.size(); from += batch()) {
            done.add(readBatch(client, prefix, ns.subList(from, Math.min(ns.size(), from + batch())), buf, expect));
        }
    }

    /** Keys per read call: --batch (getBatchInto, every read of a batch in flight at once), 1 a plain getInto. */
    private int batch() {
        return Math.max(1, bench.batchOption);
    }

    /**
     * Reads keys {@code ns} into consecutive values of {@code buf} (checked against expect with --verify); returns
     * how many were read, the failures counted as errors.
     */
    private int readBatch(StoreClient client, String prefix, List<Integer> ns, MemorySegment buf, MemorySegment expect) {
        long size = bench.size;
        List<String> keys = new ArrayList<>(ns.size());
        List<MemorySegment> dsts = new ArrayList<>(ns.size());
        for (int k = 0; k < ns.size(); k++) {
            keys.add(prefix + "/" + ns.get(k));
            dsts.add(buf.asSlice(k * size, size));
        }
        List<Outcome<Long>> outcomes;
        try {
            outcomes = keys.size() == 1 ? List.of(Outcome.of(client.getInto(keys.getFirst(), dsts.getFirst())))
                    : client.getBatchInto(keys, dsts);
        } catch (RuntimeException e) {
            failed(e);
            return 0;
        }
        int ok = 0;
        for (int k = 0; k < ns.size(); k++) {
            Outcome<Long> o = outcomes.get(k);
            if (!o.ok()) {
                failed(o.error());
                continue;
            }
            ok++;
            if (expect != null) {
                BenchValues.stamp(expect, prefix, ns.get(k));
                if (dsts.get(k).mismatch(expect) >= 0) {
                    mismatches.increment();
                }
            }
        }
        return ok;
    }

    private void failed(RuntimeException e) {
        errors.increment();
        firstError.compareAndSet(null, e.toString());
    }

    private void withBuffer(TransferEngine engine, long size, java.util.function.Consumer<MemorySegment> body) {
        RegisteredMemory buf = engine.allocate(size, Location.CPU, Permission.READ_WRITE);
        try {
            body.accept(buf.segment());
        } catch (RuntimeException e) {
            failed(e);
        } finally {
            engine.unregister(buf);
        }
    }

    /** A size, or a multiple of the memory tier's capacity ("4x", "2.5x"). */
    static long total(String spec, long memory) {
        String s = spec.strip().toLowerCase(Locale.ROOT);
        if (s.endsWith("x")) {
            try {
                return (long) (Double.parseDouble(s.substring(0, s.length() - 1)) * memory);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--total must be a size (64m) or a multiple of memory (4x): " + spec);
            }
        }
        try {
            return new SizeConverter().convert(s);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("--total must be a size (64m) or a multiple of memory (4x): " + spec);
        }
    }

    /** The master's Prometheus series, by name with labels as written. */
    static Map<String, Double> metrics(HttpClient http, URI uri) throws IOException, InterruptedException {
        HttpResponse<String> r;
        try {
            r = http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new IOException("cannot read the master's admin HTTP " + uri + " (--admin): " + e, e);
        }
        if (r.statusCode() != 200) {
            throw new IOException("the master's admin HTTP " + uri + " answered " + r.statusCode());
        }
        Map<String, Double> m = new HashMap<>();
        for (String line : r.body().split("\n")) {
            int sp = line.lastIndexOf(' ');
            if (!line.startsWith("#") && sp > 0) {
                try {
                    m.put(line.substring(0, sp), Double.parseDouble(line.substring(sp + 1)));
                } catch (NumberFormatException ignored) {
                    // not a sample line
                }
            }
        }
        return m;
    }

    private static double value(Map<String, Double> m, String series) throws IOException {
        Double v = m.get(series);
        if (v == null) {
            throw new IOException("the master's /metrics has no " + series + " (a master from before the disk tier?)");
        }
        return v;
    }

    private static double rate(long n, double secs) {
        return secs > 0 ? n / secs : 0;
    }

    private static boolean alive(List<Thread> threads) {
        return threads.stream().anyMatch(Thread::isAlive);
    }

    private static void join(List<Thread> threads, long millis) throws InterruptedException {
        for (Thread t : threads) {
            if (millis == 0) {
                t.join();
            } else if (!t.join(Duration.ofMillis(millis))) {
                return;
            }
        }
    }

    private static void await(CyclicBarrier b) {
        try {
            b.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted between read phases", e);
        } catch (java.util.concurrent.BrokenBarrierException e) {
            throw new IllegalStateException("a reader thread failed between read phases", e);
        }
    }
}
