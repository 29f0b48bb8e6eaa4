package org.tent4j.runtime.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * A reconnect's paths replace the old connection's in the path gauges. (They share names and tags, and registering
 * returned the old meters: after a reconnect the gauges read the dead connection's paths for good.)
 */
class PathMetersTest {
    record View(String name, double inflightBytes) implements EngineMetrics.PathView {
        @Override public double bandwidthBytesPerSecond() { return 1; }
        @Override public boolean paused() { return false; }
        @Override public double completedSlices() { return 0; }
        @Override public double failedSlices() { return 0; }
    }

    @Test
    void aReconnectsPathsAreTheOnesTheGaugesRead() {
        try (EngineMetrics m = new EngineMetrics("seg")) {
            m.paths("peer", "tcp", List.of(new View("lane-0", 111), new View("lane-1", 1)));
            assertEquals(List.of("111.0", "1.0"), inflight(m));
            m.paths("peer", "tcp", List.of(new View("lane-0", 222), new View("lane-1", 2)));
            assertEquals(List.of("222.0", "2.0"), inflight(m));
        }
    }

    private static List<String> inflight(EngineMetrics m) {
        return m.scrape().lines().filter(l -> l.startsWith("tent4j_path_inflight_bytes{"))
                .sorted().map(l -> l.substring(l.lastIndexOf(' ') + 1)).toList();
    }
}
