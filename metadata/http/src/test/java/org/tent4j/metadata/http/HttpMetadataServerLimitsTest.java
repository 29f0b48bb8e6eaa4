package org.tent4j.metadata.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Everything a client decides is bounded: body size, requests and watches in flight, how long a request may take to
 * arrive, TTLs, escapes and key encoding; and a data file that fails or stalls answers instead of hanging. Real
 * sockets against the real server throughout.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class HttpMetadataServerLimitsTest {
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @TempDir
    Path dir;

    private HttpResponse<String> send(HttpRequest.Builder request) throws Exception {
        return http.send(request.timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static URI key(HttpMetadataServer server, String rawKey) {
        return URI.create(server.endpoint() + "?key=" + rawKey);
    }

    private static URI watch(HttpMetadataServer server, String rawKey, String version, long timeoutMs) {
        return URI.create(server.endpoint() + MetadataHttpProtocol.WATCH_SUFFIX + "?key=" + rawKey + "&version="
                + version + "&timeout_ms=" + timeoutMs);
    }

    /** Sends raw bytes and returns the status line (or throws when the server closed the connection). */
    private static String statusLine(Socket s, String request) throws IOException {
        OutputStream out = s.getOutputStream();
        out.write(request.getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
        InputStream in = s.getInputStream();
        StringBuilder line = new StringBuilder();
        for (int c; (c = in.read()) != -1 && c != '\n'; ) {
            line.append((char) c);
        }
        return line.toString().strip();
    }

    @Test
    void valuesLargerThanTheConfiguredLimitGet413() throws Exception {
        try (HttpMetadataServer server = HttpMetadataServer.builder().maxValueBytes(1024).start()) {
            assertEquals(200, send(HttpRequest.newBuilder(key(server, "k"))
                    .PUT(HttpRequest.BodyPublishers.ofByteArray(new byte[1024]))).statusCode());
            HttpResponse<String> big = send(HttpRequest.newBuilder(key(server, "k"))
                    .PUT(HttpRequest.BodyPublishers.ofByteArray(new byte[1025])));
            assertEquals(413, big.statusCode());
            assertTrue(big.body().contains("larger than 1024 bytes"), big.body());
            // a declared terabyte is refused from its header, before a byte of it is read
            try (Socket s = new Socket("127.0.0.1", server.port())) {
                s.setSoTimeout(10_000);
                assertEquals("HTTP/1.1 413 Request Entity Too Large", statusLine(s, "PUT /metadata?key=k HTTP/1.1\r\n"
                        + "Host: x\r\nContent-Length: 1000000000000\r\n\r\n"));
            }
            assertEquals(1024, send(HttpRequest.newBuilder(key(server, "k")).GET()).body().length());
        }
        assertEquals(1 << 20, HttpMetadataServer.DEFAULT_MAX_VALUE_BYTES);
    }

    @Test
    void badEscapesInvalidUtf8AndHugeTtlsGet400AndTheServerCarriesOn() throws Exception {
        try (HttpMetadataServer server = HttpMetadataServer.start("127.0.0.1", 0)) {
            for (String bad : List.of("%zz", "a%", "a%4", "%FF%FE", "%C3%28", "%ED%A0%80", "%C0%AF")) {
                try (Socket s = new Socket("127.0.0.1", server.port())) {
                    s.setSoTimeout(10_000);
                    assertEquals("HTTP/1.1 400 Bad Request", statusLine(s, "PUT /metadata?key=" + bad
                            + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nv"), bad);
                }
            }
            HttpResponse<String> utf = send(HttpRequest.newBuilder(key(server, "%FF")).PUT(
                    HttpRequest.BodyPublishers.ofString("v")));
            assertEquals("query parameter 'key' is not valid UTF-8 once %-decoded", utf.body());
            assertEquals(0, server.size(), "a key with a bad escape or bad UTF-8 was stored");
            for (String ttl : List.of("9223372036854775807", "99999999999999999999",
                    Long.toString(MetadataTable.MAX_TTL_MILLIS + 1), "-5")) {
                HttpResponse<String> r = send(HttpRequest.newBuilder(key(server, "t"))
                        .header(MetadataHttpProtocol.TTL_HEADER, ttl).PUT(HttpRequest.BodyPublishers.ofString("v")));
                assertEquals(400, r.statusCode(), ttl + ": " + r.body());
                assertTrue(r.body().contains(MetadataHttpProtocol.TTL_HEADER), r.body());
            }
            assertEquals(200, send(HttpRequest.newBuilder(key(server, "t"))
                    .header(MetadataHttpProtocol.TTL_HEADER, Long.toString(MetadataTable.MAX_TTL_MILLIS))
                    .PUT(HttpRequest.BodyPublishers.ofString("v"))).statusCode());
            assertEquals("v", send(HttpRequest.newBuilder(key(server, "t")).GET()).body(),
                    "a key with the longest TTL must not expire at once");
            assertEquals(200, send(HttpRequest.newBuilder(key(server, "caf%C3%A9")).PUT(
                    HttpRequest.BodyPublishers.ofString("ok"))).statusCode());
        }
    }

    @Test
    void reputtingAKeyKeepsOneExpiryAndTimedOutWatchesLeaveNothingBehind() throws Exception {
        try (HttpMetadataServer server = HttpMetadataServer.start("127.0.0.1", 0)) {
            for (int i = 0; i < 500; i++) {
                send(HttpRequest.newBuilder(key(server, "hb")).header(MetadataHttpProtocol.TTL_HEADER, "600000")
                        .PUT(HttpRequest.BodyPublishers.ofString("beat " + i)));
            }
            assertEquals(1, server.pendingExpiryCount(), "each re-put left an expiry behind");

            String version = send(HttpRequest.newBuilder(key(server, "nobody-writes-0")).GET()).headers()
                    .firstValue(MetadataHttpProtocol.VERSION_HEADER).orElseThrow();
            List<CompletableFuture<HttpResponse<String>>> polls = new ArrayList<>();
            for (int i = 0; i < 300; i++) {
                polls.add(http.sendAsync(HttpRequest.newBuilder(watch(server, "nobody-writes-" + i, version, 50))
                        .build(), HttpResponse.BodyHandlers.ofString()));
            }
            for (var p : polls) {
                assertEquals(304, p.get(30, TimeUnit.SECONDS).statusCode());
            }
            assertEquals(0, server.watchedKeyCount(), "timed-out watches left their registrations behind");
        }
    }

    @Test
    void watchesBeyondTheLimitGet503AndTheAdmittedOnesStillSeeTheChange() throws Exception {
        int limit = 200;
        int clients = 500;
        try (HttpMetadataServer server = HttpMetadataServer.builder().maxWatchers(limit).start()) {
            String version = send(HttpRequest.newBuilder(key(server, "w")).GET()).headers()
                    .firstValue(MetadataHttpProtocol.VERSION_HEADER).orElseThrow();
            AtomicInteger busy = new AtomicInteger();
            CountDownLatch refused = new CountDownLatch(clients - limit);
            List<CompletableFuture<HttpResponse<String>>> polls = new ArrayList<>();
            long before = usedHeap();
            for (int i = 0; i < clients; i++) {
                polls.add(http.sendAsync(HttpRequest.newBuilder(watch(server, "w", version, 60_000)).build(),
                        HttpResponse.BodyHandlers.ofString()).whenComplete((r, e) -> {
                            if (r != null && r.statusCode() == 503) {
                                busy.incrementAndGet();
                                refused.countDown();
                            }
                        }));
            }
            assertTrue(refused.await(60, TimeUnit.SECONDS), "expected " + (clients - limit) + " 503s, got " + busy);
            assertEquals(limit, server.watchesInProgress());
            long parkedBytes = usedHeap() - before;
            assertEquals(200, send(HttpRequest.newBuilder(key(server, "w"))
                    .PUT(HttpRequest.BodyPublishers.ofString("new"))).statusCode());
            int changed = 0;
            for (var p : polls) {
                HttpResponse<String> r = p.get(30, TimeUnit.SECONDS);
                if (r.statusCode() == 200) {
                    assertEquals("new", r.body());
                    changed++;
                }
            }
            assertEquals(limit, changed);
            assertEquals(clients - limit, busy.get());
            System.out.printf("watch flood: %d clients, %d parked, %d refused 503; heap grew by about %d KiB "
                    + "(client and server in one JVM)%n", clients, limit, busy.get(), parkedBytes >> 10);
        }
    }

    private static long usedHeap() {
        Runtime rt = Runtime.getRuntime();
        System.gc();
        return rt.totalMemory() - rt.freeMemory();
    }

    @Test
    void requestsBeyondTheSlotsAndTheQueueGet503() throws Exception {
        try (HttpMetadataServer server = HttpMetadataServer.builder().maxRequests(1, 0, Duration.ZERO).start();
             Socket slow = new Socket("127.0.0.1", server.port())) {
            slow.setSoTimeout(30_000);
            OutputStream out = slow.getOutputStream();
            out.write("PUT /metadata?key=slow HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab"
                    .getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (server.requestsInProgress() == 0) { // the slow PUT takes the one slot
                assertTrue(System.nanoTime() < deadline, "the slow PUT never took its slot");
                Thread.onSpinWait();
            }
            HttpResponse<String> r = send(HttpRequest.newBuilder(key(server, "other")).GET());
            assertEquals(503, r.statusCode(), r.body());
            assertTrue(r.body().contains("busy"), r.body());
            assertEquals("HTTP/1.1 200 OK", statusLine(slow, "cd"));
        }
    }

    @Test
    void aClientThatSendsItsRequestTooSlowlyIsDisconnected() throws Exception {
        // surefire sets sun.net.httpserver.maxReqTime=2 (seconds) for this module; the server's default is 30
        assertEquals("2", System.getProperty(HttpMetadataServer.REQUEST_TIME_PROPERTY));
        try (HttpMetadataServer server = HttpMetadataServer.start("127.0.0.1", 0);
             Socket slowHeaders = new Socket("127.0.0.1", server.port());
             Socket slowBody = new Socket("127.0.0.1", server.port())) {
            slowHeaders.setSoTimeout(20_000);
            slowBody.setSoTimeout(20_000);
            slowHeaders.getOutputStream().write("PUT /metadata?key=a HTTP/1.1\r\nHost: x\r\n".getBytes(
                    StandardCharsets.ISO_8859_1));
            slowBody.getOutputStream().write("PUT /metadata?key=b HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab"
                    .getBytes(StandardCharsets.ISO_8859_1));
            long start = System.nanoTime();
            assertClosedByServer(slowHeaders);
            assertClosedByServer(slowBody);
            long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(took < 15_000, "closing the slow clients took " + took + " ms");
            assertEquals(404, send(HttpRequest.newBuilder(key(server, "a")).GET()).statusCode());
            assertEquals(0, server.size());
        }
    }

    private static void assertClosedByServer(Socket s) throws IOException {
        try {
            assertEquals(-1, s.getInputStream().read());
        } catch (SocketException reset) {
            // a reset is a close too
        }
    }

    // ---------------------------------------------------------------------------------------------- durability

    /** A data file whose first write throws OutOfMemoryError, as a huge table's snapshot once did. */
    static final class FailingOnceFile extends SnapshotFile {
        private final AtomicInteger writes = new AtomicInteger();

        FailingOnceFile(Path file) {
            super(file);
        }

        @Override
        void write(Snapshot snapshot) throws IOException {
            if (writes.getAndIncrement() == 0) {
                throw new OutOfMemoryError("Java heap space (injected)");
            }
            super.write(snapshot);
        }
    }

    @Test
    void anOutOfMemoryErrorInTheWriterFailsThatPutAndLaterPutsStillReachTheDisk() throws Exception {
        Path file = dir.resolve("meta.bin");
        try (HttpMetadataServer server = HttpMetadataServer.builder().snapshotFile(new FailingOnceFile(file)).start()) {
            HttpResponse<String> first = send(HttpRequest.newBuilder(key(server, "a"))
                    .PUT(HttpRequest.BodyPublishers.ofString("1")));
            assertEquals(500, first.statusCode(), first.body());
            assertTrue(first.body().contains("OutOfMemoryError"), first.body());
            assertEquals(200, send(HttpRequest.newBuilder(key(server, "b"))
                    .PUT(HttpRequest.BodyPublishers.ofString("2"))).statusCode());
        }
        SnapshotFile.Snapshot onDisk = new SnapshotFile(file).read();
        assertEquals(2, onDisk.entries().size());
    }

    /** A data file whose writes wait until the test lets them go: a stuck disk. */
    static final class StalledFile extends SnapshotFile {
        final CountDownLatch release = new CountDownLatch(1);

        StalledFile(Path file) {
            super(file);
        }

        @Override
        void write(Snapshot snapshot) throws IOException {
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            super.write(snapshot);
        }
    }

    @Test
    void aStuckDiskAnswers503InsteadOfHanging() throws Exception {
        StalledFile file = new StalledFile(dir.resolve("meta.bin"));
        try (HttpMetadataServer server = HttpMetadataServer.builder().snapshotFile(file)
                .durableTimeout(Duration.ofMillis(300)).start()) {
            HttpResponse<String> r = send(HttpRequest.newBuilder(key(server, "a"))
                    .PUT(HttpRequest.BodyPublishers.ofString("1")));
            assertEquals(503, r.statusCode(), r.body());
            assertTrue(r.body().contains("not yet on disk") && r.body().contains("300 ms"), r.body());
            file.release.countDown();
            assertEquals(200, send(HttpRequest.newBuilder(key(server, "b"))
                    .PUT(HttpRequest.BodyPublishers.ofString("2"))).statusCode());
        }
    }

    /** A hostile server: answers the probe, then sends a value without end. The client stops reading at its limit. */
    @Test
    void theClientRefusesAnAnswerLargerThanItsLimit() throws Exception {
        com.sun.net.httpserver.HttpServer hostile = com.sun.net.httpserver.HttpServer.create(
                new java.net.InetSocketAddress("127.0.0.1", 0), 16);
        hostile.createContext("/metadata", ex -> {
            try (ex) {
                if (ex.getRequestURI().getRawQuery().contains("probe")) {
                    ex.sendResponseHeaders(404, -1);
                    return;
                }
                ex.sendResponseHeaders(200, 0); // chunked, no length: the client cannot refuse it up front
                byte[] chunk = new byte[1 << 20];
                try (OutputStream out = ex.getResponseBody()) {
                    for (int i = 0; i <= HttpMetadataStore.MAX_ANSWER_BYTES / chunk.length; i++) {
                        out.write(chunk);
                    }
                } catch (IOException clientStopped) {
                    // expected: the client closes the connection once it has seen enough
                }
            }
        });
        hostile.start();
        try (var store = new HttpMetadataStoreProvider().open(
                URI.create("http://127.0.0.1:" + hostile.getAddress().getPort() + "/metadata"), java.util.Map.of())) {
            org.tent4j.api.TransferException e = assertThrows(org.tent4j.api.TransferException.class,
                    () -> store.get("big"));
            assertTrue(e.getMessage().contains("larger than " + HttpMetadataStore.MAX_ANSWER_BYTES), e.getMessage());
        } finally {
            hostile.stop(0);
        }
    }

    @Test
    void limitsAreValidated() {
        assertThrows(IllegalArgumentException.class, () -> HttpMetadataServer.builder().maxValueBytes(0));
        assertThrows(IllegalArgumentException.class, () -> HttpMetadataServer.builder().maxWatchers(-1));
        assertThrows(IllegalArgumentException.class, () -> HttpMetadataServer.builder().durableTimeout(Duration.ZERO));
    }
}
