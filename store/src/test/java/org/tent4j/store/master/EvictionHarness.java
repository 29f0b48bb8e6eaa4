package org.tent4j.store.master;

import java.util.Locale;

import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;

/**
 * Not a test: what eviction costs the master alone (no network) with N objects of 4 KiB on two segments. Measures one
 * housekeeping round over the high watermark, and the put that finds the store full (no round in between), which is
 * what a call on the event loop waits for. Uses only commands that every build has, so it runs against older builds
 * too. Run (after {@code ./mvnw -pl store -am package}):
 * <pre>
 * java -Xmx4g -XX:+UseParallelGC -cp "store/target/classes:store/target/test-classes:cli/target/lib/*" \
 *   org.tent4j.store.master.EvictionHarness 2000000 5
 * </pre>
 */
public final class EvictionHarness {
    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 2_000_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        ReplicateConfig cfg = ReplicateConfig.defaults();
        for (int round = 0; round < rounds; round++) {
            long[] now = {1_000_000_000L};
            MasterState state = new MasterState(MasterConfig.defaults());
            // two segments exactly as large as the objects: the store is full after N puts
            long half = (long) n / 2 * 4096;
            state.apply(now[0], new Command.Mount("node", new SegmentSpec("a", "ea", "h", 1L << 40, half), 1L));
            state.apply(now[0], new Command.Mount("node", new SegmentSpec("b", "eb", "h", 1L << 40, half), 1L));
            state.apply(now[0], new Command.Tick()); // the abandoned-put sweep's first run: not what is measured
            int i = 0;
            for (; i < n; i++) {
                put(state, now, i, cfg);
            }
            long t0 = System.nanoTime();
            put(state, now, i++, cfg); // the store is full: this put evicts before it is placed
            long fullPut = System.nanoTime() - t0;
            // refill to full again, then a housekeeping round (over the watermark)
            for (int k = 0; k < n && fits(state); k++) {
                put(state, now, i++, cfg);
            }
            long t1 = System.nanoTime();
            Command.TickReport r = state.apply(now[0], new Command.Tick());
            long tick = System.nanoTime() - t1;
            System.out.printf(Locale.ROOT, "%d objects: put into the full store %.3f ms; tick over the watermark %.1f ms (%d evicted)%n",
                    n, fullPut / 1e6, tick / 1e6, r.evictedObjects());
        }
    }

    private static boolean fits(MasterState state) {
        return state.segments().stream().mapToLong(s -> s.capacity() - s.used()).sum() >= 4096;
    }

    private static void put(MasterState state, long[] now, int i, ReplicateConfig cfg) {
        String key = String.format(Locale.ROOT, "kv/%010d", i);
        Command.PutTicket t = state.apply(now[0], new Command.PutStart("writer", key, 4096, cfg, "h", false, i));
        state.apply(now[0], new Command.PutEnd("writer", key, t.putId()));
        now[0] += 1_000;
    }
}
