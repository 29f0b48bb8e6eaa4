package org.tent4j.metadata.http;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.testkit.metadata.MetadataStoreConformance;
import org.tent4j.testkit.servers.LoopbackPorts;

/** Against the embedded server with a data file, so every change also goes through the durable write path. */
class HttpMetadataStoreConformanceTest extends MetadataStoreConformance {
    private static Path dir;
    private static HttpMetadataServer server;

    @BeforeAll
    static void startServer() throws Exception {
        dir = Files.createTempDirectory("tent4j-http-conformance");
        server = HttpMetadataServer.builder().host("127.0.0.1").port(0).dataFile(dir.resolve("meta.bin")).start();
    }

    @AfterAll
    static void stopServer() throws Exception {
        if (server != null) {
            server.close();
        }
        try (var files = Files.list(dir)) {
            for (Path p : files.toList()) {
                Files.deleteIfExists(p);
            }
        }
        Files.deleteIfExists(dir);
    }

    @Override
    protected MetadataStore open() {
        return provider().open(URI.create(server.endpoint()), Map.of());
    }

    @Override
    protected MetadataStoreProvider provider() {
        return new HttpMetadataStoreProvider();
    }

    @Override
    protected URI unreachableUri() {
        return URI.create("http://127.0.0.1:" + LoopbackPorts.free() + "/metadata");
    }
}
