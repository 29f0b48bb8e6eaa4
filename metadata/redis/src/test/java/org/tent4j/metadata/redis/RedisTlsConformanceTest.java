package org.tent4j.metadata.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.tent4j.api.ConfigException;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.testkit.metadata.MetadataStoreConformance;
import org.tent4j.testkit.servers.LoopbackPorts;
import org.tent4j.testkit.servers.RedisServer;

/**
 * The whole store contract over TLS: a real redis-server (Debian's build has TLS) serving only {@code --tls-port}
 * with a certificate openssl made for this test, an ACL user and password in a {@code rediss://} URI, and
 * {@code metadata.redis.ca-file} trusting that certificate. Plus the refusals: no trust, wrong host name, plain
 * {@code redis://} to a TLS port, a CA file on a plain URI.
 */
class RedisTlsConformanceTest extends MetadataStoreConformance {
    private static final String PASSWORD = "tls-Pa55";
    private static Path keys;
    private static Path cert;
    private static RedisServer redis;

    @BeforeAll
    static void startRedis() throws Exception {
        keys = Files.createTempDirectory("tent4j-redis-tls");
        cert = keys.resolve("redis.pem");
        openssl(keys, "redis", "IP:127.0.0.1,DNS:localhost");
        redis = RedisServer.builder().user("tent4j", PASSWORD).tls(cert, keys.resolve("redis.key")).launch();
    }

    @AfterAll
    static void stopRedis() throws IOException {
        if (redis != null) {
            redis.close();
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

    /** A self-signed certificate {@code <name>.pem} with key {@code <name>.key} for the subject alternative names. */
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
        return provider().open(URI.create(redis.uriWithCredentials()), Map.of("ca-file", cert.toString()));
    }

    @Override
    protected MetadataStoreProvider provider() {
        return new RedisMetadataStoreProvider();
    }

    @Override
    protected URI unreachableUri() {
        return URI.create("rediss://tent4j:" + PASSWORD + "@127.0.0.1:" + LoopbackPorts.free());
    }

    @Override
    protected String secret() {
        return PASSWORD;
    }

    @Test
    void theUriSaysTls() {
        assertTrue(redis.uriWithCredentials().startsWith("rediss://"), redis.uriWithCredentials());
        try (MetadataStore store = open()) {
            assertTrue(store.uri().startsWith("rediss://tent4j:***@127.0.0.1:"), store.uri());
        }
    }

    @Test
    void aClientThatDoesNotTrustTheServerIsRefused() throws Exception {
        URI uri = URI.create(redis.uriWithCredentials());
        // the JDK's CAs do not include the test's self-signed certificate
        assertThrows(TransferException.class, () -> provider().open(uri, Map.of()).close());
        // a certificate for another host name, even when trusted, is refused: the client checks the name
        openssl(keys, "elsewhere", "DNS:elsewhere.example");
        Path other = keys.resolve("elsewhere.pem");
        try (RedisServer wrongName = RedisServer.builder().user("tent4j", PASSWORD)
                .tls(other, keys.resolve("elsewhere.key")).launch()) {
            TransferException e = assertThrows(TransferException.class, () -> provider().open(
                    URI.create(wrongName.uriWithCredentials()), Map.of("ca-file", other.toString())).close());
            assertTrue(e.getMessage().contains("rediss://tent4j:***@127.0.0.1:" + wrongName.port()), e.getMessage());
            assertTrue(!e.getMessage().contains(PASSWORD), e.getMessage());
        }
    }

    @Test
    void plainRedisToTheTlsPortFails() {
        URI plain = URI.create(redis.uriWithCredentials().replace("rediss://", "redis://"));
        assertThrows(TransferException.class, () -> provider().open(plain, Map.of()).close());
    }

    @Test
    void aCaFileOnAPlainUriIsAConfigError() {
        ConfigException e = assertThrows(ConfigException.class, () -> provider().open(
                URI.create("redis://127.0.0.1:1"), Map.of("ca-file", cert.toString())));
        assertTrue(e.getMessage().contains("rediss://"), e.getMessage());
        ConfigException missing = assertThrows(ConfigException.class, () -> provider().open(
                URI.create("rediss://127.0.0.1:1"), Map.of("ca-file", "/nonexistent/ca.pem")));
        assertTrue(missing.getMessage().contains("/nonexistent/ca.pem"), missing.getMessage());
    }
}
