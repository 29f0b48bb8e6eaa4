package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.testkit.net.FreePorts;

/** The Prometheus endpoint against a client that sends half a request and then nothing. */
class MetricsEndpointTest {

    @Test
    void aClientThatSendsHalfARequestNeitherStallsScrapesNorStaysConnected() throws Exception {
        // surefire sets the JDK server's request time to 5 s for this module; the engine's default is 30 s
        assertEquals("5", System.getProperty("sun.net.httpserver.maxReqTime"));
        try (Served e = served(EngineConfig.builder().environment(Map.of()).set(EngineConfig.CONTROL_HOST, "127.0.0.1"));
             Socket slow = new Socket("127.0.0.1", e.port());
             HttpClient http = HttpClient.newHttpClient()) {
            slow.getOutputStream().write("GET /metrics HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.ISO_8859_1));
            slow.getOutputStream().flush();
            long start = System.nanoTime();

            HttpResponse<String> scrape = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + e.port() + "/metrics"))
                    .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, scrape.statusCode());
            // answered while the slow client still held its connection: the scrape did not wait for it to be cut
            slow.setSoTimeout(1);
            assertThrows(SocketTimeoutException.class, () -> slow.getInputStream().read(),
                    "the slow client was disconnected before the scrape was answered: scrapes waited behind it");

            slow.setSoTimeout(30_000);
            assertClosedByServer(slow);
            long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(took < 20_000, "closing the slow client took " + took + " ms");
        }
    }

    /** An engine whose metrics port the test connects to directly. */
    record Served(TransferEngine engine, int port) implements AutoCloseable {
        @Override
        public void close() {
            engine.close();
        }
    }

    /**
     * Starts an engine of {@code config} with its metrics on a free port, again on a fresh one when it was taken before
     * the engine bound it ({@link FreePorts}; the engine does not say which port a metrics port of 0 bound).
     */
    static Served served(EngineConfig.Builder config) throws IOException {
        return FreePorts.startOn(1, ports -> new Served(
                TransferEngine.create(config.set(EngineConfig.METRICS_PORT, ports[0]).build()), ports[0]));
    }

    private static void assertClosedByServer(Socket s) throws IOException {
        try {
            assertEquals(-1, s.getInputStream().read());
        } catch (SocketException reset) {
            // a reset is a close too
        }
    }
}
