package org.tent4j.metadata.http;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.ConfigException;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MetadataStore;

/**
 * The metadata server over TLS with a key pair made for the test by openssl (Debian's openssl package), and the
 * OkHttp client trusting it through {@code metadata.http.ca-file}. Real sockets, real handshakes.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HttpMetadataTlsTest {
    @TempDir
    static Path keys;
    static Path cert;
    static Path key;
    static Path otherCert;

    private final HttpMetadataStoreProvider provider = new HttpMetadataStoreProvider();

    @BeforeAll
    static void makeKeyPairs() throws Exception {
        cert = keys.resolve("server.pem");
        key = keys.resolve("server.key");
        openssl(cert, key);
        otherCert = keys.resolve("other.pem");
        openssl(otherCert, keys.resolve("other.key"));
    }

    /** A self-signed certificate for 127.0.0.1 and localhost, with an unencrypted PKCS#8 key. */
    static void openssl(Path certificate, Path privateKey) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                "-subj", "/CN=tent4j-test", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                "-keyout", privateKey.toString(), "-out", certificate.toString())
                .redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "openssl failed: " + output);
    }

    private HttpMetadataServer tlsServer() {
        return HttpMetadataServer.builder().tls(cert, key).start();
    }

    @Test
    void aClientTrustingTheCaReadsWritesAndWatchesOverTls() throws Exception {
        try (HttpMetadataServer server = tlsServer();
             MetadataStore store = provider.open(URI.create(server.endpoint()),
                     Map.of("ca-file", cert.toString()))) {
            assertTrue(server.endpoint().startsWith("https://127.0.0.1:"), server.endpoint());
            store.put("tls/k", "secret".getBytes(StandardCharsets.UTF_8), Duration.ofSeconds(30));
            assertArrayEquals("secret".getBytes(StandardCharsets.UTF_8), store.get("tls/k").orElseThrow());
            assertTrue(store.delete("tls/k"));
            java.util.concurrent.CompletableFuture<byte[]> seen = new java.util.concurrent.CompletableFuture<>();
            try (MetadataStore.Watch w = store.watch("tls/w", (k, v) -> {
                if (v != null) {
                    seen.complete(v);
                }
            })) {
                store.put("tls/w", "changed".getBytes(StandardCharsets.UTF_8), Duration.ZERO);
                assertArrayEquals("changed".getBytes(StandardCharsets.UTF_8), seen.get(15, TimeUnit.SECONDS));
            }
        }
    }

    @Test
    void aClientThatDoesNotTrustTheCertificateIsRefused() {
        try (HttpMetadataServer server = tlsServer()) {
            // the JDK's default CAs do not include a self-signed test certificate
            TransferException e = assertThrows(TransferException.class,
                    () -> provider.open(URI.create(server.endpoint()), Map.of()).close());
            assertTrue(e.getMessage().contains(server.endpoint().replace("/metadata", "")), e.getMessage());
            // nor does a bundle holding another certificate
            assertThrows(TransferException.class, () -> provider.open(URI.create(server.endpoint()),
                    Map.of("ca-file", otherCert.toString())).close());
            assertEquals(0, server.size());
        }
    }

    @Test
    void plainHttpAgainstTheTlsPortGetsNoAnswer() throws Exception {
        try (HttpMetadataServer server = tlsServer();
             Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write("GET /metadata?key=k HTTP/1.1\r\nHost: x\r\n\r\n"
                    .getBytes(StandardCharsets.ISO_8859_1));
            byte[] answer = s.getInputStream().readNBytes(12);
            assertTrue(answer.length < 12 || !new String(answer, StandardCharsets.ISO_8859_1).startsWith("HTTP/1.1 200"),
                    "a plain-text request was answered in plain text");
        } catch (java.net.SocketException closed) {
            // the TLS server closing the connection is the expected outcome too
        }
    }

    @Test
    void misconfigurationIsAClearError(@TempDir Path dir) throws Exception {
        try (HttpMetadataServer server = HttpMetadataServer.start("127.0.0.1", 0)) {
            ConfigException e = assertThrows(ConfigException.class, () -> provider.open(URI.create(server.endpoint()),
                    Map.of("ca-file", cert.toString())));
            assertTrue(e.getMessage().contains("plain http"), e.getMessage());
        }
        ConfigException missing = assertThrows(ConfigException.class, () -> provider.open(
                URI.create("https://127.0.0.1:1/metadata"), Map.of("ca-file", dir.resolve("none.pem").toString())));
        assertTrue(missing.getMessage().contains("none.pem"), missing.getMessage());

        Path pkcs1 = dir.resolve("rsa.key");
        Files.writeString(pkcs1, "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n");
        UncheckedIOException bad = assertThrows(UncheckedIOException.class,
                () -> HttpMetadataServer.builder().tls(cert, pkcs1).start());
        assertTrue(bad.getMessage().contains("openssl pkcs8 -topk8"), bad.getMessage());
        UncheckedIOException notCert = assertThrows(UncheckedIOException.class,
                () -> HttpMetadataServer.builder().tls(key, key).start());
        assertTrue(notCert.getMessage().contains(key.toString()), notCert.getMessage());

    }

    @Test
    void theProviderServesBothSchemes() {
        assertEquals(List.of("http", "https"), provider.schemes());
    }
}
