package org.tent4j.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.metadata.http.HttpMetadataServer;
import org.tent4j.metadata.http.HttpMetadataStoreProvider;
import org.tent4j.spi.MetadataStore;
import org.tent4j.testkit.ChildJvm;
import org.tent4j.testkit.servers.LoopbackPorts;

import picocli.CommandLine;

class MetadataServerCommandTest {
    @TempDir
    Path dir;

    private static MetadataServerCommand parse(String... args) {
        MetadataServerCommand command = new MetadataServerCommand();
        new CommandLine(command).parseArgs(args);
        return command;
    }

    @Test
    void optionsReachTheServer() {
        try (HttpMetadataServer s = parse("--port", "0", "--host=127.0.0.1", "--data-file", dir.resolve("cli.bin").toString(),
                "--path", "/meta/").builder().start()) {
            assertTrue(s.endpoint().startsWith("http://127.0.0.1:"), s.endpoint());
            assertTrue(s.endpoint().endsWith("/meta"), s.endpoint());
            assertEquals(dir.resolve("cli.bin"), s.dataFile());
        }
    }

    @Test
    void badCommandLinesAreUsageErrors() {
        assertTrue(Tent4jCommandTest.run(2, "metadata-server", "--port")[1].contains("--port"));
        assertTrue(Tent4jCommandTest.run(2, "metadata-server", "--prot", "1")[1].contains("--prot"));
        assertTrue(Tent4jCommandTest.run(2, "metadata-server", "--port", "x")[1].contains("'x'"));
        String err = Tent4jCommandTest.run(2, "metadata-server", "--port", "0", "--tls-cert", dir.resolve("c.pem").toString())[1];
        assertTrue(err.contains("--tls-cert and --tls-key go together"), err);
    }

    @Test
    void anUnreadableCertificateIsARunErrorNamingTheFile() {
        Path missing = dir.resolve("missing-chain.pem");
        String err = Tent4jCommandTest.run(1, "metadata-server", "--host", "127.0.0.1", "--port", "0", "--tls-cert", missing.toString(),
                "--tls-key", dir.resolve("missing.key").toString())[1];
        assertTrue(err.contains("missing-chain.pem"), err);
    }

    /** The stand-alone server as an operator runs it: a separate JVM, stopped with SIGTERM, started again. */
    @Test
    void standAloneServerProcessKeepsDataAcrossSigtermAndRestart() throws Exception {
        Path file = dir.resolve("cli.bin");
        int port = LoopbackPorts.free();
        HttpMetadataStoreProvider provider = new HttpMetadataStoreProvider();
        URI uri = URI.create("http://127.0.0.1:" + port + "/metadata");
        try (ChildJvm first = server(port, file)) {
            try (MetadataStore store = provider.open(uri, Map.of())) {
                store.put("cli/k", "survives".getBytes(StandardCharsets.UTF_8), Duration.ZERO);
            }
            first.terminate(); // SIGTERM: the shutdown hook closes the server, writing the data file
        }
        try (ChildJvm second = server(port, file);
             MetadataStore store = provider.open(uri, Map.of())) {
            assertArrayEquals("survives".getBytes(StandardCharsets.UTF_8), store.get("cli/k").orElseThrow());
        }
    }

    private static ChildJvm server(int port, Path file) throws Exception {
        ChildJvm jvm = ChildJvm.builder(Tent4jCommand.class).heap("64m").args("metadata-server", "--port",
                Integer.toString(port), "--host", "127.0.0.1", "--data-file", file.toString()).start();
        jvm.awaitLine("tent4j metadata server listening on ", ChildJvm.DEFAULT_TIMEOUT);
        return jvm;
    }
}
