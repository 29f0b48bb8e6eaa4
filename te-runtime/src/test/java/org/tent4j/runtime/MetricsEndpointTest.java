package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ServerSocket;
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

/** The Prometheus endpoint against a client that sends half a request and then nothing. */
class MetricsEndpointTest {

    @Test
    void aClientThatSendsHalfARequestNeitherStallsScrapesNorStaysConnected() throws Exception {
        // surefire sets the JDK server's request time to 5 s for this module; the engine's default is 30 s
        assertEquals("5", System.getProperty("sun.net.httpserver.maxReqTime"));
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        try (TransferEngine e = TransferEngine.create(EngineConfig.builder().environment(Map.of())
                .set(EngineConfig.CONTROL_HOST, "127.0.0.1").set(EngineConfig.METRICS_PORT, port).build());
             Socket slow = new Socket("127.0.0.1", port);
             HttpClient http = HttpClient.newHttpClient()) {
            slow.getOutputStream().write("GET /metrics HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.ISO_8859_1));
            slow.getOutputStream().flush();
            long start = System.nanoTime();

            HttpResponse<String> scrape = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
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

    private static void assertClosedByServer(Socket s) throws IOException {
        try {
            assertEquals(-1, s.getInputStream().read());
        } catch (SocketException reset) {
            // a reset is a close too
        }
    }
}
