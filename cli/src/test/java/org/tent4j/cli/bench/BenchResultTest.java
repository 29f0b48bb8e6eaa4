package org.tent4j.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.Test;

class BenchResultTest {
    static final Set<String> KEYS = Set.of("gbps", "ops_per_sec", "p50_us", "p99_us", "p999_us", "bytes", "errors",
            "mismatches", "protocol", "operation", "block_size", "batch_size", "threads", "duration_s");

    @Test
    void jsonLineHasEveryKeyWithComputedValues() throws Exception {
        LatencyHistogram h = new LatencyHistogram();
        for (int i = 1; i <= 1000; i++) {
            h.record(i * 1000L); // 1..1000 us
        }
        BenchResult r = new BenchResult("tcp", "read", 65536, 32, 2, 2_000_000_000L, 4_000_000_000L, 61_035, 3, 1,
                "FAILED PEER_FAILED: peer \"x\" went away\n", h);
        String line = r.toJson();
        assertFalse(line.contains("\n"), "one line");
        JsonNode json = new ObjectMapper().readTree(line);
        List<String> keys = new ArrayList<>();
        json.fieldNames().forEachRemaining(keys::add);
        assertEquals(KEYS, Set.copyOf(keys));
        assertEquals(2.0, json.get("gbps").asDouble(), 1e-9);
        assertEquals(30517.5, json.get("ops_per_sec").asDouble(), 0.1);
        assertEquals(500.0, json.get("p50_us").asDouble(), 5.0);
        assertEquals(990.0, json.get("p99_us").asDouble(), 10.0);
        assertEquals(999.0, json.get("p999_us").asDouble(), 10.0);
        assertEquals(4_000_000_000L, json.get("bytes").asLong());
        assertEquals(3, json.get("errors").asLong());
        assertEquals(1, json.get("mismatches").asLong());
        assertEquals("tcp", json.get("protocol").asText());
        assertEquals("read", json.get("operation").asText());
        assertEquals(65536, json.get("block_size").asLong());
        assertEquals(32, json.get("batch_size").asInt());
        assertEquals(2, json.get("threads").asInt());
        assertEquals(2.0, json.get("duration_s").asDouble(), 1e-9);
    }

    @Test
    void emptyRunIsStillValidJson() throws Exception {
        BenchResult r = new BenchResult("sh\"m\\", "write", 4096, 1, 1, 0, 0, 0, 0, 0, null, new LatencyHistogram());
        JsonNode json = new ObjectMapper().readTree(r.toJson());
        assertEquals(0.0, json.get("gbps").asDouble());
        assertEquals("sh\"m\\", json.get("protocol").asText());
        assertEquals(0.0, json.get("p999_us").asDouble());
        assertTrue(r.summary().contains("errors      0"));
    }
}
