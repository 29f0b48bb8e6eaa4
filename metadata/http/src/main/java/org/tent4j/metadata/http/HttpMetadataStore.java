package org.tent4j.metadata.http;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import okhttp3.Call;
import okhttp3.HttpUrl;
import okhttp3.MediaType;
import javax.net.ssl.X509TrustManager;

import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okhttp3.ResponseBody;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MetadataStore;

/**
 * {@link MetadataStore} over HTTP (OkHttp), speaking Mooncake's protocol to any server and tent4j's extensions
 * (TTL header, long-poll watch) to an {@link HttpMetadataServer}; which one it talks to is learnt from the
 * {@value MetadataHttpProtocol#SERVER_HEADER} header of the probe at open.
 *
 * <p>Against a plain Mooncake server a TTL cannot be honoured (the key stays until deleted; a warning is logged once)
 * and watches poll the key instead of long-polling.
 */
final class HttpMetadataStore implements MetadataStore {
    private static final Logger LOG = LoggerFactory.getLogger(HttpMetadataStore.class);
    private static final MediaType JSON = MediaType.get(MetadataHttpProtocol.CONTENT_TYPE);
    private static final AtomicInteger WATCH_IDS = new AtomicInteger();
    /** Largest answer read from a server (a hostile or broken one could send without end); values are KiBs. */
    static final int MAX_ANSWER_BYTES = 64 << 20;

    private final HttpEndpoint endpoint;
    private final OkHttpClient client;
    private final OkHttpClient watchClient;
    private final Duration watchHold;
    private final Duration pollInterval;
    private final Set<HttpWatch> watches = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean ttlWarned = new AtomicBoolean();
    private volatile boolean tent4jServer;
    private volatile boolean closed;

    HttpMetadataStore(HttpEndpoint endpoint, X509TrustManager trust, Duration timeout, Duration connectTimeout, Duration watchHold,
            Duration pollInterval) {
        this.endpoint = endpoint;
        this.watchHold = watchHold;
        this.pollInterval = pollInterval;
        OkHttpClient.Builder builder = new OkHttpClient.Builder()
                .connectTimeout(connectTimeout)
                .callTimeout(timeout)
                .readTimeout(timeout)
                .writeTimeout(timeout)
                .retryOnConnectionFailure(true);
        if (trust != null) {
            builder.sslSocketFactory(PemTls.clientContext(trust).getSocketFactory(), trust);
        }
        this.client = builder.build();
        // shares the connection pool; only the time a long poll may be held open differs
        Duration pollLimit = watchHold.plus(timeout);
        this.watchClient = client.newBuilder().callTimeout(pollLimit).readTimeout(pollLimit).build();
    }

    /** One GET: proves the server answers (200 or 404) and learns whether it is a tent4j server. */
    void probe() {
        try (Response r = execute(client, request(keyUrl("tent4j/probe")).get().build(), "probe read of",
                "tent4j/probe")) {
            if (r.code() != 200 && r.code() != 404) {
                throw unexpected(r, "probe read of", "tent4j/probe");
            }
            tent4jServer = r.header(MetadataHttpProtocol.SERVER_HEADER) != null;
        }
        LOG.debug("{} is {}", uri(), tent4jServer ? "a tent4j metadata server (TTL and long-poll watch)"
                : "a plain metadata server (no TTL; watches poll every " + pollInterval.toMillis() + " ms)");
    }

    boolean isTent4jServer() {
        return tent4jServer;
    }

    @Override
    public String uri() {
        return endpoint.masked();
    }

    @Override
    public Optional<byte[]> get(String key) {
        checkKey(key);
        ensureOpen();
        try (Response r = execute(client, request(keyUrl(key)).get().build(), "get", key)) {
            return switch (r.code()) {
                case 200 -> Optional.of(body(r, "get", key));
                case 404 -> Optional.empty();
                default -> throw unexpected(r, "get", key);
            };
        }
    }

