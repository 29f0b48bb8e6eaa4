package org.tent4j.store.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.Tier;
import org.tent4j.store.StoreClock;
import org.tent4j.store.rpc.MasterClient;
import org.tent4j.store.master.Command;
import org.tent4j.store.master.DurableLog;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.rpc.MasterServer;

/** The admin endpoints over real HTTP, and the status page rendered by headless Chromium. */
class AdminServerTest {
    private static MasterServer server;
    private static AdminServer admin;
    private static final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        server = MasterServer.start(MasterConfig.defaults(), StoreClock.system(), "127.0.0.1", 0, 0);
        admin = AdminServer.start(server, "127.0.0.1", 0);
        StoreMaster m = server.master();
        m.mount("node-a", new SegmentSpec("seg-a", "10.0.0.1:15000", "10.0.0.1", 1L << 32, 64L << 20), 1L);
        m.mount("node-b", new SegmentSpec("seg-b", "10.0.0.2:15000", "10.0.0.2", 1L << 32, 256L << 20), 1L);
        m.mount("node-b", new SegmentSpec("seg-b-disk", "10.0.0.2:15000", "10.0.0.2", 1L << 50, 1L << 30, Tier.DISK,
                "/data/store/tent4j-store-seg-b-disk.disk"), 1L);
        for (int i = 0; i < 40; i++) {
            Command.PutTicket t = m.putStart("writer", "kv/layer" + (i % 8) + "/block" + i, (1 + i % 5) << 20, ReplicateConfig.replicas(2), "10.0.0.9");
            m.putEnd("writer", "kv/layer" + (i % 8) + "/block" + i, t.putId());
        }
        try (MasterClient rpc = new MasterClient("127.0.0.1:" + server.port(), Duration.ofSeconds(5))) {
            // enough reads that the hot-key sample (one read in 32) holds block9 but for odds of about one in a million
            for (int r = 0; r < 640; r++) {
                rpc.getReplicaList("kv/layer1/block" + (r % 3 == 0 ? 1 : 9));
            }
            rpc.exists("kv/layer0/block0");
        }
    }

    @AfterAll
    static void stop() {
        if (admin != null) {
            admin.close();
        }
        if (server != null) {
            server.close();
        }
    }

    private static HttpResponse<String> get(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin.port() + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void healthKeysSegmentsAndMetrics() throws Exception {
        // a master in memory is a group of one: it always leads
        assertEquals("{\"status\":\"ok\",\"role\":\"leader\",\"objects\":40,\"segments\":3}\n", get("/health").body());
        HttpResponse<String> key = get("/key?key=kv/layer1/block1");
        assertEquals(200, key.statusCode());
        assertTrue(key.body().contains("\"state\":\"COMPLETE\"") && key.body().contains("\"segment\":\"seg-a\""), key.body());
        assertEquals(404, get("/key?key=nope").statusCode());
        assertEquals(400, get("/key?key=").statusCode());
        assertTrue(get("/segments").body().contains("\"id\":\"seg-b\""));
        assertTrue(get("/segments").body().contains("\"id\":\"seg-b-disk\",\"engineSegment\":\"10.0.0.2:15000\",\"host\":\"10.0.0.2\","
                + "\"owner\":\"node-b\",\"capacity\":1073741824,\"used\":0,\"largestFree\":1073741824,\"tier\":\"disk\"}"),
                get("/segments").body());
        assertTrue(get("/keys?limit=5").body().split(",").length == 5);
        String metrics = get("/metrics").body();
        for (String m : List.of("store_objects 40", "store_segment_used_bytes{segment=\"seg-a\",host=\"10.0.0.1\"}",
                "store_evicted_objects_total 0", "store_lease_expired_reads_total 0",
                "store_rpc_requests_total{method=\"GetReplicaList\"} 640", "store_rpc_latency_seconds_bucket{method=\"Exist\",le=\"+Inf\"} 1",
                "store_tier_capacity_bytes{tier=\"memory\"} " + (320L << 20), "store_tier_capacity_bytes{tier=\"disk\"} " + (1L << 30),
                "store_tier_used_bytes{tier=\"disk\"} 0", "store_offloads_completed_total 0", "store_offloads_duplicate_total 0",
                "store_disk_reads_total 0", "store_checksum_failures_total 0", "store_promotions_completed_total 0",
                // a master in memory always leads, and has no term
                "\nstore_master_is_leader 1\n", "\nstore_master_term 0\n")) {
            assertTrue(metrics.contains(m), "metrics lack " + m);
        }
        assertTrue(!metrics.contains("store_raft_"), "a master in memory has no log to report");
        assertEquals(404, get("/nothing").statusCode());
    }

    @Test
    void statusPageRendersInHeadlessChromium(@TempDir Path dataDir, @TempDir Path chromiumHome) throws Exception {
        Path chromium = Path.of("/usr/bin/chromium");
        assumeTrue(Files.isExecutable(chromium), "chromium is not installed (scripts/install-deps.sh installs it)");
        Path shot = Path.of("target", "store-status.png").toAbsolutePath();
        Files.deleteIfExists(shot);
        String url = "http://127.0.0.1:" + admin.port() + "/";
        // one run for the DOM and the screenshot: each start of Chromium costs seconds on a loaded box
        String dom = run(chromiumHome, chromium.toString(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--window-size=1100,1250", "--screenshot=" + shot, "--dump-dom", url);
        for (String s : List.of("tent4j store master", "10.0.0.1:15000", "10.0.0.2:15000", "Clients", "node-a", "Hot keys",
                "kv/layer1/block9", "GetReplicaList", "objects", "<th>tier</th>", "<td>disk</td>", "<td>memory</td>",
                "disk used / capacity", "Disk tier", "offloads completed", "disk reads failing their checksum")) {
            assertTrue(dom.contains(s), "rendered page lacks '" + s + "'");
        }
        assertTrue(Files.size(shot) > 10_000, "screenshot written");

        // a durable master (a group of one, a snapshot every 3 entries) adds its log's line: commits, leader changes,
        // the latest snapshot
        StoreMaster durable = new StoreMaster(DurableLog.open(MasterConfig.defaults(), dataDir, "m1", List.of(),
                new DurableLog.Settings(3, false, 60_000)), StoreClock.system());
        try (MasterServer s = MasterServer.start(durable, "127.0.0.1", 0, 0, r -> { });
                AdminServer a = AdminServer.start(s, "127.0.0.1", 0)) {
            durable.mount("node-a", new SegmentSpec("seg-a", "10.0.0.1:15000", "10.0.0.1", 1L << 32, 64L << 20), 1L);
            for (int i = 0; i < 3; i++) {
                durable.putEnd("writer", "k" + i, durable.putStart("writer", "k" + i, 4096, ReplicateConfig.replicas(1), "10.0.0.9").putId());
            }
            long commits = durable.log().metrics().commits();
            org.tent4j.testkit.Poll.until("a snapshot was taken", Duration.ofSeconds(10), Duration.ofMillis(20),
                    () -> durable.log().metrics().snapshotIndex() > 0);
            String page = run(chromiumHome, chromium.toString(), "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                    "http://127.0.0.1:" + a.port() + "/");
            for (String f : List.of("<b id=\"commits\">" + commits + "</b>", "<b id=\"leader-changes\">1</b>",
                    "<span id=\"snapshot\">at index " + durable.log().metrics().snapshotIndex() + ", ", "log from ")) {
                assertTrue(page.contains(f), "rendered page lacks '" + f + "': " + page);
            }
        }
    }

    /** Runs Chromium with {@code home} as its HOME (its profile goes there; JUnit removes the directory after the test). */
    private static String run(Path home, String... cmd) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("HOME", home.toString());
        Process p = pb.start();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "chromium finished");
        assertEquals(0, p.exitValue(), "chromium exit status");
        return new String(out, java.nio.charset.StandardCharsets.UTF_8);
    }
}
