package org.tent4j.metadata.etcd;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
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
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Lease;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MetadataStore;

/**
 * {@link MetadataStore} on etcd v3 through jetcd. Keys and values are stored as they are (UTF-8 key bytes, opaque
 * value bytes), so Mooncake processes sharing the etcd see the same keys.
 *
 * <p>TTL: a put with a TTL grants a lease of {@code ceil(ttl)} seconds (etcd raises it to its minimum, 2 s by default)
 * and attaches the key to it; a later put or delete of that key through this store revokes the lease it replaced.
 * Watch: an etcd watch on exactly the key, started at the revision after a read of the key so no change in between is
 * lost; lease expiry arrives as a DELETE. jetcd resumes a watch stream by itself after transient errors; when it gives
 * up, this store re-reads the key and watches again.
 */
final class EtcdMetadataStore implements MetadataStore {
    private static final Logger LOG = LoggerFactory.getLogger(EtcdMetadataStore.class);
    private static final int LOCK_STRIPES = 64;
    private static final AtomicInteger WATCH_IDS = new AtomicInteger();

    private final EtcdAddress address;
    private final Client client;
    private final KV kv;
    private final Lease leases;
    private final io.etcd.jetcd.Watch watchClient;
    private final Duration timeout;
    private final Map<String, Long> leaseByKey = new ConcurrentHashMap<>();
    private final ReentrantLock[] stripes = new ReentrantLock[LOCK_STRIPES];
    private final Set<EtcdWatch> watches = ConcurrentHashMap.newKeySet();
    private final ScheduledExecutorService rewatcher;
    private final ChannelReconnect reconnect;
    /** Whether the last call failed, so the next one should not wait out gRPC's reconnect backoff. */
    private volatile boolean failing;
    private volatile boolean closed;

