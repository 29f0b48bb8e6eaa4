package org.tent4j.store.master;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;

/**
 * Not a test: measures the master alone (no network) with N small objects: heap bytes per object (live heap after
 * full GCs, minus the empty master) and metadata operations per second, single threaded and with batches applied
 * from several threads. Run (after {@code ./mvnw -pl store -am package}):
 * <pre>
 * java -Xmx6g -XX:+UseParallelGC -cp "store/target/classes:store/target/test-classes:cli/target/lib/*" \
 *   org.tent4j.store.master.MasterHeapHarness 10000000 2
 * </pre>
 */
public final class MasterHeapHarness {
    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 10_000_000;
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        long[] now = {1_000_000_000L};
        long before = liveHeap();
        MasterState state = new MasterState(MasterConfig.defaults());
        // 64 segments of 1 TiB each: metadata only, no memory behind them
        for (int s = 0; s < 64; s++) {
            state.apply(now[0], new Command.Mount("node-" + s, new SegmentSpec("seg-" + s, "10.0.0." + s + ":15000", "10.0.0." + s, 1L << 40, 1L << 40), 1L));
        }
        ReplicateConfig cfg = ReplicateConfig.defaults();
        long t0 = System.nanoTime();
        int per = n / threads;
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t;
            ts.add(Thread.ofPlatform().start(() -> {
                for (int i = id * per; i < (id + 1) * per; i++) {
                    String key = key(i);
                    Command.PutTicket tk = state.apply(now[0], new Command.PutStart("writer", key, 4096, cfg, "h", false, i));
                    state.apply(now[0], new Command.PutEnd("writer", key, tk.putId()));
                }
            }));
        }
        for (Thread t : ts) {
            t.join();
        }
        double putSecs = (System.nanoTime() - t0) / 1e9;
        long after = liveHeap();
        long objects = state.objectCount();
        System.out.printf(Locale.ROOT, "objects %,d: heap %,d bytes = %.1f bytes per object (keys of %d chars, 1 replica)%n",
                objects, after - before, (double) (after - before) / objects, key(0).length());
        System.out.printf(Locale.ROOT, "put start + put end: %,.0f objects/s (%,.0f metadata ops/s) with %d threads%n",
                objects / putSecs, 2 * objects / putSecs, threads);
        long t1 = System.nanoTime();
        int reads = Math.min(n, 4_000_000);
        int perR = reads / threads;
        ts.clear();
        for (int t = 0; t < threads; t++) {
            int id = t;
            ts.add(Thread.ofPlatform().start(() -> {
                for (int i = id * perR; i < (id + 1) * perR; i++) {
                    state.apply(now[0], new Command.GrantRead(key(i)));
                }
            }));
        }
        for (Thread t : ts) {
            t.join();
        }
        double getSecs = (System.nanoTime() - t1) / 1e9;
        System.out.printf(Locale.ROOT, "get replica list (lease granted): %,.0f ops/s with %d threads%n", reads / getSecs, threads);
        long t2 = System.nanoTime();
        state.apply(now[0], new Command.Tick());
        System.out.printf(Locale.ROOT, "housekeeping round with its abandoned-put sweep over %,d objects: %.0f ms%n", objects, (System.nanoTime() - t2) / 1e6);
        long t3 = System.nanoTime();
        state.apply(now[0] + 20_000_000_000L, new Command.Tick());
        System.out.printf(Locale.ROOT, "housekeeping round dropping all 64 segments of silent clients (%,d objects): %.0f ms%n", objects, (System.nanoTime() - t3) / 1e6);
    }

    static String key(int i) {
        return String.format("kv/%010d", i);
    }

    /** Heap in use once full collections stop freeing anything (at most 8 of them). */
    private static long liveHeap() {
        var memory = ManagementFactory.getMemoryMXBean();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 8; i++) {
            memory.gc();
            long now = memory.getHeapMemoryUsage().getUsed();
            if (now >= used) {
                return now;
            }
            used = now;
        }
        return used;
    }
}
