package org.tent4j.metadata.redis;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPubSub;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The dedicated connection that receives keyspace notifications. Its thread blocks in SUBSCRIBE; channels of newly
 * watched keys are added from other threads. A control channel of its own keeps the subscription alive while no
 * key is watched and marks when a (re)connection is live.
 */
final class KeyspaceSubscriber extends JedisPubSub {
    private static final Logger LOG = LoggerFactory.getLogger(KeyspaceSubscriber.class);

    private final RedisWatches watches;
    private final RedisMetadataStore store;
    private final String keyspacePrefix;
    private final String controlChannel = "tent4j:metadata-watch:" + UUID.randomUUID();
    private final Map<String, CompletableFuture<Void>> pending = new ConcurrentHashMap<>();
    private final Thread thread;
    private Jedis connection;
    /** Channels sent with the SUBSCRIBE that opened the current connection; guarded by this. */
    private Set<String> sentAtConnect = Set.of();
    private boolean live;
    private int connections;

    KeyspaceSubscriber(RedisWatches watches, RedisMetadataStore store, String keyspacePrefix, Jedis firstConnection) {
        this.watches = watches;
        this.store = store;
        this.keyspacePrefix = keyspacePrefix;
        this.connection = firstConnection;
        this.thread = Thread.ofPlatform().daemon().name("tent4j-redis-subscriber-" + RedisWatches.THREAD_IDS.incrementAndGet())
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
        while (!watches.isClosed()) {
            int connectionsBefore;
            Jedis j;
            synchronized (this) {
                j = connection;
                connectionsBefore = connections;
            }
            try {
                if (j == null) {
                    j = store.dial();
                    String refused = watches.enableKeyspaceEvents(j);
                    if (refused != null) {
                        j.close();
                        watches.pollAfterReconnect(refused);
                        failPending(new IllegalStateException("switched to polling"));
                        return;
                    }
                }
                Set<String> channels = new LinkedHashSet<>();
                channels.add(controlChannel);
                synchronized (this) {
                    connection = j;
                    for (String key : watches.watchedKeys()) {
                        channels.add(channel(key));
                    }
                    sentAtConnect = channels;
                }
                j.subscribe(this, channels.toArray(String[]::new));
            } catch (JedisException e) {
                if (watches.isClosed()) {
                    break;
                }
                LOG.info("{}: watch subscriber connection lost ({}); reconnecting in {} ms", store.uri(), RedisMetadataStore.describe(e),
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
            if (watches.isClosed()) {
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
                for (String key : watches.watchedKeys()) {
                    if (!sentAtConnect.contains(channel(key))) {
                        missing.add(channel(key));
                    }
                }
                if (!missing.isEmpty()) {
                    subscribe(missing.toArray(String[]::new));
                }
            }
            if (reconnected) {
                LOG.info("{}: watch subscriber reconnected; re-reading {} watched keys", store.uri(),
                        watches.watchedKeys().size());
                watches.resyncAll();
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
            watches.dispatch(channel.substring(keyspacePrefix.length()), message);
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
                    LOG.debug("SUBSCRIBE for '{}' failed, retried on reconnect: {}", key, RedisMetadataStore.describe(e));
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
                    LOG.debug("UNSUBSCRIBE for '{}' failed: {}", key, RedisMetadataStore.describe(e));
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
                    LOG.debug("UNSUBSCRIBE on close failed: {}", RedisMetadataStore.describe(e));
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
