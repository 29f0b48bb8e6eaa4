package org.tent4j.testkit.servers;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

/**
 * A real single-member etcd ({@code /usr/bin/etcd}, Debian package {@code etcd-server}) on free loopback ports with
 * its own temp data dir. {@link #stop()} and {@link #restart()} keep the data dir and the ports, as a real restart
 * would; {@link #close()} kills the process and deletes the dir.
 *
 * <p>Lease TTLs below etcd's minimum (2 s with the default 100 ms heartbeat and 1 s election timeout) are raised to it
 * by etcd itself.
 */
public final class EtcdServer implements AutoCloseable {
    /** Debian package that provides {@code /usr/bin/etcd}. */
    public static final String APT_PACKAGE = "etcd-server";
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(15);
    private static final int BIND_ATTEMPTS = 3;

    private final ServerProcess process;
    private int clientPort;
    private int peerPort;
    private String dataDirName;

    private EtcdServer(ServerProcess process) {
        this.process = process;
    }

    /** Starts etcd on free ports and waits until {@code /health} answers healthy (15 s at most). */
    public static EtcdServer launch() {
        EtcdServer server = new EtcdServer(ServerProcess.create("etcd", "etcd", APT_PACKAGE));
        try {
            for (int attempt = 1; ; attempt++) {
                server.clientPort = LoopbackPorts.free();
                server.peerPort = LoopbackPorts.free();
                // a failed bind may leave a member with the old peer URL in the data dir: each attempt starts afresh
                server.dataDirName = "data-" + attempt;
                try {
                    server.startProcess();
                    return server;
                } catch (ServerProcess.ServerStartException e) {
                    // another process took a port between probing and binding: try fresh ones
                    if (!e.portInUse() || attempt >= BIND_ATTEMPTS) {
                        throw e;
                    }
                }
            }
        } catch (RuntimeException e) {
            server.close();
            throw e;
        }
    }

    private void startProcess() {
        String client = "http://127.0.0.1:" + clientPort;
        String peer = "http://127.0.0.1:" + peerPort;
        List<String> args = List.of(
                "--name", "tent4j",
                "--data-dir", process.workDir().resolve(dataDirName).toString(),
                "--listen-client-urls", client,
                "--advertise-client-urls", client,
                "--listen-peer-urls", peer,
                "--initial-advertise-peer-urls", peer,
                "--initial-cluster", "tent4j=" + peer,
                "--initial-cluster-state", "new",
                "--logger=zap",
                "--log-level=warn");
        process.start(args, this::healthy, READY_TIMEOUT);
    }

    private boolean healthy() {
        try {
            HttpURLConnection c = (HttpURLConnection) URI.create(clientUrl() + "/health").toURL().openConnection();
            c.setConnectTimeout(500);
            c.setReadTimeout(1000);
            try {
                if (c.getResponseCode() != 200) {
                    return false;
                }
                try (InputStream in = c.getInputStream()) {
                    String body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
                    return body.contains("\"health\":\"true\"");
                }
            } finally {
                c.disconnect();
            }
        } catch (IOException e) {
            return false;
        }
    }

    /** {@code etcd://127.0.0.1:<port>}, the URI tent4j's etcd metadata plugin takes. */
    public String uri() {
        return "etcd://127.0.0.1:" + clientPort;
    }

    /** {@code http://127.0.0.1:<port>}, the client URL etcd itself and its tools use. */
    public String clientUrl() {
        return "http://127.0.0.1:" + clientPort;
    }

    public int port() {
        return clientPort;
    }

    public boolean isRunning() {
        return process.isAlive();
    }

    /** Graceful stop (SIGTERM); the data dir and ports are kept for {@link #restart()}. */
    public void stop() {
        process.stop(Duration.ofSeconds(10));
    }

    /** Crash (SIGKILL); the data dir and ports are kept for {@link #restart()}. */
    public void kill() {
        process.kill();
    }

    /**
     * Stops etcd if it runs and starts it again on the same ports with the same data dir, so every key written before
     * is still there. Fails if another process took one of the ports meanwhile.
     */
    public void restart() {
        if (process.isAlive()) {
            stop();
        }
        startProcess();
    }

    /** The last lines of etcd's log, for failure messages. */
    public String logTail(int lines) {
        return process.logTail(lines);
    }

    /** Kills etcd and deletes its data dir. */
    @Override
    public void close() {
        process.close();
    }

    @Override
    public String toString() {
        return "EtcdServer[" + uri() + ", pid " + process.pid() + "]";
    }
}