    @Override
    public void put(String key, byte[] value, Duration ttl) {
        checkKey(key);
        if (value == null) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "put of '" + key + "' into " + uri()
                    + ": value is null (use delete)");
        }
        if (ttl == null || ttl.isNegative()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "put of '" + key + "' into " + uri()
                    + ": ttl must be zero or positive, got " + ttl);
        }
        ensureOpen();
        Request.Builder rb = request(keyUrl(key)).put(RequestBody.create(value, JSON));
        if (!ttl.isZero()) {
            rb.header(MetadataHttpProtocol.TTL_HEADER, Long.toString(Math.max(1, ttl.toMillis())));
            if (!tent4jServer && ttlWarned.compareAndSet(false, true)) {
                LOG.warn("{} is not a tent4j metadata server: TTLs are ignored there, keys stay until deleted",
                        uri());
            }
        }
        try (Response r = execute(client, rb.build(), "put", key)) {
            if (!r.isSuccessful()) {
                throw unexpected(r, "put", key);
            }
        }
    }

    @Override
    public boolean delete(String key) {
        checkKey(key);
        ensureOpen();
        try (Response r = execute(client, request(keyUrl(key)).delete().build(), "delete", key)) {
            if (r.code() == 404) {
                return false;
            }
            if (!r.isSuccessful()) {
                throw unexpected(r, "delete", key);
            }
            // Mooncake's Go server answers 200 either way; a tent4j server says whether the key was there
            return !"false".equalsIgnoreCase(r.header(MetadataHttpProtocol.EXISTED_HEADER));
        }
    }

    @Override
    public Watch watch(String key, MetadataListener listener) {
        checkKey(key);
        if (listener == null) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "watch of '" + key + "' on " + uri()
                    + ": listener is null");
        }
        ensureOpen();
        HttpWatch w = new HttpWatch(key, listener);
        w.establish();
        watches.add(w);
        if (closed) {
            w.close();
            ensureOpen();
        }
        w.start();
        return w;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (HttpWatch w : watches) {
            w.close();
        }
        client.dispatcher().cancelAll();
        client.dispatcher().executorService().shutdown();
        client.connectionPool().evictAll();
        LOG.debug("closed http metadata store {}", uri());
    }

    // ---------------------------------------------------------------------------------------------- internals

    private HttpUrl keyUrl(String key) {
        return endpoint.url().newBuilder().addQueryParameter("key", key).build();
    }

    private Request.Builder request(HttpUrl url) {
        Request.Builder b = new Request.Builder().url(url);
        if (endpoint.authorization() != null) {
            b.header("Authorization", endpoint.authorization());
        }
        return b;
    }

    private Response execute(OkHttpClient c, Request request, String op, String key) {
        try {
            return c.newCall(request).execute();
        } catch (InterruptedIOException e) {
            ensureOpen();
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "http metadata store " + uri() + ": " + op
                    + " '" + key + "' timed out or was interrupted: " + describe(e), e);
        } catch (IOException e) {
            ensureOpen();
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "http metadata store " + uri() + ": " + op
                    + " '" + key + "' failed: " + describe(e), e);
        } catch (IllegalStateException e) {
            // the client's executor was shut down by close()
            ensureOpen();
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "http metadata store " + uri() + ": " + op
                    + " '" + key + "' failed: " + describe(e), e);
        }
    }

    private byte[] body(Response r, String op, String key) {
        ResponseBody b = r.body();
        try {
            long declared = b.contentLength();
            byte[] data = declared > MAX_ANSWER_BYTES ? null : b.byteStream().readNBytes(MAX_ANSWER_BYTES + 1);
            if (data == null || data.length > MAX_ANSWER_BYTES) {
                throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "http metadata store " + uri() + ": "
                        + op + " '" + key + "': the answer is larger than " + MAX_ANSWER_BYTES + " bytes"
                        + (declared > 0 ? " (Content-Length " + declared + ")" : "") + "; refusing it");
            }
            return data;
        } catch (IOException e) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "http metadata store " + uri() + ": " + op
                    + " '" + key + "': reading the answer failed: " + describe(e), e);
        }
    }

    private TransferException unexpected(Response r, String op, String key) {
        String text;
        try {
            text = r.peekBody(200).string().strip();
        } catch (IOException e) {
            text = "";
        }
        return new TransferException(ErrorCode.METADATA_UNAVAILABLE, "http metadata store " + uri() + ": " + op
                + " '" + key + "' got HTTP " + r.code() + (text.isEmpty() ? "" : " (" + text + ")"));
    }

    static String describe(Throwable t) {
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String first = t.getClass().getSimpleName() + ": " + t.getMessage();
        if (root == t || String.valueOf(t.getMessage()).contains(String.valueOf(root.getMessage()))) {
            return first;
        }
        return first + " (caused by " + root.getClass().getSimpleName() + ": " + root.getMessage() + ")";
    }

    private void ensureOpen() {
        if (closed) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "http metadata store " + uri()
                    + " is closed");
        }
    }

    private void checkKey(String key) {
        if (key == null || key.isEmpty()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "http metadata store " + uri()
                    + ": key must not be null or empty");
        }
    }

    /** The outcome of one watch request: the key's state and version ({@code null} version from plain servers). */
    private record Observed(boolean changed, byte[] value, String version) {
    }

    /**
     * One watch, on a virtual thread of its own that also calls the listener (so calls are in order): long polls
     * against a tent4j server, periodic GETs against a plain one. Failures are retried with backoff until closed; a
     * change while the server was unreachable is reported when it answers again.
     */
    private final class HttpWatch implements Watch {
        private final String key;
        private final MetadataListener listener;
        private final Thread thread;
        private volatile boolean watchClosed;
        private volatile Call inFlight;
        private boolean polling;
        private String version;
        private byte[] last;

        HttpWatch(String key, MetadataListener listener) {
            this.key = key;
            this.listener = listener;
            this.thread = Thread.ofVirtual().name("tent4j-http-watch-" + WATCH_IDS.incrementAndGet())
                    .unstarted(this::run);
        }

        /** Reads the current state synchronously, so every change after watch() returns is reported. */
        void establish() {
            polling = !tent4jServer;
            if (polling) {
                last = get(key).orElse(null);
                return;
            }
            Observed o = longPoll(null, 0);
            if (o.version() == null) {
                // the server lost the tent4j extensions (replaced by a plain one): poll instead
                polling = true;
            }
            version = o.version();
            last = o.value();
        }

        void start() {
            thread.start();
        }

        private void run() {
            long backoffMs = 250;
            while (!watchClosed && !closed) {
                try {
                    Observed o;
                    if (polling) {
                        Thread.sleep(pollInterval.toMillis());
                        o = new Observed(true, get(key).orElse(null), null);
                    } else {
                        o = longPoll(version, watchHold.toMillis());
                        if (o.version() == null) {
                            LOG.info("{} no longer answers watch requests with versions; polling '{}'", uri(), key);
                            polling = true;
                        }
                        version = o.version();
                    }
                    if (o.changed()) {
                        deliver(o.value());
                    }
                    backoffMs = 250;
                } catch (TransferException e) {
                    if (watchClosed || closed) {
                        return;
                    }
                    LOG.debug("watch of '{}' on {} failed, retrying in {} ms: {}", key, uri(), backoffMs,
                            e.getMessage());
                    try {
                        Thread.sleep(backoffMs);
                    } catch (InterruptedException ie) {
                        return;
                    }
                    backoffMs = Math.min(backoffMs * 2, 5000);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }

        /** One long poll; a 304 means unchanged. A 404 without a version header comes from a plain server. */
        private Observed longPoll(String knownVersion, long holdMillis) {
            HttpUrl.Builder url = endpoint.watchUrl().newBuilder().addQueryParameter("key", key)
                    .addQueryParameter("timeout_ms", Long.toString(holdMillis));
            if (knownVersion != null) {
                url.addQueryParameter("version", knownVersion);
            }
            Call call = watchClient.newCall(request(url.build()).get().build());
            inFlight = call;
            if (watchClosed) {
                call.cancel();
            }
            Response r;
            try {
                r = call.execute();
            } catch (IOException e) {
                throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "http metadata store " + uri()
                        + ": watch of '" + key + "' failed: " + describe(e), e);
            } finally {
                inFlight = null;
            }
            try (r) {
                String v = r.header(MetadataHttpProtocol.VERSION_HEADER);
                return switch (r.code()) {
                    case 304 -> new Observed(false, last, v == null ? knownVersion : v);
                    case 200 -> new Observed(true, body(r, "watch of", key), v);
                    case 404 -> new Observed(true, null, v);
                    default -> throw unexpected(r, "watch of", key);
                };
            }
        }

        /** Identical consecutive states are reported once (a TTL refresh with the same value is no change). */
        private void deliver(byte[] value) {
            if (watchClosed || Arrays.equals(last, value)) {
                return;
            }
            last = value;
            try {
                listener.changed(key, value);
            } catch (RuntimeException e) {
                LOG.warn("metadata listener for '{}' on {} failed", key, uri(), e);
            }
        }

        @Override
        public void close() {
            if (watchClosed) {
                return;
            }
            watchClosed = true;
            Call c = inFlight;
            if (c != null) {
                c.cancel();
            }
            thread.interrupt();
            watches.remove(this);
            if (Thread.currentThread() != thread) {
                try {
                    thread.join(TimeUnit.SECONDS.toMillis(5));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }
}
