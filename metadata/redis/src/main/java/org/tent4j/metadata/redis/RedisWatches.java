package org.tent4j.metadata.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
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

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MetadataStore.MetadataListener;
import org.tent4j.spi.MetadataStore.Watch;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The watches of one {@link RedisMetadataStore}: keyspace notifications ({@code __keyspace@<db>__:<key>}) on one
 * dedicated subscriber connection ({@link KeyspaceSubscriber}), turned on with {@code CONFIG SET
 * notify-keyspace-events} on the first watch, or {@code MGET} polling where the server refuses CONFIG. Each watch
 * delivers states in order on a thread of its own.
 */
final class RedisWatches {
    private static final Logger LOG = LoggerFactory.getLogger(RedisWatches.class);
    static final AtomicInteger THREAD_IDS = new AtomicInteger();
    /** Keyspace events, generic commands (del, expire), string commands (set), expiry, eviction. */
    private static final String NEEDED_EVENT_FLAGS = "Kg$xe";
    private static final int POLL_BATCH = 512;

    private final RedisMetadataStore store;
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

    RedisWatches(RedisMetadataStore store, Duration timeout, Duration pollInterval, boolean notificationsAllowed,
                 String keyspacePrefix) {
        this.store = store;
        this.timeout = timeout;
        this.pollInterval = pollInterval;
        this.notificationsAllowed = notificationsAllowed;
        this.keyspacePrefix = keyspacePrefix;
    }

    /** A watch of {@code key} (checked by the store); the listener hears of changes after the baseline read. */
    Watch watch(String key, MetadataListener listener) {
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
            byte[] baseline = store.get(key).orElse(null);
            w.setBaseline(baseline);
        } catch (RuntimeException e) {
            w.close();
            throw e;
        }
        return w;
    }

    /** Closes every watch and stops the subscriber or poller; the store closes its connections after. */
    void close() {
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
    }

    private void awaitSubscription(String key, CompletableFuture<Void> confirmed) {
        try {
            confirmed.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "redis metadata store " + store.uri()
                    + ": watch of '" + key + "': no SUBSCRIBE confirmation within " + timeout.toMillis() + " ms", e);
        } catch (ExecutionException e) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "redis metadata store " + store.uri()
                    + ": watch of '" + key + "' failed: " + RedisMetadataStore.describe(e.getCause()), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "redis metadata store " + store.uri()
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
            store.ensureOpen();
            if (watchMode != null) {
                return watchMode;
            }
            if (!notificationsAllowed) {
                startPolling("keyspace notifications are switched off (metadata.redis.keyspace-notifications)");
                return watchMode;
            }
            Jedis connection = store.connect("watch subscriber connection");
            String refused;
            try {
                refused = enableKeyspaceEvents(connection);
            } catch (JedisException e) {
                connection.close();
                throw store.unavailable("enabling keyspace notifications", "", e);
            }
            if (refused != null) {
                connection.close();
                startPolling(refused);
                return watchMode;
            }
            subscriber = new KeyspaceSubscriber(this, store, keyspacePrefix, connection);
            watchMode = WatchMode.NOTIFICATIONS;
            subscriber.start();
            return watchMode;
        }
    }

    /**
     * Merges the flags watches need into the server's {@code notify-keyspace-events}. Returns why not if the server
     * refuses CONFIG (unknown or renamed command, ACL), in which case watches poll; {@code null} when enabled.
     */
    String enableKeyspaceEvents(Jedis j) {
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
            LOG.debug("{}: notify-keyspace-events '{}' -> '{}'", store.uri(), current, merged);
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
        LOG.info("{}: {}; watches poll every {} ms", store.uri(), why, pollInterval.toMillis());
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
            List<byte[]> values;
            try {
                values = store.getAll(batch);
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

    /** The keys watched now. */
    Set<String> watchedKeys() {
        return watchesByKey.keySet();
    }

    boolean isClosed() {
        return closed;
    }

    /** The subscriber reconnected to a server that now refuses keyspace notifications: watches poll from now on. */
    void pollAfterReconnect(String refused) {
        synchronized (watchModeLock) {
            if (!closed) {
                startPolling("after reconnecting, " + refused);
            }
        }
    }

    /** A keyspace event for {@code key}, from the subscriber. */
    void dispatch(String key, String event) {
        Set<RedisWatch> ws = watchesByKey.get(key);
        if (ws != null) {
            for (RedisWatch w : ws) {
                w.onEvent(event);
            }
        }
    }

    /** After the subscriber reconnected: every watch re-reads its key. */
    void resyncAll() {
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
                deliver(store.get(key).orElse(null));
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
                LOG.warn("metadata listener for '{}' on {} failed", key, store.uri(), e);
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
}
