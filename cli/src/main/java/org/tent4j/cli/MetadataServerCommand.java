package org.tent4j.cli;

import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.concurrent.Callable;

import org.tent4j.metadata.http.HttpMetadataServer;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code tent4j metadata-server}: the HTTP metadata server of module metadata-http, run until the process is
 * terminated (SIGTERM / Ctrl-C close it cleanly, writing the data file).
 */
@Command(name = "metadata-server", mixinStandardHelpOptions = true,
        description = {"Runs the Mooncake-compatible HTTP metadata server (GET/PUT/DELETE <path>?key=K) with TTL and "
                + "watch.", "Prints 'tent4j metadata server listening on <endpoint>' once serving."})
public final class MetadataServerCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--host", defaultValue = "0.0.0.0", paramLabel = "ADDRESS",
            description = "Address to listen on. Default: ${DEFAULT-VALUE} (every interface).")
    String host;

    @Option(names = "--port", defaultValue = "8080", paramLabel = "PORT",
            description = "Port to listen on; 0 picks a free one. Default: ${DEFAULT-VALUE}.")
    int port;

    @Option(names = {"--data-file", "--data_file"}, paramLabel = "FILE",
            description = "Keeps every key in this file, written before each change is acknowledged (loaded at start).")
    Path dataFile;

    @Option(names = "--path", paramLabel = "PATH", description = "Path of the endpoint. Default: /metadata.")
    String path;

    @Option(names = {"--tls-cert", "--tls_cert"}, paramLabel = "CHAIN.pem",
            description = "Serve https:// with this PEM certificate chain (server certificate first); needs --tls-key.")
    Path tlsCert;

    @Option(names = {"--tls-key", "--tls_key"}, paramLabel = "KEY.pem",
            description = "The unencrypted PKCS#8 PEM private key for --tls-cert.")
    Path tlsKey;

    @Option(names = {"--max-value-bytes", "--max_value_bytes"}, paramLabel = "BYTES",
            description = "Largest value a PUT may carry; larger ones are answered 413. Default: 1048576.")
    Integer maxValueBytes;

    /** The server these options describe, not started; a bad combination is an {@link IllegalArgumentException}. */
    HttpMetadataServer.Builder builder() {
        if ((tlsCert == null) != (tlsKey == null)) {
            throw new IllegalArgumentException("--tls-cert and --tls-key go together");
        }
        HttpMetadataServer.Builder b = HttpMetadataServer.builder().host(host).port(port).dataFile(dataFile);
        if (path != null) {
            b.path(path);
        }
        if (tlsCert != null) {
            b.tls(tlsCert, tlsKey);
        }
        if (maxValueBytes != null) {
            b.maxValueBytes(maxValueBytes);
        }
        return b;
    }

    @Override
    public Integer call() throws InterruptedException {
        HttpMetadataServer server;
        try {
            server = builder().start();
        } catch (IllegalArgumentException e) {
            spec.commandLine().getErr().println("tent4j metadata-server: " + e.getMessage());
            return 2;
        } catch (UncheckedIOException e) {
            spec.commandLine().getErr().println("tent4j metadata-server: " + e.getMessage());
            return 1;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(server::close, "tent4j-metadata-server-shutdown"));
        spec.commandLine().getOut().println("tent4j metadata server listening on " + server.endpoint()
                + (server.dataFile() == null ? " (in memory only)" : " (data file " + server.dataFile().toAbsolutePath() + ")"));
        spec.commandLine().getOut().flush();
        server.awaitClose();
        return 0;
    }
}
