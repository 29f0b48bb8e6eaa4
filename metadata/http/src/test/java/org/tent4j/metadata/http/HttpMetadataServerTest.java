package org.tent4j.metadata.http;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MetadataStore;
import org.tent4j.testkit.metadata.WatchRecorder;
import org.tent4j.testkit.ManualClock;

@Timeout(value = 120, unit = TimeUnit.SECONDS)
class HttpMetadataServerTest {
    private static final Duration EVENT_TIMEOUT = Duration.ofSeconds(15);
    private final HttpMetadataStoreProvider provider = new HttpMetadataStoreProvider();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @TempDir
    Path dir;

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private MetadataStore open(HttpMetadataServer server) {
        return provider.open(URI.create(server.endpoint()), Map.of());
    }

    // ---------------------------------------------------------------------------------------------- Mooncake protocol

    /** Requests exactly as Mooncake's C++ client (libcurl) and its reference servers use them. */
    @Test
    void mooncakeStyleRequestsGetMooncakeAnswers() throws Exception {
        try (HttpMetadataServer server = HttpMetadataServer.start("127.0.0.1", 0)) {
            String base = "http://127.0.0.1:" + server.port() + "/metadata?key=";
            String key = "mooncake/ram/node 1+a";
            // curl_easy_escape style (%20, %2B) and form style (+ for space) must name the same key
            String curlKey = "mooncake%2Fram%2Fnode%201%2Ba";
            String formKey = URLEncoder.encode(key, StandardCharsets.UTF_8);
            String json = "{\"name\":\"node 1\",\"protocol\":\"tcp\",\"tcp_data_port\":15000}";

            HttpResponse<String> put = http.send(HttpRequest.newBuilder(URI.create(base + curlKey))
                    .header("Content-Type", "application/json")
                    .PUT(HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, put.statusCode());
            assertEquals("metadata updated", put.body());

            HttpResponse<String> get = http.send(HttpRequest.newBuilder(URI.create(base + formKey)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, get.statusCode());
            assertEquals(json, get.body());
            assertTrue(get.headers().firstValue("Content-Type").orElse("").startsWith("application/json"));

            try (MetadataStore store = open(server)) {
                assertArrayEquals(bytes(json), store.get(key).orElseThrow(), "the same key through the tent4j client");
            }

            HttpResponse<String> del = http.send(HttpRequest.newBuilder(URI.create(base + curlKey)).DELETE().build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, del.statusCode());
            assertEquals("metadata deleted", del.body());

            HttpResponse<String> missing = http.send(HttpRequest.newBuilder(URI.create(base + curlKey)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(404, missing.statusCode());
            assertEquals("metadata not found", missing.body());

            // Mooncake's Go server answers 200 to DELETE of a missing key too
            HttpResponse<String> delAgain = http.send(HttpRequest.newBuilder(URI.create(base + curlKey)).DELETE()
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, delAgain.statusCode());
            assertEquals("false", delAgain.headers().firstValue(MetadataHttpProtocol.EXISTED_HEADER).orElseThrow());
        }
    }

    @Test
    void badRequestsGetClearAnswers() throws Exception {
        try (HttpMetadataServer server = HttpMetadataServer.start("127.0.0.1", 0)) {
            String root = "http://127.0.0.1:" + server.port();
            assertEquals(400, status("GET", root + "/metadata", null));
            assertEquals(400, status("PUT", root + "/metadata?key=k", "-5"));
            assertEquals(404, status("GET", root + "/elsewhere?key=k", null));
            assertEquals(405, status("POST", root + "/metadata?key=k", null));
        }
    }

    private int status(String method, String url, String ttlHeader) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url))
                .method(method, HttpRequest.BodyPublishers.ofString("x"));
        if (ttlHeader != null) {
            b.header(MetadataHttpProtocol.TTL_HEADER, ttlHeader);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    @Test
    void longPollAnswersAtOnceOnADifferentVersionAndWith304WhenNothingChanged() throws Exception {
        try (HttpMetadataServer server = HttpMetadataServer.start("127.0.0.1", 0);
                MetadataStore store = open(server)) {
            String watch = "http://127.0.0.1:" + server.port() + "/metadata/watch?key=lp";
            HttpResponse<String> first = http.send(HttpRequest.newBuilder(URI.create(watch)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(404, first.statusCode());
            String absent = first.headers().firstValue(MetadataHttpProtocol.VERSION_HEADER).orElseThrow();

            HttpResponse<String> unchanged = http.send(HttpRequest.newBuilder(URI.create(watch + "&timeout_ms=50"
                    + "&version=" + absent)).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(304, unchanged.statusCode());

            store.put("lp", bytes("v1"), Duration.ZERO);
            HttpResponse<String> changed = http.send(HttpRequest.newBuilder(URI.create(watch + "&version=" + absent))
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, changed.statusCode());
            assertEquals("v1", changed.body());
            assertNotEquals(absent, changed.headers().firstValue(MetadataHttpProtocol.VERSION_HEADER).orElseThrow());
        }
    }

    // ---------------------------------------------------------------------------------------------- persistence

    @Test
    void restartWithTheSameDataFileLosesNothing() throws Exception {
        Path file = dir.resolve("meta.bin");
        ManualClock clock = new ManualClock();
        int port;
        String versionBefore;
        try (HttpMetadataServer server = HttpMetadataServer.builder().port(0).dataFile(file).clock(clock).start();
                MetadataStore store = open(server)) {
            port = server.port();
            store.put("keep/plain", bytes("plain"), Duration.ZERO);
            store.put("keep/long-ttl", bytes("long"), Duration.ofMinutes(10));
            store.put("keep/short-ttl", bytes("short"), Duration.ofMillis(800));
            store.put("keep/deleted", bytes("gone"), Duration.ZERO);
            assertTrue(store.delete("keep/deleted"));
            store.put("keep/ключ 🚀", new byte[] {0, 1, 2, (byte) 255}, Duration.ZERO);
            assertArrayEquals(bytes("short"), store.get("keep/short-ttl").orElseThrow(),
                    "so that only the time while the server is down can take it away");
            versionBefore = versionOf(server.port(), "keep/plain");
        }
        clock.advance(Duration.ofSeconds(1)); // the short TTL runs out while the server is down
        try (HttpMetadataServer server = HttpMetadataServer.builder().port(port).dataFile(file).clock(clock).start();
                MetadataStore store = open(server)) {
            assertArrayEquals(bytes("plain"), store.get("keep/plain").orElseThrow());
            assertArrayEquals(bytes("long"), store.get("keep/long-ttl").orElseThrow());
            assertArrayEquals(new byte[] {0, 1, 2, (byte) 255}, store.get("keep/ключ 🚀").orElseThrow());
            assertTrue(store.get("keep/short-ttl").isEmpty(), "expired while the server was down");
            assertTrue(store.get("keep/deleted").isEmpty());
            assertEquals(versionBefore, versionOf(server.port(), "keep/plain"),
                    "versions survive a restart, so watchers see no false change");
            store.put("keep/plain", bytes("newer"), Duration.ZERO);
            assertNotEquals(versionBefore, versionOf(server.port(), "keep/plain"));
            clock.advance(Duration.ofMinutes(10));
            assertTrue(store.get("keep/long-ttl").isEmpty(), "a TTL loaded from the file runs on after a restart");
            assertArrayEquals(bytes("newer"), store.get("keep/plain").orElseThrow());
        }
    }

    private String versionOf(int port, String key) throws Exception {
        HttpResponse<Void> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                + "/metadata?key=" + URLEncoder.encode(key, StandardCharsets.UTF_8))).build(),
                HttpResponse.BodyHandlers.discarding());
        return r.headers().firstValue(MetadataHttpProtocol.VERSION_HEADER).orElseThrow();
    }

    @Test
    void aDamagedDataFileIsRefusedNotSilentlyEmptied() throws Exception {
        Path file = dir.resolve("meta.bin");
        try (HttpMetadataServer server = HttpMetadataServer.builder().port(0).dataFile(file).start();
                MetadataStore store = open(server)) {
            store.put("k", bytes("v"), Duration.ZERO);
        }
        byte[] content = Files.readAllBytes(file);
        content[content.length / 2] ^= 0x5a;
        Files.write(file, content);
        UncheckedIOException e = assertThrows(UncheckedIOException.class,
                () -> HttpMetadataServer.builder().port(0).dataFile(file).start());
        assertTrue(e.getMessage().contains("damaged"), e::getMessage);
    }

    @Test
    void aWatchContinuesAcrossAServerRestart() throws Exception {
        Path file = dir.resolve("meta.bin");
        HttpMetadataServer server = HttpMetadataServer.builder().port(0).dataFile(file).start();
        int port = server.port();
        try (MetadataStore store = provider.open(URI.create(server.endpoint()), Map.of("timeout", "1s"))) {
            store.put("w/k", bytes("v1"), Duration.ZERO);
            WatchRecorder rec = new WatchRecorder();
            try (MetadataStore.Watch w = store.watch("w/k", rec)) {
                server.close();
                TransferException down = assertThrows(TransferException.class, () -> store.get("w/k"));
                assertEquals(ErrorCode.METADATA_UNAVAILABLE, down.code());
                assertTrue(down.getMessage().contains("127.0.0.1:" + port), down::getMessage);
                server = HttpMetadataServer.builder().port(port).dataFile(file).start();
                store.put("w/k", bytes("v2"), Duration.ZERO);
                rec.await("w/k", bytes("v2"), EVENT_TIMEOUT);
            }
        } finally {
            server.close();
        }
    }

    // ---------------------------------------------------------------------------------------------- client

    @Test
    void malformedUrisAreConfigErrorsWithThePasswordMasked() {
        for (String bad : List.of("http:///metadata", "etcd://h:1", "http://h:1/m?key=x", "http://u:topsecret@h:1/m#f")) {
            TransferException e = assertThrows(TransferException.class, () -> provider.open(URI.create(bad), Map.of()),
                    bad);
            assertEquals(ErrorCode.CONFIG, e.code(), e::toString);
            assertFalse(e.getMessage().contains("topsecret"), e::getMessage);
        }
    }

    @Test
    void credentialsInTheUriAreSentAsBasicAuthAndMasked() {
        try (HttpMetadataServer server = HttpMetadataServer.start("127.0.0.1", 0);
                MetadataStore store = provider.open(URI.create("http://tent:p%40ss@127.0.0.1:" + server.port()
                        + "/metadata"), Map.of())) {
            assertEquals("http://tent:***@127.0.0.1:" + server.port() + "/metadata", store.uri());
            store.put("auth/k", bytes("v"), Duration.ZERO);
            assertArrayEquals(bytes("v"), store.get("auth/k").orElseThrow());
        }
        HttpEndpoint e = HttpEndpoint.parse(URI.create("http://tent:p%40ss@h:1/metadata"));
        assertEquals("Basic dGVudDpwQHNz", e.authorization());
    }

    @Test
    void aServerOnTheRootPathWorksToo() {
        try (HttpMetadataServer server = HttpMetadataServer.builder().port(0).path("/").start();
                MetadataStore store = open(server)) {
            assertTrue(((HttpMetadataStore) store).isTent4jServer());
            store.put("root/k", bytes("v"), Duration.ZERO);
            assertArrayEquals(bytes("v"), store.get("root/k").orElseThrow());
        }
    }

    @Test
    void plainMooncakeServerWorksWithPollingWatchesAndWithoutTtl() throws Exception {
        try (PlainMooncakeServer plain = new PlainMooncakeServer();
                MetadataStore store = provider.open(URI.create(plain.endpoint()),
                        Map.of("watch-poll-interval", "100ms"))) {
            assertFalse(((HttpMetadataStore) store).isTent4jServer());
            store.put("plain/k", bytes("v1"), Duration.ZERO);
            assertArrayEquals(bytes("v1"), store.get("plain/k").orElseThrow());
            WatchRecorder rec = new WatchRecorder();
            try (MetadataStore.Watch w = store.watch("plain/k", rec)) {
                store.put("plain/k", bytes("v2"), Duration.ZERO);
                int i = rec.await("plain/k", bytes("v2"), EVENT_TIMEOUT);
                assertTrue(store.delete("plain/k"), "a 200 answer to DELETE counts as existed");
                rec.await("plain/k", null, i + 1, EVENT_TIMEOUT);
            }
            // the plain server ignores the TTL header: the put is accepted and the key stays. No waiting: the plain
            // server has no expiry to wait for, and the client keeps no timer of its own that could delete the key
            store.put("plain/ttl", bytes("stays"), Duration.ofMillis(200));
            assertArrayEquals(bytes("stays"), store.get("plain/ttl").orElseThrow());
        }
    }
}
