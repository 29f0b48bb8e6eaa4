package org.tent4j.metadata.etcd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.tent4j.api.ConfigException;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.testkit.metadata.MetadataStoreConformance;
import org.tent4j.testkit.servers.EtcdServer;
import org.tent4j.testkit.servers.LoopbackPorts;

/**
 * The whole store contract over TLS: a real etcd serving clients only on https (--cert-file/--key-file) with a
 * certificate openssl made for this test, an {@code etcds://} URI and {@code metadata.etcd.ca-file} trusting it.
 * Plus credentials over TLS and the refusals: no trust, wrong host name, a CA file on a plain URI.
 */
class EtcdTlsConformanceTest extends MetadataStoreConformance {
    private static Path keys;
    private static Path cert;
    private static EtcdServer etcd;

    @BeforeAll
    static void startEtcd() throws Exception {
        keys = Files.createTempDirectory("tent4j-etcd-tls");
        cert = keys.resolve("etcd.pem");
        openssl(keys, "etcd", "IP:127.0.0.1,DNS:localhost");
        etcd = EtcdServer.launchWithTls(cert, keys.resolve("etcd.key"));
        new EtcdMetadataStoreProvider().open(URI.create(etcd.uri()),
                Map.of("connect-timeout", "60s", "ca-file", cert.toString())).close();
    }

    @AfterAll
    static void stopEtcd() throws IOException {
        if (etcd != null) {
            etcd.close();
        }
        if (keys != null) {
            try (var files = Files.list(keys)) {
                for (Path p : files.toList()) {
                    Files.delete(p);
                }
            }
            Files.delete(keys);
        }
    }

    static void openssl(Path dir, String name, String altNames) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                "-subj", "/CN=" + name, "-addext", "subjectAltName=" + altNames,
                "-keyout", dir.resolve(name + ".key").toString(), "-out", dir.resolve(name + ".pem").toString())
                .redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "openssl failed: " + output);
    }

    @Override
    protected MetadataStore open() {
        return provider().open(URI.create(etcd.uri()), Map.of("ca-file", cert.toString()));
    }

    @Override
    protected MetadataStoreProvider provider() {
        return new EtcdMetadataStoreProvider();
    }

    @Override
    protected URI unreachableUri() {
        return URI.create("etcds://127.0.0.1:" + LoopbackPorts.free());
    }

    @Test
    void theAddressSaysTls() {
        EtcdAddress a = EtcdAddress.parse(URI.create("etcds://u:p@h1:1,h2"));
        assertTrue(a.tls());
        assertEquals(java.util.List.of("https://h1:1", "https://h2:2379"), a.endpoints());
        assertEquals("etcds://u:***@h1:1,h2", a.masked());
    }

    @Test
    void aClientThatDoesNotTrustTheServerIsRefused() throws Exception {
        assertThrows(TransferException.class, () -> provider().open(URI.create(etcd.uri()),
                Map.of("connect-timeout", "3s")).close());
        openssl(keys, "elsewhere", "DNS:elsewhere.example");
        Path other = keys.resolve("elsewhere.pem");
        try (EtcdServer wrongName = EtcdServer.launchWithTls(other, keys.resolve("elsewhere.key"))) {
            TransferException e = assertThrows(TransferException.class, () -> provider().open(
                    URI.create(wrongName.uri()), Map.of("ca-file", other.toString(), "connect-timeout", "3s")).close());
            assertTrue(e.getMessage().contains("etcds://127.0.0.1:" + wrongName.port()), e.getMessage());
        }
    }

    @Test
    void credentialsTravelOverTls() throws Exception {
        try (EtcdServer secured = EtcdServer.launchWithTls(cert, keys.resolve("etcd.key"))) {
            try (Client raw = Client.builder().endpoints(secured.clientUrl())
                    .sslContext(b -> b.trustManager(cert.toFile())).build()) {
                ByteSequence root = ByteSequence.from("root", StandardCharsets.UTF_8);
                raw.getAuthClient().userAdd(root, ByteSequence.from("s3cret", StandardCharsets.UTF_8))
                        .get(5, TimeUnit.SECONDS);
                raw.getAuthClient().roleAdd(root).get(5, TimeUnit.SECONDS);
                raw.getAuthClient().userGrantRole(root, root).get(5, TimeUnit.SECONDS);
                raw.getAuthClient().authEnable().get(5, TimeUnit.SECONDS);
            }
            String good = "etcds://root:s3cret@127.0.0.1:" + secured.port();
            try (MetadataStore store = provider().open(URI.create(good), Map.of("ca-file", cert.toString()))) {
                assertEquals("etcds://root:***@127.0.0.1:" + secured.port(), store.uri());
                store.put("auth/k", "v".getBytes(StandardCharsets.UTF_8), Duration.ZERO);
                assertArrayEquals("v".getBytes(StandardCharsets.UTF_8), store.get("auth/k").orElseThrow());
            }
            TransferException e = assertThrows(TransferException.class, () -> provider().open(
                    URI.create("etcds://root:wrong-pw@127.0.0.1:" + secured.port()),
                    Map.of("ca-file", cert.toString(), "connect-timeout", "3s")));
            assertFalse(e.getMessage().contains("wrong-pw"), e.getMessage());
        }
    }

    @Test
    void aCaFileOnAPlainUriIsAConfigError() {
        ConfigException e = assertThrows(ConfigException.class, () -> provider().open(
                URI.create("etcd://127.0.0.1:1"), Map.of("ca-file", cert.toString())));
        assertTrue(e.getMessage().contains("etcds://"), e.getMessage());
        ConfigException missing = assertThrows(ConfigException.class, () -> provider().open(
                URI.create("etcds://127.0.0.1:1"), Map.of("ca-file", "/nonexistent/ca.pem")));
        assertTrue(missing.getMessage().contains("/nonexistent/ca.pem"), missing.getMessage());
    }
}
