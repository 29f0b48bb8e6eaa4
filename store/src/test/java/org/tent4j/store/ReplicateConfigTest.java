package org.tent4j.store;

import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class ReplicateConfigTest {
    @Test
    void everyWitherKeepsWhatTheOthersSet() {
        ReplicateConfig base = ReplicateConfig.defaults().withExcludedSegments(List.of("seg-x")).withWriteThrough(true);
        List<UnaryOperator<ReplicateConfig>> withers = List.of(c -> c.withReplicas(2), c -> c.withPreferredSegments(List.of("seg-a")),
                c -> c.withPreferLocalHost(true), c -> c.withSoftPin(Duration.ofSeconds(5)), ReplicateConfig::withHardPin);
        for (UnaryOperator<ReplicateConfig> w : withers) {
            ReplicateConfig c = w.apply(base);
            assertEquals(List.of("seg-x"), c.excludedSegments(), "excluded segments after " + c);
            assertEquals(Boolean.TRUE, c.writeThrough(), "write-through after " + c);
        }
    }
}
