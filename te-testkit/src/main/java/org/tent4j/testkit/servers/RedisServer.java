package org.tent4j.testkit.servers;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.tent4j.testkit.net.Host;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

/**
 * A real Redis ({@code /usr/bin/redis-server}, Debian package {@code redis-server}) on a free loopback port.
 * By default it persists nothing ({@code --save '' --appendonly no}), so {@link #restart()} loses every key, as the
 * real server configured that way would; {@link Builder#appendOnly()} makes it keep data across restarts.
 */
public final class RedisServer implements AutoCloseable {
    /** Debian package that provides {@code /usr/bin/redis-server}. */
    public static final String APT_PACKAGE = "redis-server";
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(15);
    private static final int BIND_ATTEMPTS = 3;

    private final ServerProcess process;
    private final String user;
    private final String password;
    private final boolean appendOnly;
    private final boolean configCommandDisabled;
    private final Path tlsCertificate;
    private final Path tlsKey;
    /** The test-bed host Redis runs in, or null; and the address it listens on. */
    private final Host host;
    private final String bindHost;
    private int port;

    private RedisServer(ServerProcess process, Builder b) {
        this.process = process;
        this.user = b.user;
        this.password = b.password;
        this.appendOnly = b.appendOnly;
        this.configCommandDisabled = b.configCommandDisabled;
        this.tlsCertificate = b.tlsCertificate;
        this.tlsKey = b.tlsKey;
        this.host = b.host;
        this.bindHost = b.host == null ? "127.0.0.1" : b.host.address();
    }

    /**
     * Starts a Redis without authentication and without persistence.
     *
     * @return the running server; close it
     */
    public static RedisServer launch() {
        return builder().launch();
    }

    /**
     * A builder for a Redis with options (TLS, a password, an ACL user, persistence).
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    private void startProcess() {
        List<String> args = new ArrayList<>(List.of(
                "--bind", bindHost,
                "--port", tlsCertificate == null ? Integer.toString(port) : "0",
                "--dir", process.workDir().toString(),
                "--daemonize", "no",
                // in a test-bed host, clients come from other hosts' addresses, which protected mode refuses
                // without a password; the test network reaches nothing outside it
                "--protected-mode", host == null ? "yes" : "no",
                "--save", "",
                "--logfile", "",
                "--loglevel", "warning"));
        if (appendOnly) {
            args.addAll(List.of("--appendonly", "yes", "--appendfsync", "always"));
        } else {
            args.addAll(List.of("--appendonly", "no"));
        }
        if (user != null) {
            // the named user gets everything; the default user is switched off so nothing works unauthenticated
            args.addAll(List.of("--user", user, "on", ">" + password, "~*", "&*", "+@all"));
            args.addAll(List.of("--user", "default", "off"));
        } else if (password != null) {
            args.addAll(List.of("--requirepass", password));
        }
        if (tlsCertificate != null) {
            // TLS only: the plain port is off, clients need TLS (no client certificates)
            args.addAll(List.of("--tls-port", Integer.toString(port), "--tls-cert-file", tlsCertificate.toString(),
                    "--tls-key-file", tlsKey.toString(), "--tls-ca-cert-file", tlsCertificate.toString(),
                    "--tls-auth-clients", "no"));
        }
        if (configCommandDisabled) {
            // as managed Redis services do: clients cannot change server settings
            args.addAll(List.of("--rename-command", "CONFIG", ""));
        }
        process.start(args, this::answersPing, READY_TIMEOUT);
    }

    /** Ready once it answers PING with PONG, or with NOAUTH when a password is required (it is not loading then). */
    private boolean answersPing() {
        if (host != null) {
            return TestNetworkServers.accepts(host, bindHost, port);
        }
        Socket plain = new Socket();
        try {
            plain.connect(new InetSocketAddress("127.0.0.1", port), 500);
            // a TLS socket layered on the plain one closes it too (autoClose)
            return answersPing(tlsCertificate == null ? plain
                    : trustingAnything().getSocketFactory().createSocket(plain, "127.0.0.1", port, true));
        } catch (IOException e) {
            try {
                plain.close();
            } catch (IOException ignored) {
                // nothing to release beyond the socket
            }
            return false;
        }
    }

    private static boolean answersPing(Socket s) {
        try (s) {
            s.setSoTimeout(1000);
            OutputStream out = s.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            byte[] buf = new byte[64];
            int n = in.read(buf);
            if (n <= 0) {
                return false;
            }
            String reply = new String(buf, 0, n, StandardCharsets.US_ASCII);
            return reply.startsWith("+PONG") || reply.startsWith("-NOAUTH");
        } catch (IOException e) {
            return false;
        }
    }

