package org.tent4j.samples.bench;

import java.util.Arrays;
import java.util.Map;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;

/**
 * Time to publish a descriptor and to open a segment, cold (fetched from the store) and cached, per metadata backend,
 * side by side in one run. Arguments: metadata URIs ({@code p2p} included for comparison). Prints one line per
 * backend with medians in microseconds.
 *
 * <p>Publish = one {@code register} (it republishes the descriptor). Cold open = {@code openSegment} after
 * {@code closeSegment}, so the descriptor is fetched again. Cached = {@code openSegment} of an open segment.
 */
public final class MetadataBench {
    private static final int ROUNDS = 50;

    public static void main(String[] args) {
        for (String uri : args) {
            EngineConfig.Builder base = EngineConfig.builder().environment(Map.of()).set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                    .set(EngineConfig.METADATA_URI, uri).set(EngineConfig.TRANSPORTS_ENABLED, "tcp");
            boolean p2p = uri.equals("p2p");
            try (TransferEngine a = TransferEngine.create(p2p ? base.build() : base.set(EngineConfig.SEGMENT_NAME, "bench-a").build());
                 TransferEngine b = TransferEngine.create(p2p ? base.build() : base.set(EngineConfig.SEGMENT_NAME, "bench-b").build())) {
                long[] publish = new long[ROUNDS];
                for (int i = 0; i < ROUNDS; i++) {
                    long t0 = System.nanoTime();
                    RegisteredMemory m = a.allocate(4096, Location.CPU, Permission.READ_WRITE);
                    publish[i] = System.nanoTime() - t0;
                    a.unregister(m);
                }
                long[] cold = new long[ROUNDS];
                for (int i = 0; i < ROUNDS; i++) {
                    long t0 = System.nanoTime();
                    SegmentHandle h = b.openSegment(a.segmentName());
                    cold[i] = System.nanoTime() - t0;
                    b.closeSegment(h);
                }
                b.openSegment(a.segmentName());
                long[] cached = new long[ROUNDS * 100];
                for (int i = 0; i < cached.length; i++) {
                    long t0 = System.nanoTime();
                    b.openSegment(a.segmentName());
                    cached[i] = System.nanoTime() - t0;
                }
                System.out.printf("%s publish_us=%.1f open_cold_us=%.1f open_cached_us=%.3f%n", uri.replaceAll("://.*", ""),
                        median(publish), median(cold), median(cached));
            }
        }
    }

    private static double median(long[] nanos) {
        long[] s = nanos.clone();
        Arrays.sort(s);
        return s[s.length / 2] / 1000.0;
    }
}
