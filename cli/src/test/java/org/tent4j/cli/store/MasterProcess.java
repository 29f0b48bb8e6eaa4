package org.tent4j.cli.store;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

import org.tent4j.cli.Tent4jCommand;
import org.tent4j.testkit.ChildJvm;

/**
 * A {@code tent4j store master} in its own JVM on loopback with ports of its choosing, as the process tests run it:
 * its RPC address, its admin pages and its Prometheus samples. Closing it stops it by SIGTERM (it reads no stdin).
 */
final class MasterProcess implements AutoCloseable {
    final ChildJvm jvm;
    /** {@code 127.0.0.1:<rpc port>}, what clients are given. */
    final String address;
    /** {@code http://127.0.0.1:<admin port>}. */
    final String admin;
    private final HttpClient http = HttpClient.newHttpClient();

    /** Starts a master with these options besides its loopback host and free ports, and waits until it listens. */
    MasterProcess(String... options) throws IOException, InterruptedException {
        String[] fixed = {"store", "master", "--host", "127.0.0.1", "--port", "0", "--admin-port", "0"};
        String[] args = java.util.Arrays.copyOf(fixed, fixed.length + options.length);
        System.arraycopy(options, 0, args, fixed.length, options.length);
        jvm = ChildJvm.start(Tent4jCommand.class, args);
        try {
            String[] listening = jvm.awaitLine("LISTENING ", ChildJvm.DEFAULT_TIMEOUT).split(" ");
            address = "127.0.0.1:" + listening[1];
            admin = "http://127.0.0.1:" + listening[2];
        } catch (IOException e) {
            jvm.kill();
            throw e;
        }
    }

    /** The body of an admin page ({@code /metrics}, {@code /clients}, {@code /key?key=...}). */
    String get(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create(admin + path)).build(), HttpResponse.BodyHandlers.ofString()).body();
    }

    /** The value of an unlabelled sample, or of one given with its labels ({@code name{label="v"}}). */
    long metric(String name) throws IOException, InterruptedException {
        return get("/metrics").lines().filter(l -> l.startsWith(name + " "))
                .mapToLong(l -> Long.parseLong(l.substring(name.length() + 1))).findFirst()
                .orElseThrow(() -> new AssertionError("no metric " + name + " at " + admin));
    }

    @Override
    public void close() throws InterruptedException {
        http.close();
        jvm.terminate();
    }
}
