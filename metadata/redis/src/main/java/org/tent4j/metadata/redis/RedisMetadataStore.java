package org.tent4j.metadata.redis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MetadataStore;

import redis.clients.jedis.ConnectionPoolConfig;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocketFactory;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisPubSub;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.params.SetParams;

/**
 * {@link MetadataStore} on Redis through a pooled Jedis {@link RedisClient}: {@code GET}, {@code SET key value [PX ttl]},
 * {@code DEL}, as Mooncake does (keys are the UTF-8 bytes of the key, values stored as given).
 *
 * <p>Watch: keyspace notifications ({@code __keyspace@<db>__:<key>}) on one dedicated subscriber connection. The
 * first watch turns on the flags it needs ({@code K g $ x e}) with {@code CONFIG SET notify-keyspace-events}, merged
 * into what the server already has; if CONFIG is refused (managed Redis, ACL), watches poll the watched keys with
 * {@code MGET} instead. A notification names only the event, so the value is read afterwards; delivery is therefore
 * of states, at least once and in order. After the subscriber connection is lost it reconnects, turns notifications on
 * again (a restarted server forgets CONFIG SET) and re-reads every watched key, so changes while it was away are
 * reported.
 */
final class RedisMetadataStore implements MetadataStore {
    private static final Logger LOG = LoggerFactory.getLogger(RedisMetadataStore.class);
    private static final AtomicInteger THREAD_IDS = new AtomicInteger();
    /** Keyspace events, generic commands (del, expire), string commands (set), expiry, eviction. */
    private static final String NEEDED_EVENT_FLAGS = "Kg$xe";
    private static final int POLL_BATCH = 512;

    private final RedisAddress address;
    private final JedisClientConfig clientConfig;
    private final RedisClient redis;
    private final Duration timeout;
    private final Duration pollInterval;
    private final boolean notificationsAllowed;
    private final String keyspacePrefix;
    private final Map<String, Set<RedisWatch>> watchesByKey = new ConcurrentHashMap<>();
    private final Object watchModeLock = new Object();
    private volatile WatchMode watchMode;
    private KeyspaceSubscriber subscriber;
    private ScheduledExecutorService poller;
    private volatile boolean closed;

    private enum WatchMode { NOTIFICATIONS, POLLING }

    RedisMetadataStore(RedisAddress address, SSLSocketFactory tls, Duration timeout, Duration connectTimeout, int poolSize,
            Duration pollInterval, boolean notificationsAllowed) {
        this.address = address;
        this.timeout = timeout;
        this.pollInterval = pollInterval;
        this.notificationsAllowed = notificationsAllowed;
        this.keyspacePrefix = "__keyspace@" + address.database() + "__:";
        DefaultJedisClientConfig.Builder cfg = DefaultJedisClientConfig.builder()
                .connectionTimeoutMillis(millis(connectTimeout))
                .socketTimeoutMillis(millis(timeout))
                .database(address.database())
                .clientName("tent4j-metadata")
                // Jedis (unlike RedisClient) speaks RESP2 only; saying so up front avoids a warning per connection
                .autoNegotiateProtocol(false);
        if (address.password() != null) {
            cfg.user(address.user()).password(address.password());
        }
        if (address.tls()) {
            SSLParameters verifyHost = new SSLParameters();
            // JSSE checks the certificate names the host we dialled; Jedis does not by itself
            verifyHost.setEndpointIdentificationAlgorithm("HTTPS");
            cfg.ssl(true).sslParameters(verifyHost);
            if (tls != null) {
                cfg.sslSocketFactory(tls);
            }
        }
        this.clientConfig = cfg.build();
        ConnectionPoolConfig poolConfig = new ConnectionPoolConfig();
        poolConfig.setMaxTotal(poolSize);
        poolConfig.setMaxIdle(poolSize);
        poolConfig.setMinIdle(0);
        poolConfig.setMaxWait(timeout);
        poolConfig.setBlockWhenExhausted(true);
        poolConfig.setJmxEnabled(false);
        this.redis = RedisClient.builder()
                .hostAndPort(address.host(), address.port())
                .clientConfig(clientConfig)
                .poolConfig(poolConfig)
                .build();
    }

    private static int millis(Duration d) {
        return (int) Math.min(Integer.MAX_VALUE, d.toMillis());
    }

