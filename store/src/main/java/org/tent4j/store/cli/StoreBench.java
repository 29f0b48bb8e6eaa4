package org.tent4j.store.cli;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.zip.CRC32C;

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
                    "contribute", "control-host", "client-id"), Set.of("verify", "json", "help"));
        } catch (IllegalArgumentException e) {
            System.err.println("store-bench: " + e.getMessage());
            System.exit(2);
            return;
        }
        if (o.flag("help")) {
            System.out.println("""
                    usage: store-bench --master host:port [--mode put|get|mixed|exist] [--size 4k] [--batch 1] [--threads 4]
                                       [--count 1000 (per thread)] [--replicas 1] [--prefix bench] [--contribute 0]
                                       [--verify] [--json] [--control-host ip]
                      put:   writes count values per thread (batch > 1 uses batch put)
                      get:   reads them back (run a put with the same prefix/threads/count first)
                      mixed: each thread writes its values, then alternates a get of a written value with a put
                      exist: metadata only (batched exist checks of the keys a put wrote): the master's RPC rate""");
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
        EngineConfig.Builder cfg = EngineConfig.builder();
        if (o.string("control-host", null) != null) {
            cfg.set(EngineConfig.CONTROL_HOST, o.string("control-host", null));
        }
        try (TransferEngine engine = TransferEngine.create(cfg.build());
             StoreClient client = connect(o, engine)) {
            if (o.size("contribute", 0) > 0) {
                client.contribute(o.size("contribute", 0));
            }
            LongAdder ops = new LongAdder();
            LongAdder errors = new LongAdder();
            LongAdder mismatches = new LongAdder();
            AtomicLong firstError = new AtomicLong();
            String[] firstErrorText = new String[1];
            CountDownLatch done = new CountDownLatch(threads);
            List<Thread> workers = new ArrayList<>();
            long start = System.nanoTime();
            for (int t = 0; t < threads; t++) {
                int tid = t;
                workers.add(Thread.ofPlatform().name("store-bench-" + t).start(() -> {
                    RegisteredMemory buf = engine.allocate(size * batch * 2, Location.CPU, Permission.READ_WRITE);
                    try {
                        Worker w = new Worker(client, buf.segment(), size, batch, replicas, prefix + "/" + tid, verify, ops, errors, mismatches);
                        switch (mode) {
                            case "put" -> w.put(0, count);
                            case "get" -> w.get(0, count);
                            case "mixed" -> w.mixed(count);
                            case "exist" -> w.exist(count);
                            default -> throw new IllegalArgumentException("--mode must be put, get, mixed or exist: " + mode);
                        }
                    } catch (RuntimeException e) {
                        errors.increment();
                        if (firstError.compareAndSet(0, 1)) {
                            firstErrorText[0] = e.toString();
                        }
                    } finally {
                        engine.unregister(buf);
                        done.countDown();
                    }
                }));
            }
            long last = start;
            long lastOps = 0;
            while (!done.await(1, java.util.concurrent.TimeUnit.SECONDS)) {
                long now = System.nanoTime();
                long n = ops.sum();
                System.err.printf("\r%s %6.1fs  %,d ops  %,.0f ops/s  %,.1f MiB/s  errors %d   ", mode, (now - start) / 1e9, n,
                        (n - lastOps) / ((now - last) / 1e9), (n - lastOps) * size / ((now - last) / 1e9) / (1 << 20), errors.sum());
                last = now;
                lastOps = n;
            }
            double secs = (System.nanoTime() - start) / 1e9;
            long n = ops.sum();
            System.err.println();
            if (o.flag("json")) {
                System.out.printf(Locale.ROOT, "{\"mode\":\"%s\",\"size\":%d,\"batch\":%d,\"threads\":%d,\"replicas\":%d,\"ops\":%d,"
                                + "\"seconds\":%.3f,\"opsPerSecond\":%.1f,\"mibPerSecond\":%.1f,\"errors\":%d,\"mismatches\":%d,\"verified\":%b}%n",
                        mode, size, batch, threads, replicas, n, secs, n / secs, n * size / secs / (1 << 20), errors.sum(), mismatches.sum(), verify);
            } else {
                System.out.printf(Locale.ROOT, "%s: %,d ops of %d B (batch %d, %d threads, %d replicas) in %.2f s: %,.0f ops/s, %,.1f MiB/s, %d errors%s%n",
                        mode, n, size, batch, threads, replicas, secs, n / secs, n * size / secs / (1 << 20), errors.sum(),
                        verify ? ", " + mismatches.sum() + " CRC mismatches" : "");
            }
            if (firstErrorText[0] != null) {
                System.err.println("first error: " + firstErrorText[0]);
            }
            if (errors.sum() > 0 || mismatches.sum() > 0) {
                System.exit(1);
            }
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
    private record Worker(StoreClient client, MemorySegment buf, long size, int batch, int replicas, String prefix,
                          boolean verify, LongAdder ops, LongAdder errors, LongAdder mismatches) {

        void put(int from, int to) {
            ReplicateConfig cfg = ReplicateConfig.replicas(replicas);
            for (int i = from; i < to; i += batch) {
                int n = Math.min(batch, to - i);
                if (n == 1) {
                    fill(buf.asSlice(0, size), i);
                    count(client.putFrom(key(i), buf.asSlice(0, size), cfg) != null);
                } else {
                    List<String> keys = new ArrayList<>(n);
                    List<MemorySegment> srcs = new ArrayList<>(n);
                    for (int j = 0; j < n; j++) {
                        MemorySegment s = buf.asSlice(j * size, size);
                        fill(s, i + j);
                        keys.add(key(i + j));
                        srcs.add(s);
                    }
                    for (Outcome<PutResult> r : client.putBatchFrom(keys, srcs, cfg)) {
                        count(r.ok());
                    }
                }
            }
        }

        void get(int from, int to) {
            for (int i = from; i < to; i += batch) {
                int n = Math.min(batch, to - i);
                if (n == 1) {
                    try {
                        client.getInto(key(i), buf.asSlice(0, size));
                        count(true);
                        check(buf.asSlice(0, size), i);
                    } catch (StoreException e) {
                        count(false);
                    }
                } else {
                    List<String> keys = new ArrayList<>(n);
                    List<MemorySegment> dsts = new ArrayList<>(n);
                    for (int j = 0; j < n; j++) {
                        keys.add(key(i + j));
                        dsts.add(buf.asSlice(j * size, size));
                    }
                    List<Outcome<Long>> rs = client.getBatchInto(keys, dsts);
                    for (int j = 0; j < n; j++) {
                        count(rs.get(j).ok());
                        if (rs.get(j).ok()) {
                            check(dsts.get(j), i + j);
                        }
                    }
                }
            }
        }

        void exist(int count) {
            for (int i = 0; i < count; i += batch) {
                int n = Math.min(batch, count - i);
                List<String> keys = new ArrayList<>(n);
                for (int j = 0; j < n; j++) {
                    keys.add(key(i + j));
                }
                for (Outcome<Boolean> r : client.existsBatch(keys)) {
                    count(r.ok() && r.value());
                }
            }
        }

        void mixed(int count) {
            int half = Math.max(1, count / 2);
            put(0, half);
            for (int i = 0; i < half; i += batch) {
                get(i, Math.min(half, i + batch));
                put(half + i, Math.min(count, half + i + batch));
            }
        }

        private void count(boolean ok) {
            if (ok) {
                ops.increment();
            } else {
                errors.increment();
            }
        }

        private String key(int i) {
            return prefix + "/" + i;
        }

        private void fill(MemorySegment s, int i) {
            long seed = (prefix.hashCode() * 31L + i) * 0x9E3779B97F4A7C15L;
            long n = s.byteSize() / 8;
            for (long k = 0; k < n; k++) {
                s.set(ValueLayout.JAVA_LONG_UNALIGNED, k * 8, seed ^ k);
            }
        }

        private void check(MemorySegment s, int i) {
            if (!verify) {
                return;
            }
            MemorySegment expect = MemorySegment.ofArray(new byte[(int) s.byteSize()]);
            fill(expect, i);
            CRC32C a = new CRC32C();
            a.update(s.asByteBuffer());
            CRC32C b = new CRC32C();
            b.update(expect.asByteBuffer());
            if (a.getValue() != b.getValue()) {
                mismatches.increment();
            }
        }
    }
}