    /** Readiness only: the server's own certificate is what the test gave it. */
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
     * {@code redis://127.0.0.1:<port>} ({@code rediss://} with TLS), without credentials.
     *
     * @return the URI
     */
    public String uri() {
        return scheme() + "://" + bindHost + ":" + port;
    }

    private String scheme() {
        return tlsCertificate == null ? "redis" : "rediss";
    }

    /**
     * The URI with the credentials this server requires: {@code redis://user:password@127.0.0.1:<port>} or
     * {@code redis://:password@127.0.0.1:<port>}; the same as {@link #uri()} without authentication.
     *
     * @return the URI
     */
    public String uriWithCredentials() {
        if (password == null) {
            return uri();
        }
        String u = user == null ? "" : encode(user);
        return scheme() + "://" + u + ":" + encode(password) + "@" + bindHost + ":" + port;
    }

    private static String encode(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    /**
     * The port it listens on.
     *
     * @return the port
     */
    public int port() {
        return port;
    }

    /**
     * The user name clients authenticate as, or {@code null} for the default user.
     *
     * @return the user, or {@code null}
     */
    public String user() {
        return user;
    }

    /**
     * The password clients need, or {@code null}.
     *
     * @return the password, or {@code null}
     */
    public String password() {
        return password;
    }

    /**
     * Whether the Redis process is alive.
     *
     * @return {@code true} while it runs
     */
    public boolean isRunning() {
        return process.isAlive();
    }

    /** Graceful stop (SIGTERM); the port is kept for {@link #restart()}. */
    public void stop() {
        process.stop(Duration.ofSeconds(10));
    }

    /** Crash (SIGKILL); the port is kept for {@link #restart()}. */
    public void kill() {
        process.kill();
    }

    /**
     * Stops Redis if it runs and starts it again on the same port. Without {@link Builder#appendOnly()} every key is
     * gone afterwards, and so is any {@code CONFIG SET} a client made.
     */
    public void restart() {
        if (process.isAlive()) {
            stop();
        }
        startProcess();
    }

    /**
     * The last lines of Redis's log, for failure messages.
     *
     * @param lines how many
     * @return the lines
     */
    public String logTail(int lines) {
        return process.logTail(lines);
    }

    /** Kills Redis and deletes its dir. */
    @Override
    public void close() {
        process.close();
    }

    @Override
    public String toString() {
        return "RedisServer[" + uri() + ", pid " + process.pid() + "]";
    }

    /**
     * Says how to start a {@link RedisServer}; {@link #launch()} starts it.
     */
    public static final class Builder {
        private String user;
        private String password;
        private boolean appendOnly;
        private boolean configCommandDisabled;
        private Path tlsCertificate;
        private Path tlsKey;
        private Host host;

        private Builder() {
        }

        /**
         * Serves TLS only, with this PEM certificate and key (no client certificates required).
         *
         * @param certificate the server's PEM certificate
         * @param key         its PEM private key
         * @return this builder
         */
        public Builder tls(Path certificate, Path key) {
            this.tlsCertificate = certificate;
            this.tlsKey = key;
            return this;
        }

        /**
         * Requires {@code AUTH password} (of the default user).
         *
         * @param password the password
         * @return this builder
         */
        public Builder password(String password) {
            this.password = password;
            this.user = null;
            return this;
        }

        /**
         * Requires {@code AUTH user password} (an ACL user with all permissions; the default user is off).
         *
         * @param user     the ACL user's name
         * @param password its password
         * @return this builder
         */
        public Builder user(String user, String password) {
            this.user = user;
            this.password = password;
            return this;
        }

        /**
         * Keeps data across {@link #restart()} with an append-only file fsynced on every write.
         *
         * @return this builder
         */
        public Builder appendOnly() {
            this.appendOnly = true;
            return this;
        }

        /**
         * Renames CONFIG away, as managed Redis services do, so clients cannot enable keyspace notifications.
         *
         * @return this builder
         */
        public Builder configCommandDisabled() {
            this.configCommandDisabled = true;
            return this;
        }

        /**
         * Runs Redis inside a {@link org.tent4j.testkit.net.TestNetwork} host, listening on the host's address at
         * Redis's own port 6379 (a fresh namespace has nothing else there); only engines in the test network reach it.
         *
         * @param host the host to run it in
         * @return this builder
         */
        public Builder in(Host host) {
            this.host = host;
            return this;
        }

        /**
         * Starts Redis on a free port and waits until it answers (15 s at most).
         *
         * @return the running server; close it
         */
        public RedisServer launch() {
            RedisServer server = new RedisServer(ServerProcess.create("redis", "redis-server", APT_PACKAGE), this);
            if (host != null) {
                server.port = 6379;
                return TestNetworkServers.startIn(host, server.process, server, server::startProcess, server::close);
            }
            try {
                for (int attempt = 1; ; attempt++) {
                    server.port = LoopbackPorts.free();
                    try {
                        server.startProcess();
                        return server;
                    } catch (ServerProcess.ServerStartException e) {
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
    }
}
