package org.tent4j.metadata.http;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.spi.TimeSource;

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
    /** Default for the largest value a PUT may carry; etcd's own limit is 1.5 MiB, descriptors are a few KiB. */
    public static final int DEFAULT_MAX_VALUE_BYTES = 1 << 20;
    /**
     * How long the JDK server lets a client take to send one request, headers and body, before it closes the
     * connection (a slowloris client otherwise holds its connection and thread forever). The JDK reads this, and the
     * response-time and connection limits set next to it, once per JVM, when its first HTTP server starts; a value
     * set on the command line wins.
     */
    static final String REQUEST_TIME_PROPERTY = "sun.net.httpserver.maxReqTime";
    static final String DEFAULT_REQUEST_TIME_SECONDS = "30";

    static {
        defaultProperty(REQUEST_TIME_PROPERTY, DEFAULT_REQUEST_TIME_SECONDS);
        // from the request's end to the response's: a long poll's wait (at most 300 s) plus time to write the answer
        defaultProperty("sun.net.httpserver.maxRspTime", "330");
        // open connections, idle ones included (each is a file descriptor until its idle timeout closes it)
        defaultProperty("jdk.httpserver.maxConnections", "10000");
    }

    private static void defaultProperty(String name, String value) {
        if (System.getProperty(name) == null) {
            System.setProperty(name, value);
        }
    }

    private final HttpServer server;
    private final ExecutorService executor;
    /** Connections being read or answered; past it the JDK server closes new ones unanswered. */
    private final Semaphore connectionSlots;
    /** GET/PUT/DELETE handled at once; a few more wait in line, the rest get 503. */
    private final Semaphore requestPermits;
    private final AtomicInteger waitingRequests = new AtomicInteger();
    private final Semaphore watchPermits;
    private final boolean tls;
    private final int maxRequests;
    private final int maxWatchers;
    private final int requestQueue;
    private final Duration requestQueueWait;
    private final MetadataTable table;
    private final MetadataRequests requests;
    private final String basePath;
    private final String host;
    private final Path dataFile;
    private final CountDownLatch closed = new CountDownLatch(1);
    private volatile boolean closing;

    private HttpMetadataServer(Builder b) throws IOException {
        this.basePath = normalize(b.path);
        this.host = b.host;
        this.dataFile = b.dataFile;
        this.maxRequests = b.maxRequests;
        this.maxWatchers = b.maxWatchers;
        this.requestPermits = new Semaphore(b.maxRequests);
        this.requestQueue = b.requestQueue;
        this.requestQueueWait = b.requestQueueWait;
        this.watchPermits = new Semaphore(b.maxWatchers);
        // every admitted request and watch, the line, and as many again being read (their headers not yet seen)
        int connections = 2 * (b.maxRequests + b.requestQueue + b.maxWatchers);
        this.connectionSlots = new Semaphore(connections);
        SnapshotFile snapshots = b.snapshotFile != null ? b.snapshotFile
                : b.dataFile == null ? null : new SnapshotFile(b.dataFile);
        this.table = new MetadataTable(snapshots, b.durableTimeout, b.clock);
        this.requests = new MetadataRequests(table, b.maxValueBytes, () -> closing);
        this.tls = b.tlsCertificate != null;
        try {
            InetSocketAddress address = new InetSocketAddress(InetAddress.getByName(b.host), b.port);
            if (tls) {
                HttpsServer https = HttpsServer.create(address, 128);
                https.setHttpsConfigurator(new HttpsConfigurator(PemTls.serverContext(b.tlsCertificate, b.tlsKey)));
                this.server = https;
            } else {
                this.server = HttpServer.create(address, 128);
            }
        } catch (IOException e) {
            table.close();
            throw new IOException((tls ? "cannot serve TLS on " : "cannot listen on ") + b.host + ":" + b.port + ": "
                    + e.getMessage(), e);
        }
        // long polls park their thread for up to the watch timeout: virtual threads make that cheap
        this.executor = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("tent4j-metadata-http-", 0)
                .factory());
        server.setExecutor(task -> {
            if (!connectionSlots.tryAcquire()) {
                throw new RejectedExecutionException("metadata server is at its limit of " + connections
                        + " connections in progress");
            }
            try {
                executor.execute(() -> {
                    try {
                        task.run();
                    } finally {
                        connectionSlots.release();
                    }
                });
            } catch (RuntimeException e) {
                connectionSlots.release();
                throw e;
            }
        });
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

    /**
     * The URI clients use, e.g. {@code http://127.0.0.1:8080/metadata}, {@code https://...} with TLS (a wildcard host
     * shows as 127.0.0.1).
     */
    public String endpoint() {
        String h = host;
        if (h.equals("0.0.0.0") || h.equals("::") || h.equals("[::]")) {
            h = "127.0.0.1";
        } else if (h.contains(":") && !h.startsWith("[")) {
            h = "[" + h + "]";
        }
        return (tls ? "https://" : "http://") + h + ":" + port() + basePath;
    }

    /** Number of keys held now. */
    public int size() {
        return table.size();
    }

    /** Tests and diagnostics: keys with a parked long poll. */
    int watchedKeyCount() {
        return table.watchedKeyCount();
    }

    /** Tests and diagnostics: keys that will expire. */
    int pendingExpiryCount() {
        return table.pendingExpiryCount();
    }

    /** Tests and diagnostics: watch requests being answered now. */
    int watchesInProgress() {
        return maxWatchers - watchPermits.availablePermits();
    }

    /** Tests and diagnostics: GET/PUT/DELETE requests holding a slot now. */
    int requestsInProgress() {
        return maxRequests - requestPermits.availablePermits();
    }

    // ---------------------------------------------------------------------------------------------- HTTP

    private void handle(HttpExchange ex) {
        try (ex) {
            ex.getResponseHeaders().set(MetadataHttpProtocol.SERVER_HEADER, MetadataHttpProtocol.PROTOCOL_VERSION);
            String path = ex.getRequestURI().getRawPath();
            String rootKeyPath = basePath.equals("/") ? "/" : basePath;
            String watchPath = (basePath.equals("/") ? "" : basePath) + MetadataHttpProtocol.WATCH_SUFFIX;
            try {
                if (path.equals(rootKeyPath) || path.equals(basePath + "/")) {
                    if (!admitRequest()) {
                        MetadataRequests.respond(ex, 503, "metadata server is busy (" + requestPermits.availablePermits()
                                + " free of its request slots, " + requestQueue + " waiting); retry later");
                        return;
                    }
                    try {
                        requests.handleKey(ex);
                    } finally {
                        requestPermits.release();
                    }
                } else if (path.equals(watchPath)) {
                    if (!watchPermits.tryAcquire()) {
                        MetadataRequests.respond(ex, 503, "metadata server has as many watches open as it allows; retry later");
                        return;
                    }
                    try {
                        requests.handleWatch(ex);
                    } finally {
                        watchPermits.release();
                    }
                } else {
                    MetadataRequests.respond(ex, 404, "no such endpoint '" + path + "'; metadata is served at " + rootKeyPath
                            + "?key=...");
                }
            } catch (MetadataRequests.BadRequestException e) {
                // a client's mistake: one line, no stack trace, however many such requests arrive
                LOG.info("400 for {} {} from {}: {}", ex.getRequestMethod(), path, ex.getRemoteAddress(),
                        e.getMessage());
                MetadataRequests.respond(ex, 400, e.getMessage());
            }
        } catch (IOException e) {
            LOG.debug("answering {} {} failed: {}", ex.getRequestMethod(), ex.getRequestURI(), e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            LOG.warn("{} {} failed", ex.getRequestMethod(), ex.getRequestURI(), e);
        }
    }

    /** Takes a request slot, waiting in a bounded line for one; {@code false} means answer 503. */
    private boolean admitRequest() throws InterruptedException {
        if (requestPermits.tryAcquire()) {
            return true;
        }
        if (waitingRequests.incrementAndGet() > requestQueue) {
            waitingRequests.decrementAndGet();
            return false;
        }
        try {
            return requestPermits.tryAcquire(requestQueueWait.toNanos(), TimeUnit.NANOSECONDS);
        } finally {
            waitingRequests.decrementAndGet();
        }
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

    /** Settings of a server to start. */
    public static final class Builder {
        private String host = "127.0.0.1";
        private int port;
        private Path dataFile;
        private String path = MetadataHttpProtocol.DEFAULT_PATH;
        private int maxValueBytes = DEFAULT_MAX_VALUE_BYTES;
        private int maxRequests = 64;
        private int requestQueue = 256;
        private Duration requestQueueWait = Duration.ofSeconds(5);
        private int maxWatchers = 4096;
        private Duration durableTimeout = Duration.ofSeconds(10);
        private SnapshotFile snapshotFile;
        private TimeSource clock = TimeSource.SYSTEM;
        private Path tlsCertificate;
        private Path tlsKey;

        private Builder() {
        }

        /**
         * Serves HTTPS with {@code certificateChain} (PEM, server certificate first) and {@code privateKey} (PEM,
         * unencrypted PKCS#8, {@code -----BEGIN PRIVATE KEY-----}).
         */
        public Builder tls(Path certificateChain, Path privateKey) {
            this.tlsCertificate = java.util.Objects.requireNonNull(certificateChain, "certificateChain");
            this.tlsKey = java.util.Objects.requireNonNull(privateKey, "privateKey");
            return this;
        }

        /** Largest value a PUT may carry (default 1 MiB); larger ones are answered 413. */
        public Builder maxValueBytes(int bytes) {
            this.maxValueBytes = positive(bytes, "maxValueBytes");
            return this;
        }

        /**
         * GET/PUT/DELETE requests handled at once (default 64), how many more may wait for a slot (default 256) and
         * for how long (default 5 s); a request beyond that is answered 503.
         */
        public Builder maxRequests(int concurrent, int queue, Duration queueWait) {
            this.maxRequests = positive(concurrent, "maxRequests");
            if (queue < 0) {
                throw new IllegalArgumentException("request queue must be >= 0, got " + queue);
            }
            this.requestQueue = queue;
            this.requestQueueWait = queueWait;
            return this;
        }

        /** Long-poll watches open at once (default 4096); one more is answered 503. */
        public Builder maxWatchers(int watchers) {
            this.maxWatchers = positive(watchers, "maxWatchers");
            return this;
        }

        /** How long a PUT or DELETE waits for the data file (default 10 s) before it is answered 503. */
        public Builder durableTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("durableTimeout must be > 0, got " + timeout);
            }
            this.durableTimeout = timeout;
            return this;
        }

        /** Tests: a data file whose writes fail or stall. */
        Builder snapshotFile(SnapshotFile file) {
            this.snapshotFile = file;
            this.dataFile = file.path();
            return this;
        }

        /** Tests: the clock that TTLs run on, so expiry can be shown by advancing time rather than sleeping. */
        Builder clock(TimeSource clock) {
            this.clock = java.util.Objects.requireNonNull(clock, "clock");
            return this;
        }

        private static int positive(int n, String what) {
            if (n <= 0) {
                throw new IllegalArgumentException(what + " must be > 0, got " + n);
            }
            return n;
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
