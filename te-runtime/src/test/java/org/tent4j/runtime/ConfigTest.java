package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ConnectException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.tent4j.api.ConfigException;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.runtime.config.CoreKey;
import org.tent4j.runtime.schedule.PathState;

class ConfigTest {

    private static EngineConfig.Builder base() {
        return EngineConfig.builder().environment(Map.of()).set(EngineConfig.CONTROL_HOST, "127.0.0.1");
    }

    private static ConfigException rejected(EngineConfig.Builder b) {
        return assertThrows(ConfigException.class, () -> TransferEngine.create(b.build()).close());
    }

    @Test
    void unknownKeysAreRejectedWithTheKeyNamed() {
        ConfigException e = rejected(base().set("slice.sise", "1m"));
        assertEquals("slice.sise", e.key());
        assertTrue(e.getMessage().contains("unknown key"), e.getMessage());
        ConfigException t = rejected(base().set("transports.warp.speed", "9"));
        assertTrue(t.getMessage().contains("no transport 'warp'"), t.getMessage());
        ConfigException o = rejected(base().set("transports.inproc.nonsense", "1"));
        assertEquals("transports.inproc.nonsense", o.key());
    }

    @Test
    void badValuesAreRejectedWithTheKeyNamed() {
        assertEquals(EngineConfig.SLICE_SIZE, rejected(base().set(EngineConfig.SLICE_SIZE, "huge")).key());
        assertEquals(EngineConfig.SLICE_SIZE, rejected(base().set(EngineConfig.SLICE_SIZE, "100")).key());
        assertEquals(EngineConfig.TRANSFER_TIMEOUT, rejected(base().set(EngineConfig.TRANSFER_TIMEOUT, "soon")).key());
        assertEquals(EngineConfig.TRANSPORTS_FALLBACK, rejected(base().set(EngineConfig.TRANSPORTS_FALLBACK, "maybe")).key());
        assertEquals("transports.inproc.fail_after", rejected(base().set("transports.inproc.fail_after", "x")).key());
        assertEquals(EngineConfig.TRANSPORTS_ENABLED, rejected(base().set(EngineConfig.TRANSPORTS_ENABLED, "carrier-pigeon")).key());
        assertEquals(EngineConfig.METADATA_URI, rejected(base().set(EngineConfig.METADATA_URI, "zookeeper://h:1")).key());
        // a path counts slices and bytes in flight in one word: limits beyond its fields are refused, not wrapped
        ConfigException slices = rejected(base().set("paths.max_inflight", Integer.toString(PathState.MAX_SLICES + 1)));
        assertEquals("paths.max_inflight", slices.key());
        assertTrue(slices.getMessage().contains(Integer.toString(PathState.MAX_SLICES)), slices.getMessage());
        assertEquals("paths.max_inflight_bytes", rejected(base().set("paths.max_inflight_bytes", "16t")).key());
        assertEquals(EngineConfig.SLICE_SIZE, rejected(base().set(EngineConfig.SLICE_SIZE, "16t")).key());
        assertEquals("transfer.await_spin", rejected(base().set("transfer.await_spin", "2ms")).key());
        assertEquals(CoreKey.CONTROL_KEEPALIVE_IDLE, rejected(base().set(CoreKey.CONTROL_KEEPALIVE_IDLE, "500ms")).key());
        assertEquals(CoreKey.CONTROL_KEEPALIVE_INTERVAL, rejected(base().set(CoreKey.CONTROL_KEEPALIVE_INTERVAL, "0s")).key());
        assertEquals(CoreKey.CONTROL_KEEPALIVE_COUNT, rejected(base().set(CoreKey.CONTROL_KEEPALIVE_COUNT, "200")).key());
    }

    @Test
    void layersApplyFileThenBuilderThenEnvironment(@TempDir Path dir) throws IOException {
        Path json = dir.resolve("engine.json");
        Files.writeString(json, """
                {"segment": {"name": "from-file"}, "slice": {"size": "128k"}, "transports": {"preference": ["inproc"]}}
                """);
        try (TransferEngine e = TransferEngine.create(base().file(json).build())) {
            assertEquals("from-file", e.segmentName());
        }
        try (TransferEngine e = TransferEngine.create(base().file(json).set(EngineConfig.SEGMENT_NAME, "from-builder").build())) {
            assertEquals("from-builder", e.segmentName());
        }
        try (TransferEngine e = TransferEngine.create(base().file(json).set(EngineConfig.SEGMENT_NAME, "from-builder")
                .environment(Map.of("TENT4J_SEGMENT_NAME", "from-env")).build())) {
            assertEquals("from-env", e.segmentName());
        }
        // a fallback holds only where nothing else names the key
        try (TransferEngine e = TransferEngine.create(base().fallback(EngineConfig.SEGMENT_NAME, "fallback").build())) {
            assertEquals("fallback", e.segmentName());
        }
        try (TransferEngine e = TransferEngine.create(base().file(json).fallback(EngineConfig.SEGMENT_NAME, "fallback")
                .build())) {
            assertEquals("from-file", e.segmentName());
        }
        try (TransferEngine e = TransferEngine.create(base().fallback(EngineConfig.SEGMENT_NAME, "fallback")
                .environment(Map.of("TENT4J_SEGMENT_NAME", "from-env")).build())) {
            assertEquals("from-env", e.segmentName());
        }
        assertTrue(rejected(base().fallback("no.such.key", "1")).getMessage().contains("no.such.key"));
        Path props = dir.resolve("engine.properties");
        Files.writeString(props, "segment.name=from-properties\n");
        try (TransferEngine e = TransferEngine.create(base().environment(Map.of("TENT4J_CONFIG", props.toString())).build())) {
            assertEquals("from-properties", e.segmentName());
        }
        assertTrue(rejected(base().file(dir.resolve("missing.json"))).getMessage().contains("missing.json"));
        assertEquals("TENT4J_TRANSPORTS_TCP_LANES", EngineConfig.environmentVariable("transports.tcp.lanes"));
    }

    @Test
    void prometheusEndpointServesTheEngineMetrics() throws Exception {
        try (TransferEngine e = TransferEngine.create(base().set(EngineConfig.METRICS_PORT, 0).build())) {
            String scrape = ((TransferEngineImpl) e).metrics().scrape();
            assertTrue(scrape.contains("tent4j_transfer_requests_total"), scrape);
        }
        try (MetricsEndpointTest.Served served = MetricsEndpointTest.served(base())) {
            TransferEngine e = served.engine();
            int port = served.port();
            HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode());
            assertTrue(r.body().contains("tent4j_transfer_bytes_total{operation=\"read\",segment=\"" + e.segmentName() + "\",transport=\"inproc\"}"), r.body());
            // control.host is loopback, so the metrics port is not open on this machine's other addresses
            InetAddress outside = NetworkInterface.networkInterfaces().filter(i -> !isLoopback(i))
                    .flatMap(NetworkInterface::inetAddresses).filter(a -> a instanceof Inet4Address).findFirst().orElse(null);
            Assumptions.assumeTrue(outside != null, "this machine has no non-loopback IPv4 address to try");
            assertThrows(ConnectException.class, () -> new Socket(outside, port).close(),
                    "metrics must bind where the control plane binds (" + outside + " reached it)");
        }
    }

    private static boolean isLoopback(NetworkInterface i) {
        try {
            return i.isLoopback() || !i.isUp();
        } catch (SocketException e) {
            return true;
        }
    }
}
