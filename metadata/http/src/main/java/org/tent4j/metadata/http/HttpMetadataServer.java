package org.tent4j.metadata.http;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An HTTP metadata server that Mooncake engines and tent4j's {@code http://} metadata store can share: Mooncake's
 * {@code GET|PUT|DELETE <path>?key=..} with the same 200/404 answers and bodies, plus TTLs and long-poll watches (see
 * {@link MetadataHttpProtocol}). Keys live in memory; with a data file every change is on disk before it is
 * acknowledged, and a restart with the same file loses nothing (keys whose TTL ran out meanwhile are gone).
 *
 * <p>Embedded: {@code HttpMetadataServer.start("127.0.0.1", 0)} (port 0 picks a free one), {@link #endpoint()} for
 * the URI clients use, {@link #close()} to stop. Stand-alone: {@code java -cp ... org.tent4j.metadata.http.HttpMetadataServer
 * --port 8080 [--host 0.0.0.0] [--data-file meta.bin] [--path /metadata]}.
 */
public final class HttpMetadataServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HttpMetadataServer.class);
    /** Largest value accepted by PUT; etcd's own limit is 1.5 MiB, descriptors are a few KiB. */
    public static final int MAX_VALUE_BYTES = 64 << 20;
    private static final long DEFAULT_WATCH_TIMEOUT_MS = 30_000;
    private static final long MAX_WATCH_TIMEOUT_MS = 300_000;

    private final HttpServer server;
    private final ExecutorService executor;
    private final MetadataTable table;
    private final String basePath;
    private final String host;
    private final Path dataFile;
    private final CountDownLatch closed = new CountDownLatch(1);
    private volatile boolean closing;

    private HttpMetadataServer(Builder b) throws IOException {
        this.basePath = normalize(b.path);
        this.host = b.host;
        this.dataFile = b.dataFile;
        this.table = new MetadataTable(b.dataFile == null ? null : new SnapshotFile(b.dataFile));
        try {
            this.server = HttpServer.create(new InetSocketAddress(InetAddress.getByName(b.host), b.port), 128);
        } catch (IOException e) {
            table.close();
            throw new IOException("cannot listen on " + b.host + ":" + b.port + ": " + e.getMessage(), e);
        }
        // long polls park their thread for up to the watch timeout: virtual threads make that cheap
        this.executor = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("tent4j-metadata-http-", 0)
                .factory());
        server.setExecutor(executor);
        server.createContext("/", this::handle);
        server.start();
        LOG.info("metadata server listening on {}{}", endpoint(),
                dataFile == null ? " (in memory only)" : " with data file " + dataFile.toAbsolutePath());
    }

    /** Starts a server on {@code host:port} (port 0 = a free one) serving {@value MetadataHttpProtocol#DEFAULT_PATH}. */
    public static HttpMetadataServer start(String host, int port) {
        return builder().host(host).port(port).start();
    }

    public static Builder builder() {
        return new Builder();
    }

    private static String normalize(String path) {
        String p = path == null || path.isBlank() ? "/" : path.strip();
        if (!p.startsWith("/")) {
            p = "/" + p;
        }
        while (p.length() > 1 && p.endsWith("/")) {
            p = p.substring(0, p.length() - 1);
        }
        return p;
    }

    public int port() {
        return server.getAddress().getPort();
    }

    public String host() {
        return host;
    }

    /** The data file, or {@code null} when the server keeps data in memory only. */
    public Path dataFile() {
        return dataFile;
    }

    /** The URI clients use, e.g. {@code http://127.0.0.1:8080/metadata} (a wildcard host shows as 127.0.0.1). */
    public String endpoint() {
        String h = host;
        if (h.equals("0.0.0.0") || h.equals("::") || h.equals("[::]")) {
            h = "127.0.0.1";
        } else if (h.contains(":") && !h.startsWith("[")) {
            h = "[" + h + "]";
        }
        return "http://" + h + ":" + port() + basePath;
    }

    /** Number of keys held now. */
    public int size() {
        return table.size();
    }

    // ---------------------------------------------------------------------------------------------- HTTP

    private void handle(HttpExchange ex) {
        try (ex) {
            ex.getResponseHeaders().set(MetadataHttpProtocol.SERVER_HEADER, MetadataHttpProtocol.PROTOCOL_VERSION);
            String path = ex.getRequestURI().getRawPath();
            String rootKeyPath = basePath.equals("/") ? "/" : basePath;
            String watchPath = (basePath.equals("/") ? "" : basePath) + MetadataHttpProtocol.WATCH_SUFFIX;
            if (path.equals(rootKeyPath) || path.equals(basePath + "/")) {
                handleKey(ex);
            } else if (path.equals(watchPath)) {
                handleWatch(ex);
            } else {
                respond(ex, 404, "no such endpoint '" + path + "'; metadata is served at " + rootKeyPath
                        + "?key=...");
            }
        } catch (IOException e) {
            LOG.debug("answering {} {} failed: {}", ex.getRequestMethod(), ex.getRequestURI(), e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            LOG.warn("{} {} failed", ex.getRequestMethod(), ex.getRequestURI(), e);
        }
    }

    private void handleKey(HttpExchange ex) throws IOException, InterruptedException {
        String key = queryParam(ex, "key");
        if (key == null || key.isEmpty()) {
            drain(ex);
            respond(ex, 400, "missing query parameter 'key'");
            return;
        }
        switch (ex.getRequestMethod()) {
            case "GET" -> {
                MetadataTable.State s = table.get(key);
                ex.getResponseHeaders().set(MetadataHttpProtocol.VERSION_HEADER, s.version());
                if (s.present()) {
                    respond(ex, 200, s.value());
                } else {
                    respond(ex, 404, MetadataHttpProtocol.NOT_FOUND_BODY);
                }
            }
            case "PUT" -> {
                long ttl = 0;
                String ttlText = ex.getRequestHeaders().getFirst(MetadataHttpProtocol.TTL_HEADER);
                if (ttlText != null) {
                    try {
                        ttl = Long.parseLong(ttlText.strip());
                    } catch (NumberFormatException e) {
                        ttl = -1;
                    }
                    if (ttl < 0) {
                        drain(ex);
                        respond(ex, 400, MetadataHttpProtocol.TTL_HEADER + " must be a non-negative integer, got '"
                                + ttlText + "'");
                        return;
                    }
                }
                byte[] value;
                try (InputStream in = ex.getRequestBody()) {
                    value = in.readNBytes(MAX_VALUE_BYTES + 1);
                }
                if (value.length > MAX_VALUE_BYTES) {
                    respond(ex, 413, "value of '" + key + "' is larger than " + MAX_VALUE_BYTES + " bytes");
                    return;
                }
                long generation = table.put(key, value, ttl);
                try {
                    table.awaitDurable(generation);
                } catch (IOException e) {
                    respond(ex, 500, "stored in memory but not on disk: " + e.getMessage());
                    return;
                }
                respond(ex, 200, MetadataHttpProtocol.UPDATED_BODY);
            }
            case "DELETE" -> {
                drain(ex);
                MetadataTable.Removal r = table.delete(key);
                try {
                    table.awaitDurable(r.generation());
                } catch (IOException e) {
                    respond(ex, 500, "deleted in memory but not on disk: " + e.getMessage());
                    return;
                }
                ex.getResponseHeaders().set(MetadataHttpProtocol.EXISTED_HEADER, Boolean.toString(r.existed()));
                // Mooncake's Go server answers 200 whether or not the key existed; its clients expect that
                respond(ex, 200, MetadataHttpProtocol.DELETED_BODY);
            }
            default -> {
                drain(ex);
                ex.getResponseHeaders().set("Allow", "GET, PUT, DELETE");
                respond(ex, 405, "method " + ex.getRequestMethod() + " not allowed");
            }
        }
    }

    private void handleWatch(HttpExchange ex) throws IOException, InterruptedException {
        drain(ex);
        if (!ex.getRequestMethod().equals("GET")) {
            ex.getResponseHeaders().set("Allow", "GET");
            respond(ex, 405, "watch takes GET");
            return;
        }
        String key = queryParam(ex, "key");
        if (key == null || key.isEmpty()) {
            respond(ex, 400, "missing query parameter 'key'");
            return;
        }
        String known = queryParam(ex, "version");
        long timeout = DEFAULT_WATCH_TIMEOUT_MS;
        String t = queryParam(ex, "timeout_ms");
        if (t != null) {
            try {
                timeout = Math.clamp(Long.parseLong(t), 0, MAX_WATCH_TIMEOUT_MS);
            } catch (NumberFormatException e) {
                respond(ex, 400, "timeout_ms must be an integer, got '" + t + "'");
                return;
            }
        }
        MetadataTable.State changed = closing ? null : table.awaitChange(key, known, timeout);
        if (changed == null) {
            ex.getResponseHeaders().set(MetadataHttpProtocol.VERSION_HEADER, table.get(key).version());
            ex.sendResponseHeaders(304, -1);
            return;
        }
        ex.getResponseHeaders().set(MetadataHttpProtocol.VERSION_HEADER, changed.version());
        if (changed.present()) {
            respond(ex, 200, changed.value());
        } else {
            respond(ex, 404, MetadataHttpProtocol.NOT_FOUND_BODY);
        }
    }

    private static void drain(HttpExchange ex) throws IOException {
        try (InputStream in = ex.getRequestBody()) {
            in.transferTo(OutputStream.nullOutputStream());
        }
    }

    private static void respond(HttpExchange ex, int status, String body) throws IOException {
        respond(ex, status, body.getBytes(StandardCharsets.UTF_8));
    }

    private static void respond(HttpExchange ex, int status, byte[] body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", MetadataHttpProtocol.CONTENT_TYPE);
        ex.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
        if (body.length > 0) {
            try (OutputStream out = ex.getResponseBody()) {
                out.write(body);
            }
        }
    }

    /** The first value of {@code name} in the query, decoded as Go's {@code Query().Get} does ('+' is a space). */
    static String queryParam(HttpExchange ex, String name) {
        return queryParam(ex.getRequestURI().getRawQuery(), name);
    }

    static String queryParam(String rawQuery, String name) {
        if (rawQuery == null) {
            return null;
        }
        for (String pair : rawQuery.split("&")) {
            int eq = pair.indexOf('=');
            String n = eq < 0 ? pair : pair.substring(0, eq);
            if (URLDecoder.decode(n, StandardCharsets.UTF_8).equals(name)) {
                return eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            }
        }
        return null;
    }

    // ---------------------------------------------------------------------------------------------- lifecycle

    /** Stops listening, answers pending long polls, and writes the data file if one is used. Idempotent. */
    @Override
    public void close() {
        synchronized (this) {
            if (closing) {
                return;
            }
            closing = true;
        }
        table.close();
        server.stop(0);
        executor.shutdownNow();
        LOG.info("metadata server on {} stopped", endpoint());
        closed.countDown();
    }

    /** Blocks until {@link #close()} has run (the CLI's main thread waits here). */
    public void awaitClose() throws InterruptedException {
        closed.await();
    }

    /**
     * Runs the server until the process is terminated (SIGTERM / Ctrl-C close it cleanly, writing the data file).
     * Options: {@code --port N} (default 8080), {@code --host H} (default 0.0.0.0), {@code --data-file F},
     * {@code --path P} (default /metadata).
     */
    public static void main(String[] args) throws InterruptedException {
        Builder b;
        try {
            b = fromArgs(args);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            usage(System.err);
            System.exit(2);
            return;
        }
        if (b == null) {
            usage(System.out);
            return;
        }
        HttpMetadataServer s;
        try {
            s = b.start();
        } catch (UncheckedIOException e) {
            System.err.println("tent4j metadata server: " + e.getMessage());
            System.exit(1);
            return;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(s::close, "tent4j-metadata-server-shutdown"));
        System.out.println("tent4j metadata server listening on " + s.endpoint()
                + (s.dataFile() == null ? " (in memory only)" : " (data file " + s.dataFile().toAbsolutePath() + ")"));
        System.out.flush();
        s.awaitClose();
    }

    /** Parses CLI arguments; {@code null} for {@code --help}. */
    static Builder fromArgs(String[] args) {
        Builder b = builder().host("0.0.0.0").port(8080);
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String name = a;
            String value = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                name = a.substring(0, eq);
                value = a.substring(eq + 1);
            }
            if (name.equals("--help") || name.equals("-h")) {
                return null;
            }
            if (value == null) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("option " + name + " needs a value");
                }
                value = args[++i];
            }
            switch (name) {
                case "--port" -> {
                    try {
                        b.port(Integer.parseInt(value));
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException("--port: '" + value + "' is not a number");
                    }
                }
                case "--host" -> b.host(value);
                case "--data-file" -> b.dataFile(Path.of(value));
                case "--path" -> b.path(value);
                default -> throw new IllegalArgumentException("unknown option " + name);
            }
        }
        return b;
    }

    private static void usage(PrintStream out) {
        out.println("usage: HttpMetadataServer [--port 8080] [--host 0.0.0.0] [--data-file FILE] [--path /metadata]");
        out.println("  Mooncake-compatible HTTP metadata server (GET/PUT/DELETE <path>?key=K) with TTL and watch.");
        out.println("  --data-file keeps every key on disk (written before each change is acknowledged).");
    }

    /** Settings of a server to start. */
    public static final class Builder {
        private String host = "127.0.0.1";
        private int port;
        private Path dataFile;
        private String path = MetadataHttpProtocol.DEFAULT_PATH;

        private Builder() {
        }

        /** Address to listen on (default 127.0.0.1; 0.0.0.0 for every interface). */
        public Builder host(String host) {
            this.host = host;
            return this;
        }

        /** Port to listen on; 0 (the default) picks a free one, see {@link HttpMetadataServer#port()}. */
        public Builder port(int port) {
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port " + port + " is out of range");
            }
            this.port = port;
            return this;
        }

        /** Keeps the data in this file (loaded at start if it exists). */
        public Builder dataFile(Path dataFile) {
            this.dataFile = dataFile;
            return this;
        }

        /** Path of the endpoint (default {@value MetadataHttpProtocol#DEFAULT_PATH}). */
        public Builder path(String path) {
            this.path = path;
            return this;
        }

        /** Starts the server; a port in use or an unreadable data file fails with {@link UncheckedIOException}. */
        public HttpMetadataServer start() {
            try {
                return new HttpMetadataServer(this);
            } catch (IOException e) {
                throw new UncheckedIOException(e.getMessage(), e);
            }
        }
    }
}