    /** Fails with METADATA_UNAVAILABLE unless the server answers PING (with the configured credentials). */
    void probe() {
        call("ping", "", redis::ping);
    }

    @Override
    public String uri() {
        return address.masked();
    }

    @Override
    public Optional<byte[]> get(String key) {
        checkKey(key);
        byte[] k = bytes(key);
        return Optional.ofNullable(call("get", key, () -> redis.get(k)));
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
        byte[] k = bytes(key);
        // plain SET drops any earlier expiry, so a put without TTL makes the key permanent again
        SetParams params = ttl.isZero() ? null : SetParams.setParams().px(Math.max(1, ttl.toMillis()));
        call("put", key, () -> params == null ? redis.set(k, value) : redis.set(k, value, params));
    }

    @Override
    public boolean delete(String key) {
        checkKey(key);
        byte[] k = bytes(key);
        return call("delete", key, () -> redis.del(k)) > 0;
    }

    @Override
    public Watch watch(String key, MetadataListener listener) {
        checkKey(key);
        if (listener == null) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "watch of '" + key + "' on " + uri()
                    + ": listener is null");
        }
        ensureOpen();
        WatchMode mode = ensureWatchMode();
        RedisWatch w = new RedisWatch(key, listener);
        Set<RedisWatch> forKey = watchesByKey.compute(key, (k, set) -> {
            Set<RedisWatch> s = set == null ? ConcurrentHashMap.newKeySet() : set;
            s.add(w);
            return s;
        });
        try {
            if (mode == WatchMode.NOTIFICATIONS && forKey.size() == 1) {
                awaitSubscription(key, subscriber.watchKey(key));
            }
            // read only once the subscription is live, so no change after this read can go unreported
            byte[] baseline = get(key).orElse(null);
            w.setBaseline(baseline);
        } catch (RuntimeException e) {
            w.close();
            throw e;
        }
        return w;
    }

    private void awaitSubscription(String key, CompletableFuture<Void> confirmed) {
        try {
            confirmed.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "redis metadata store " + uri()
                    + ": watch of '" + key + "': no SUBSCRIBE confirmation within " + timeout.toMillis() + " ms", e);
        } catch (ExecutionException e) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "redis metadata store " + uri()
                    + ": watch of '" + key + "' failed: " + describe(e.getCause()), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "redis metadata store " + uri()
                    + ": watch of '" + key + "' was interrupted", e);
        }
    }

    /** Chooses notifications or polling on the first watch, starting the subscriber connection or the poller. */
    private WatchMode ensureWatchMode() {
        WatchMode m = watchMode;
        if (m != null) {
            return m;
        }
        synchronized (watchModeLock) {
            ensureOpen();
            if (watchMode != null) {
                return watchMode;
            }
            if (!notificationsAllowed) {
                startPolling("keyspace notifications are switched off (metadata.redis.keyspace-notifications)");
                return watchMode;
            }
            Jedis connection = connect("watch subscriber connection");
            String refused;
            try {
                refused = enableKeyspaceEvents(connection);
            } catch (JedisException e) {
                connection.close();
                throw unavailable("enabling keyspace notifications", "", e);
            }
            if (refused != null) {
                connection.close();
                startPolling(refused);
                return watchMode;
            }
            subscriber = new KeyspaceSubscriber(connection);
            watchMode = WatchMode.NOTIFICATIONS;
            subscriber.start();
            return watchMode;
        }
    }

    private Jedis connect(String what) {
        try {
            Jedis j = new Jedis(new HostAndPort(address.host(), address.port()), clientConfig);
            j.ping();
            return j;
        } catch (JedisException e) {
            throw unavailable("opening the " + what, "", e);
        }
    }

    /**
     * Merges the flags watches need into the server's {@code notify-keyspace-events}. Returns why not if the server
     * refuses CONFIG (unknown or renamed command, ACL), in which case watches poll; {@code null} when enabled.
     */
    private String enableKeyspaceEvents(Jedis j) {
        String current;
        try {
            Map<String, String> reply = j.configGet("notify-keyspace-events");
            current = reply.getOrDefault("notify-keyspace-events", "");
        } catch (JedisDataException e) {
            return "the server refuses CONFIG GET (" + e.getMessage().strip() + ")";
        }
        String merged = mergeEventFlags(current);
        if (merged.equals(current)) {
            return null;
        }
        try {
            j.configSet("notify-keyspace-events", merged);
            LOG.debug("{}: notify-keyspace-events '{}' -> '{}'", uri(), current, merged);
            return null;
        } catch (JedisDataException e) {
            return "the server refuses CONFIG SET notify-keyspace-events (" + e.getMessage().strip() + ")";
        }
    }

    /** {@code current} plus whichever of K, g, $, x, e it lacks ('A' already stands for g$lshzxetd). */
    static String mergeEventFlags(String current) {
        StringBuilder out = new StringBuilder(current);
        boolean all = current.indexOf('A') >= 0;
        for (char c : NEEDED_EVENT_FLAGS.toCharArray()) {
            if (current.indexOf(c) < 0 && (c == 'K' || !all)) {
                out.append(c);
            }
        }
        return out.toString();
    }

    private void startPolling(String why) {
        LOG.info("{}: {}; watches poll every {} ms", uri(), why, pollInterval.toMillis());
        poller = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "tent4j-redis-poll-" + THREAD_IDS.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        poller.scheduleWithFixedDelay(this::pollOnce, pollInterval.toMillis(), pollInterval.toMillis(),
                TimeUnit.MILLISECONDS);
        watchMode = WatchMode.POLLING;
    }

    private void pollOnce() {
        List<String> keys = new ArrayList<>(watchesByKey.keySet());
        for (int from = 0; from < keys.size() && !closed; from += POLL_BATCH) {
            List<String> batch = keys.subList(from, Math.min(keys.size(), from + POLL_BATCH));
            byte[][] raw = batch.stream().map(RedisMetadataStore::bytes).toArray(byte[][]::new);
            List<byte[]> values;
            try {
                values = call("poll", batch.getFirst(), () -> redis.mget(raw));
            } catch (TransferException e) {
                LOG.debug("polling {} watched keys failed: {}", batch.size(), e.getMessage());
                return;
            }
            for (int i = 0; i < batch.size(); i++) {
                Set<RedisWatch> ws = watchesByKey.get(batch.get(i));
                if (ws != null) {
                    for (RedisWatch w : ws) {
                        w.observe(values.get(i));
                    }
                }
            }
        }
    }

    @Override
    public void close() {
        synchronized (watchModeLock) {
            if (closed) {
                return;
            }
            closed = true;
        }
        for (Set<RedisWatch> ws : watchesByKey.values()) {
            for (RedisWatch w : ws) {
                w.close();
            }
        }
        if (subscriber != null) {
            subscriber.shutdown();
        }
        if (poller != null) {
            poller.shutdownNow();
        }
        redis.close();
        LOG.debug("closed redis metadata store {}", uri());
    }

    // ---------------------------------------------------------------------------------------------- internals

    /**
     * Runs one command on a pooled connection. A connection error is retried once on a fresh connection after
     * dropping every idle one, because after a server restart all pooled connections are dead but the server is back.
     */
    private <T> T call(String op, String key, Supplier<T> command) {
        ensureOpen();
        JedisException failure = null;
        for (int attempt = 0; attempt < 2; attempt++) {
            try {
                return command.get();
            } catch (JedisConnectionException e) {
                failure = e;
                if (closed) {
                    break;
                }
                redis.getPool().clear();
            } catch (JedisException e) {
                failure = e;
                break;
            } catch (IllegalStateException e) {
                // the pool was closed under us
                ensureOpen();
                throw unavailable(op, key, e);
            }
        }
        throw unavailable(op, key, failure);
    }

    private TransferException unavailable(String op, String key, Throwable cause) {
        ensureOpen();
        String what = key.isEmpty() ? op : op + " '" + key + "'";
        String why = cause instanceof JedisAccessControlException || isAuthFailure(cause)
                ? "authentication failed: " + describe(cause)
                : "failed: " + describe(cause);
        return new TransferException(ErrorCode.METADATA_UNAVAILABLE, "redis metadata store " + uri() + ": " + what
                + " " + why, cause);
    }

    private static boolean isAuthFailure(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            String m = String.valueOf(c.getMessage());
            if (c instanceof JedisAccessControlException || m.startsWith("WRONGPASS") || m.startsWith("NOAUTH")
                    || m.contains("invalid password") || m.contains("invalid username-password")) {
                return true;
            }
        }
        return false;
    }

    /** The exception and its root cause in one line; Jedis messages never contain the password. */
    static String describe(Throwable t) {
        if (t == null) {
            return "unknown error";
        }
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
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "redis metadata store " + uri()
                    + " is closed");
        }
    }

    private void checkKey(String key) {
        if (key == null || key.isEmpty()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "redis metadata store " + uri()
                    + ": key must not be null or empty");
        }
    }

    private static byte[] bytes(String key) {
        return key.getBytes(StandardCharsets.UTF_8);
    }

    private void dispatch(String key, String event) {
        Set<RedisWatch> ws = watchesByKey.get(key);
        if (ws != null) {
            for (RedisWatch w : ws) {
                w.onEvent(event);
            }
        }
    }

    private void resyncAll() {
        for (Set<RedisWatch> ws : watchesByKey.values()) {
            for (RedisWatch w : ws) {
                w.resync();
            }
        }
    }

    /** One watch: the listener runs on a thread of its own, one state at a time, in order. */
    private final class RedisWatch implements Watch {
        private final String key;
        private final MetadataListener listener;
        private final ExecutorService delivery;
        private volatile boolean watchClosed;
        /** The state the listener last saw (or the baseline); only touched on the delivery thread. */
        private byte[] last;

        RedisWatch(String key, MetadataListener listener) {
            this.key = key;
            this.listener = listener;
            this.delivery = Executors.newSingleThreadExecutor(
                    Thread.ofVirtual().name("tent4j-redis-watch-" + THREAD_IDS.incrementAndGet()).factory());
        }

        void setBaseline(byte[] value) {
            submit(() -> last = value);
        }

        /** A keyspace event: deletions carry their state; anything else is read back. */
        void onEvent(String event) {
            switch (event) {
                case "del", "expired", "evicted", "rename_from" -> submit(() -> deliver(null));
                // a TTL change alone changes no value
                case "expire", "persist" -> { }
                default -> submit(this::readAndDeliver);
            }
        }

        /** After the subscriber reconnected: whatever changed meanwhile. */
        void resync() {
            submit(this::readAndDeliver);
        }

        /** A polled value. */
        void observe(byte[] value) {
            submit(() -> deliver(value));
        }

        private void readAndDeliver() {
            try {
                deliver(get(key).orElse(null));
            } catch (TransferException e) {
                // the subscriber's reconnect re-reads every watched key, so this change is not lost
                LOG.debug("reading '{}' after a keyspace event failed: {}", key, e.getMessage());
            }
        }

        private void submit(Runnable task) {
            if (watchClosed) {
                return;
            }
            try {
                delivery.execute(task);
            } catch (RejectedExecutionException e) {
                // closed meanwhile
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
            delivery.shutdown();
            boolean[] lastForKey = {false};
            watchesByKey.computeIfPresent(key, (k, set) -> {
                set.remove(this);
                lastForKey[0] = set.isEmpty();
                return set.isEmpty() ? null : set;
            });
            KeyspaceSubscriber s = subscriber;
            if (lastForKey[0] && s != null && !closed) {
                s.unwatchKey(key);
            }
        }
    }

    /**
     * The dedicated connection that receives keyspace notifications. Its thread blocks in SUBSCRIBE; channels of newly
     * watched keys are added from other threads. A control channel of its own keeps the subscription alive while no
     * key is watched and marks when a (re)connection is live.
     */
    private final class KeyspaceSubscriber extends JedisPubSub {
        private final String controlChannel = "tent4j:metadata-watch:" + UUID.randomUUID();
        private final Map<String, CompletableFuture<Void>> pending = new ConcurrentHashMap<>();
        private final Thread thread;
        private Jedis connection;
        /** Channels sent with the SUBSCRIBE that opened the current connection; guarded by this. */
        private Set<String> sentAtConnect = Set.of();
        private boolean live;
        private int connections;

        KeyspaceSubscriber(Jedis firstConnection) {
            this.connection = firstConnection;
            this.thread = Thread.ofPlatform().daemon().name("tent4j-redis-subscriber-" + THREAD_IDS.incrementAndGet())
                    .unstarted(this::run);
        }

        void start() {
            thread.start();
        }

        private String channel(String key) {
            return keyspacePrefix + key;
        }

        private void run() {
            long backoffMs = 100;
            while (!closed) {
                int connectionsBefore;
                Jedis j;
                synchronized (this) {
                    j = connection;
                    connectionsBefore = connections;
                }
                try {
                    if (j == null) {
                        j = new Jedis(new HostAndPort(address.host(), address.port()), clientConfig);
                        String refused = enableKeyspaceEvents(j);
                        if (refused != null) {
                            j.close();
                            synchronized (watchModeLock) {
                                if (!closed) {
                                    startPolling("after reconnecting, " + refused);
                                }
                            }
                            failPending(new IllegalStateException("switched to polling"));
                            return;
                        }
                    }
                    Set<String> channels = new LinkedHashSet<>();
                    channels.add(controlChannel);
                    synchronized (this) {
                        connection = j;
                        for (String key : watchesByKey.keySet()) {
                            channels.add(channel(key));
                        }
                        sentAtConnect = channels;
                    }
                    j.subscribe(this, channels.toArray(String[]::new));
                } catch (JedisException e) {
                    if (closed) {
                        break;
                    }
                    LOG.info("{}: watch subscriber connection lost ({}); reconnecting in {} ms", uri(), describe(e),
                            backoffMs);
                } finally {
                    synchronized (this) {
                        live = false;
                        if (j != null) {
                            j.close();
                        }
                        connection = null;
                    }
                }
                if (closed) {
                    break;
                }
                try {
                    Thread.sleep(backoffMs);
                } catch (InterruptedException e) {
                    break;
                }
                synchronized (this) {
                    // a connection that was live starts the next wait short again
                    backoffMs = connections > connectionsBefore ? 100 : Math.min(backoffMs * 2, 2000);
                }
            }
            failPending(new IllegalStateException("store closed"));
        }

        @Override
        public void onSubscribe(String channel, int subscribedChannels) {
            if (channel.equals(controlChannel)) {
                boolean reconnected;
                synchronized (this) {
                    live = true;
                    reconnected = connections++ > 0;
                    // keys watched after the channel list was built but before this subscription was live
                    List<String> missing = new ArrayList<>();
                    for (String key : watchesByKey.keySet()) {
                        if (!sentAtConnect.contains(channel(key))) {
                            missing.add(channel(key));
                        }
                    }
                    if (!missing.isEmpty()) {
                        subscribe(missing.toArray(String[]::new));
                    }
                }
                if (reconnected) {
                    LOG.info("{}: watch subscriber reconnected; re-reading {} watched keys", uri(),
                            watchesByKey.size());
                    resyncAll();
                }
                return;
            }
            if (channel.startsWith(keyspacePrefix)) {
                CompletableFuture<Void> f = pending.remove(channel.substring(keyspacePrefix.length()));
                if (f != null) {
                    f.complete(null);
                }
            }
        }

        @Override
        public void onMessage(String channel, String message) {
            if (channel.startsWith(keyspacePrefix)) {
                dispatch(channel.substring(keyspacePrefix.length()), message);
            }
        }

        /** Subscribes to the key's channel now if the connection is live, else with the next (re)connection. */
        CompletableFuture<Void> watchKey(String key) {
            CompletableFuture<Void> confirmed = pending.computeIfAbsent(key, k -> new CompletableFuture<>());
            synchronized (this) {
                if (live) {
                    try {
                        subscribe(channel(key));
                    } catch (JedisException e) {
                        // the connection is going away; the reconnect subscribes every watched key
                        LOG.debug("SUBSCRIBE for '{}' failed, retried on reconnect: {}", key, describe(e));
                    }
                }
            }
            return confirmed;
        }

        void unwatchKey(String key) {
            synchronized (this) {
                if (live) {
                    try {
                        unsubscribe(channel(key));
                    } catch (JedisException e) {
                        LOG.debug("UNSUBSCRIBE for '{}' failed: {}", key, describe(e));
                    }
                }
            }
        }

        private void failPending(Exception why) {
            for (CompletableFuture<Void> f : pending.values()) {
                f.completeExceptionally(why);
            }
            pending.clear();
        }

        void shutdown() {
            synchronized (this) {
                if (live) {
                    try {
                        unsubscribe();
                    } catch (JedisException e) {
                        LOG.debug("UNSUBSCRIBE on close failed: {}", describe(e));
                    }
                }
                if (connection != null) {
                    // unblocks the subscriber thread if UNSUBSCRIBE could not be sent
                    connection.disconnect();
                }
            }
            thread.interrupt();
            try {
                thread.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
