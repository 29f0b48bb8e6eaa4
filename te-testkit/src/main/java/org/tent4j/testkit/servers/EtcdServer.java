package org.tent4j.testkit.servers;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.tent4j.testkit.net.Host;

import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

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
    private Path tlsCertificate;
    private Path tlsKey;
    private int clientPort;
    private int peerPort;
    private String dataDirName;
    /** Where clients and the peer port listen: loopback, or a test-bed host's address. */
    private String bindHost = "127.0.0.1";
    /** The test-bed host etcd runs in, or null. */
    private Host host;

    private EtcdServer(ServerProcess process) {
        this.process = process;
    }

    /**
     * Starts etcd on free ports and waits until {@code /health} answers healthy (15 s at most).
     *
     * @return the running server; close it
     */
    public static EtcdServer launch() {
        return launch(null, null);
    }

    /**
     * As {@link #launch()}, serving clients over TLS only with this PEM certificate and key (--cert-file/--key-file).
     *
     * @param certificate the server's PEM certificate
     * @param key         its PEM private key
     * @return the running server; close it
     */
    public static EtcdServer launchWithTls(Path certificate, Path key) {
        return launch(certificate, key);
    }

    /**
     * Starts etcd inside a {@link org.tent4j.testkit.net.TestNetwork} host, listening on the host's address (etcd's own ports 2379/2380: a
     * fresh namespace has nothing else on them), and waits until its client port accepts connections from inside the
     * host. Only engines in the test network reach it; {@link #uri()} names the host's address.
     *
     * @param host the host to run it in
     * @return the running server; close it
     */
    public static EtcdServer launchIn(Host host) {
        EtcdServer server = new EtcdServer(ServerProcess.create("etcd", "etcd", APT_PACKAGE));
        server.host = host;
        server.bindHost = host.address();
        server.clientPort = 2379;
        server.peerPort = 2380;
        server.dataDirName = "data";
        return TestNetworkServers.startIn(host, server.process, server, server::startProcess, server::close);
    }

    private static EtcdServer launch(Path certificate, Path key) {
        EtcdServer server = new EtcdServer(ServerProcess.create("etcd", "etcd", APT_PACKAGE));
        server.tlsCertificate = certificate;
        server.tlsKey = key;
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
        String client = clientUrl();
        String peer = "http://" + bindHost + ":" + peerPort;
        List<String> args = new ArrayList<>(List.of(
                "--name", "tent4j",
                "--data-dir", process.workDir().resolve(dataDirName).toString(),
                "--listen-client-urls", client,
                "--advertise-client-urls", client,
                "--listen-peer-urls", peer,
                "--initial-advertise-peer-urls", peer,
                "--initial-cluster", "tent4j=" + peer,
                "--initial-cluster-state", "new",
                "--logger=zap",
                "--log-level=warn"));
        if (tlsCertificate != null) {
            args.addAll(List.of("--cert-file", tlsCertificate.toString(), "--key-file", tlsKey.toString()));
        }
        process.start(args, this::healthy, READY_TIMEOUT);
    }

    private boolean healthy() {
        if (host != null) {
            return TestNetworkServers.accepts(host, bindHost, clientPort);
        }
        try {
            HttpURLConnection c = (HttpURLConnection) URI.create(clientUrl() + "/health").toURL().openConnection();
            if (c instanceof HttpsURLConnection https) {
                // readiness only: the certificate is the one the test gave etcd
                https.setSSLSocketFactory(trustingAnything().getSocketFactory());
                https.setHostnameVerifier((host, session) -> true);
            }
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

    private static SSLContext trustingAnything() throws IOException {
        try {
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, new TrustManager[] {new X509TrustManager() {
                @Override
                public void checkClientTrusted(X509Certificate[] chain, String authType) {
                }

                @Override
                public void checkServerTrusted(X509Certificate[] chain, String authType) {
                }

                @Override
                public X509Certificate[] getAcceptedIssuers() {
                    return new X509Certificate[0];
                }
            }}, null);
            return context;
        } catch (GeneralSecurityException e) {
            throw new IOException(e);
        }
    }

    /**
     * {@code etcd://127.0.0.1:<port>} ({@code etcds://} with TLS), the URI tent4j's etcd metadata plugin takes.
     *
     * @return the URI
     */
    public String uri() {
        return (tlsCertificate == null ? "etcd" : "etcds") + "://" + bindHost + ":" + clientPort;
    }

    /**
     * {@code http://127.0.0.1:<port>} ({@code https://} with TLS), the client URL etcd itself and its tools use.
     *
     * @return the URL
     */
    public String clientUrl() {
        return (tlsCertificate == null ? "http" : "https") + "://" + bindHost + ":" + clientPort;
    }

    /**
     * The client port.
     *
     * @return the port
     */
    public int port() {
        return clientPort;
    }

    /**
     * Whether the etcd process is alive.
     *
     * @return {@code true} while it runs
     */
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

    /**
     * The last lines of etcd's log, for failure messages.
     *
     * @param lines how many
     * @return the lines
     */
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