    EtcdMetadataStore(EtcdAddress address, Client client, Duration timeout) {
        this.address = address;
        this.client = client;
        this.kv = client.getKVClient();
        this.leases = client.getLeaseClient();
        this.watchClient = client.getWatchClient();
        this.timeout = timeout;
        this.reconnect = ChannelReconnect.of(client, address.masked());
        for (int i = 0; i < stripes.length; i++) {
            stripes[i] = new ReentrantLock();
        }
        this.rewatcher = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "tent4j-etcd-rewatch");
            t.setDaemon(true);
            return t;
        });
    }

    /** Reads a probe key within {@code probeTimeout}; fails with METADATA_UNAVAILABLE if etcd does not answer. */
    void probe(Duration probeTimeout) {
        await(() -> kv.get(bytes("tent4j/probe")), probeTimeout, "probe read of", "tent4j/probe");
    }

    @Override
    public String uri() {
        return address.masked();
    }

    @Override
    public Optional<byte[]> get(String key) {
        checkKey(key);
        ensureOpen();
        GetResponse r = await(() -> kv.get(bytes(key)), timeout, "get", key);
        List<KeyValue> kvs = r.getKvs();
        return kvs.isEmpty() ? Optional.empty() : Optional.of(kvs.getFirst().getValue().getBytes());
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
        ByteSequence k = bytes(key);
        ByteSequence v = ByteSequence.from(value);
        ReentrantLock lock = stripe(key);
        // one put of a key at a time, so the lease recorded for the key is the one etcd attached last
        lock.lock();
        try {
            Long replaced;
            if (ttl.isZero()) {
                await(() -> kv.put(k, v), timeout, "put", key);
                replaced = leaseByKey.remove(key);
            } else {
                long seconds = Math.max(1, (ttl.toMillis() + 999) / 1000);
                long leaseId = await(() -> leases.grant(seconds), timeout, "lease grant for", key).getID();
                try {
                    PutOption withLease = PutOption.builder().withLeaseId(leaseId).build();
                    await(() -> kv.put(k, v, withLease), timeout, "put", key);
                } catch (TransferException e) {
                    revokeQuietly(leaseId, key);
                    throw e;
                }
                replaced = leaseByKey.put(key, leaseId);
            }
            if (replaced != null) {
                // the key no longer hangs on it, so revoking only frees the lease; nothing else is deleted
                revokeQuietly(replaced, key);
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public boolean delete(String key) {
        checkKey(key);
        ensureOpen();
        ReentrantLock lock = stripe(key);
        lock.lock();
        try {
            long deleted = await(() -> kv.delete(bytes(key)), timeout, "delete", key).getDeleted();
            Long lease = leaseByKey.remove(key);
            if (lease != null) {
                revokeQuietly(lease, key);
            }
            return deleted > 0;
        } finally {
            lock.unlock();
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
        EtcdWatch w = new EtcdWatch(key, listener);
        GetResponse current = await(() -> kv.get(w.etcdKey), timeout, "watch read of", key);
        w.baseline(current);
        watches.add(w);
        if (closed) {
            w.close();
            ensureOpen();
        }
        try {
            w.startAt(current.getHeader().getRevision() + 1);
        } catch (RuntimeException e) {
            // jetcd refuses new watches once its client is closing
            w.close();
            ensureOpen();
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "etcd metadata store " + uri()
                    + ": watch of '" + key + "' failed: " + describe(e), e);
        }
        return w;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (EtcdWatch w : watches) {
            w.close();
        }
        rewatcher.shutdownNow();
        try {
            client.close();
        } catch (RuntimeException e) {
            LOG.debug("closing the etcd client of {} failed", uri(), e);
        }
        LOG.debug("closed etcd metadata store {}", uri());
    }

    // ---------------------------------------------------------------------------------------------- internals

    private void revokeQuietly(long leaseId, String key) {
        leases.revoke(leaseId).whenComplete((r, t) -> {
            if (t != null) {
                // the lease still expires by itself; only its slot in etcd lingers until then
                LOG.debug("revoking lease {} of '{}' on {} failed: {}", Long.toHexString(leaseId), key, uri(),
                        describe(t));
            }
        });
    }

    private ReentrantLock stripe(String key) {
        return stripes[Math.floorMod(key.hashCode(), stripes.length)];
    }

    private void ensureOpen() {
        if (closed) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "etcd metadata store " + uri()
                    + " is closed");
        }
    }

    private void checkKey(String key) {
        if (key == null || key.isEmpty()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "etcd metadata store " + uri()
                    + ": key must not be null or empty");
        }
    }

    private static ByteSequence bytes(String key) {
        return ByteSequence.from(key, StandardCharsets.UTF_8);
    }

    /**
     * Runs one etcd call and waits at most {@code limit}. After a failure the next calls first cut gRPC's reconnect
     * backoff short, so the store works again as soon as etcd does.
     */
    private <T> T await(Supplier<CompletableFuture<T>> call, Duration limit, String op, String key) {
        if (failing) {
            reconnect.resetBackoff();
        }
        CompletableFuture<T> future = call.get();
        try {
            T result = future.get(limit.toMillis(), TimeUnit.MILLISECONDS);
            failing = false;
            return result;
        } catch (TimeoutException e) {
            future.cancel(true);
            failed();
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "etcd metadata store " + uri() + ": " + op
                    + " '" + key + "' got no answer within " + limit.toMillis() + " ms (is etcd at "
                    + address.endpoints() + " running?)", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            failed();
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "etcd metadata store " + uri() + ": " + op
                    + " '" + key + "' failed: " + describe(cause), cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            future.cancel(true);
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "etcd metadata store " + uri() + ": " + op
                    + " '" + key + "' was interrupted", e);
        }
    }

    private void failed() {
        failing = true;
        reconnect.resetBackoff();
    }

    /** The exception and its root cause in one line (jetcd wraps gRPC status errors). */
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

    /** One watch: an etcd watcher on exactly the key, and a thread of its own that calls the listener in order. */
    private final class EtcdWatch implements Watch, io.etcd.jetcd.Watch.Listener {
        private final String key;
        private final ByteSequence etcdKey;
        private final MetadataListener listener;
        private final ExecutorService delivery;
        private volatile io.etcd.jetcd.Watch.Watcher watcher;
        private volatile boolean watchClosed;
        /** The value the listener last saw (or the baseline); only touched on the delivery thread after start. */
        private byte[] last;
        private int retryDelayMs = 250;

        EtcdWatch(String key, MetadataListener listener) {
            this.key = key;
            this.etcdKey = bytes(key);
            this.listener = listener;
            this.delivery = Executors.newSingleThreadExecutor(
                    Thread.ofVirtual().name("tent4j-etcd-watch-" + WATCH_IDS.incrementAndGet()).factory());
        }

        void baseline(GetResponse current) {
            last = current.getKvs().isEmpty() ? null : current.getKvs().getFirst().getValue().getBytes();
        }

        void startAt(long revision) {
            watcher = watchClient.watch(etcdKey, WatchOption.builder().withRevision(revision).build(), this);
            if (watchClosed) {
                watcher.close();
            }
        }

        @Override
        public void onNext(WatchResponse response) {
            for (WatchEvent event : response.getEvents()) {
                WatchEvent.EventType type = event.getEventType();
                if (type != WatchEvent.EventType.PUT && type != WatchEvent.EventType.DELETE) {
                    continue;
                }
                KeyValue kvv = event.getKeyValue();
                deliver(type == WatchEvent.EventType.PUT ? kvv.getValue().getBytes() : null);
            }
        }

        @Override
        public void onError(Throwable t) {
            // jetcd resumes the stream itself after transient errors and calls onCompleted if it gives up
            LOG.debug("watch of '{}' on {}: {}", key, uri(), describe(t));
        }

        @Override
        public void onCompleted() {
            if (watchClosed || closed) {
                return;
            }
            LOG.info("etcd ended the watch of '{}' on {}; watching it again", key, uri());
            scheduleRewatch();
        }

        private void scheduleRewatch() {
            try {
                rewatcher.schedule(this::rewatch, retryDelayMs, TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException e) {
                // the store is closing
            }
        }

        /** Re-reads the key (a change while no watch ran is reported) and watches again from the revision after. */
        private void rewatch() {
            if (watchClosed || closed) {
                return;
            }
            try {
                GetResponse current = await(() -> kv.get(etcdKey), timeout, "watch re-read of", key);
                byte[] value = current.getKvs().isEmpty() ? null : current.getKvs().getFirst().getValue().getBytes();
                deliver(value);
                retryDelayMs = 250;
                startAt(current.getHeader().getRevision() + 1);
            } catch (TransferException e) {
                retryDelayMs = Math.min(retryDelayMs * 2, 5000);
                LOG.debug("re-watching '{}' on {} failed, next try in {} ms: {}", key, uri(), retryDelayMs,
                        e.getMessage());
                scheduleRewatch();
            }
        }

        /**
         * Hands the value to the listener on this watch's thread. Identical consecutive states are reported once, so a
         * publisher re-putting the same descriptor to refresh its TTL does not wake every watcher.
         */
        private void deliver(byte[] value) {
            if (watchClosed) {
                return;
            }
            try {
                delivery.execute(() -> {
                    if (watchClosed || Arrays.equals(last, value)) {
                        return;
                    }
                    last = value;
                    try {
                        listener.changed(key, value);
                    } catch (RuntimeException e) {
                        LOG.warn("metadata listener for '{}' on {} failed", key, uri(), e);
                    }
                });
            } catch (RejectedExecutionException e) {
                // closed meanwhile
            }
        }

        @Override
        public void close() {
            if (watchClosed) {
                return;
            }
            watchClosed = true;
            io.etcd.jetcd.Watch.Watcher w = watcher;
            if (w != null) {
                try {
                    w.close();
                } catch (RuntimeException e) {
                    LOG.debug("closing the watch of '{}' on {} failed: {}", key, uri(), describe(e));
                }
            }
            delivery.shutdown();
            watches.remove(this);
        }
    }
}
