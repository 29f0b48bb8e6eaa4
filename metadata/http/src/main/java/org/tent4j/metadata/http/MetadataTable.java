package org.tent4j.metadata.http;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.DelayQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The metadata server's state: keys with values, a revision per change, TTL expiry, per-key change signals for long
 * polls, and group-committed persistence to a {@link SnapshotFile}.
 *
 * <p>Versions: a present key's version is {@code <epoch>-<revision of its last put>}, an absent key's is
 * {@code <epoch>-0}. Revisions only grow, and the epoch is persisted with the data (a server without a data file draws
 * a fresh one at start), so a version never comes back with different content and a watcher that compares versions
 * cannot miss a change.
 */
final class MetadataTable implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MetadataTable.class);

    /** What a reader sees of one key. {@code value} is {@code null} when the key is absent. */
    record State(byte[] value, String version) {
        boolean present() {
            return value != null;
        }
    }

    /** The outcome of a delete: whether the key existed, and the persistence generation to wait for. */
    record Removal(boolean existed, long generation) {
    }

    private record Entry(byte[] value, long revision, long deadlineNanos, long expiresAtMillis) {
        boolean expired(long nowNanos) {
            return deadlineNanos != 0 && nowNanos - deadlineNanos >= 0;
        }
    }

    private final Object lock = new Object();
    private final Map<String, Entry> entries = new HashMap<>();
    private final Map<String, CompletableFuture<Void>> signals = new HashMap<>();
    private final DelayQueue<Expiry> expiries = new DelayQueue<>();
    private final String epoch;
    private long revision;
    private boolean closed;

    private final SnapshotFile file;
    private final Object persistLock = new Object();
    private long requestedGeneration;
    private long attemptedGeneration;
    private long flushedGeneration;
    private IOException lastPersistError;
    private boolean stopping;
    private final Thread writer;
    private final Thread expirer;

    /** Loads {@code file} if given and present; a missing file starts an empty table that will be written there. */
    MetadataTable(SnapshotFile file) throws IOException {
        this.file = file;
        SnapshotFile.Snapshot snapshot = file == null ? null : file.read();
        if (snapshot == null) {
            epoch = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong());
        } else {
            epoch = snapshot.epoch();
            revision = snapshot.revision();
            long nowMillis = System.currentTimeMillis();
            long nowNanos = System.nanoTime();
            int expiredWhileDown = 0;
            for (SnapshotFile.Entry e : snapshot.entries()) {
                long deadline = 0;
                if (e.expiresAtMillis() != 0) {
                    long left = e.expiresAtMillis() - nowMillis;
                    if (left <= 0) {
                        expiredWhileDown++;
                        continue;
                    }
                    deadline = nowNanos + TimeUnit.MILLISECONDS.toNanos(left);
                    expiries.add(new Expiry(e.key(), e.revision(), deadline));
                }
                entries.put(e.key(), new Entry(e.value(), e.revision(), deadline, e.expiresAtMillis()));
            }
            LOG.info("loaded {} keys (revision {}) from {}; {} expired while the server was down", entries.size(),
                    revision, file.path(), expiredWhileDown);
        }
        this.expirer = Thread.ofPlatform().daemon().name("tent4j-metadata-expiry").start(this::expireLoop);
        this.writer = file == null ? null
                : Thread.ofPlatform().daemon().name("tent4j-metadata-writer").start(this::writeLoop);
    }

    String epoch() {
        return epoch;
    }

    int size() {
        synchronized (lock) {
            return entries.size();
        }
    }

    State get(String key) {
        synchronized (lock) {
            return stateOf(key);
        }
    }

    private State stateOf(String key) {
        Entry e = entries.get(key);
        if (e == null || e.expired(System.nanoTime())) {
            return new State(null, epoch + "-0");
        }
        return new State(e.value(), epoch + "-" + e.revision());
    }

    /**
     * Stores {@code value}; with {@code ttlMillis > 0} the key expires unless put again. Returns the persistence
     * generation to pass to {@link #awaitDurable(long)}.
     */
    long put(String key, byte[] value, long ttlMillis) {
        synchronized (lock) {
            long rev = ++revision;
            long deadline = 0;
            long expiresAt = 0;
            if (ttlMillis > 0) {
                deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ttlMillis);
                if (deadline == 0) {
                    deadline = 1;
                }
                expiresAt = System.currentTimeMillis() + ttlMillis;
                expiries.add(new Expiry(key, rev, deadline));
            }
            entries.put(key, new Entry(value, rev, deadline, expiresAt));
            signal(key);
            return requestPersist();
        }
    }

    Removal delete(String key) {
        synchronized (lock) {
            Entry e = entries.remove(key);
            if (e == null) {
                return new Removal(false, 0);
            }
            ++revision;
            signal(key);
            return new Removal(!e.expired(System.nanoTime()), requestPersist());
        }
    }

    /**
     * Long poll: returns the key's state as soon as its version differs from {@code knownVersion} ({@code null} =
     * at once), or {@code null} if it did not change within {@code timeoutMillis} or the table is closing.
     */
    State awaitChange(String key, String knownVersion, long timeoutMillis) throws InterruptedException {
        CompletableFuture<Void> signal;
        synchronized (lock) {
            State s = stateOf(key);
            if (knownVersion == null || !s.version().equals(knownVersion)) {
                return s;
            }
            if (closed || timeoutMillis <= 0) {
                return null;
            }
            signal = signals.computeIfAbsent(key, k -> new CompletableFuture<>());
        }
        try {
            signal.get(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            return null;
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
        synchronized (lock) {
            State s = stateOf(key);
            return s.version().equals(knownVersion) ? null : s;
        }
    }

    private void signal(String key) {
        CompletableFuture<Void> s = signals.remove(key);
        if (s != null) {
            s.complete(null);
        }
    }

    // ---------------------------------------------------------------------------------------------- expiry

    private void expireLoop() {
        while (true) {
            Expiry x;
            try {
                x = expiries.take();
            } catch (InterruptedException e) {
                return;
            }
            synchronized (lock) {
                if (closed) {
                    return;
                }
                Entry e = entries.get(x.key);
                // a later put replaced the entry this expiry was scheduled for; its own expiry is queued
                if (e != null && e.revision() == x.revision) {
                    entries.remove(x.key);
                    ++revision;
                    signal(x.key);
                    requestPersist();
                }
            }
        }
    }

    private static final class Expiry implements Delayed {
        final String key;
        final long revision;
        final long deadlineNanos;

        Expiry(String key, long revision, long deadlineNanos) {
            this.key = key;
            this.revision = revision;
            this.deadlineNanos = deadlineNanos;
        }

        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(deadlineNanos - System.nanoTime(), TimeUnit.NANOSECONDS);
        }

        @Override
        public int compareTo(Delayed o) {
            return Long.compare(getDelay(TimeUnit.NANOSECONDS), o.getDelay(TimeUnit.NANOSECONDS));
        }
    }

    // ---------------------------------------------------------------------------------------------- persistence

    /** Called with {@link #lock} held, after a change: asks the writer for a snapshot that includes it. */
    private long requestPersist() {
        if (file == null) {
            return 0;
        }
        synchronized (persistLock) {
            requestedGeneration++;
            persistLock.notifyAll();
            return requestedGeneration;
        }
    }

    /**
     * Waits until a snapshot including generation {@code generation} is on disk. Changes that arrive while one snapshot
     * is written share the next one (group commit).
     */
    void awaitDurable(long generation) throws IOException, InterruptedException {
        if (generation == 0) {
            return;
        }
        synchronized (persistLock) {
            while (flushedGeneration < generation && attemptedGeneration < generation) {
                persistLock.wait();
            }
            if (flushedGeneration < generation) {
                throw new IOException("cannot write " + file.path() + ": " + lastPersistError.getMessage(),
                        lastPersistError);
            }
        }
    }

    private void writeLoop() {
        while (true) {
            long target;
            synchronized (persistLock) {
                while (requestedGeneration == attemptedGeneration && !stopping) {
                    try {
                        persistLock.wait();
                    } catch (InterruptedException e) {
                        // only close() interrupts, after setting stopping; flush what is left first
                    }
                }
                if (requestedGeneration == attemptedGeneration) {
                    return;
                }
                target = requestedGeneration;
            }
            SnapshotFile.Snapshot snapshot;
            synchronized (lock) {
                List<SnapshotFile.Entry> list = new ArrayList<>(entries.size());
                long now = System.nanoTime();
                for (Map.Entry<String, Entry> me : entries.entrySet()) {
                    Entry e = me.getValue();
                    if (!e.expired(now)) {
                        list.add(new SnapshotFile.Entry(me.getKey(), e.value(), e.revision(), e.expiresAtMillis()));
                    }
                }
                snapshot = new SnapshotFile.Snapshot(epoch, revision, list);
            }
            IOException failure = null;
            try {
                file.write(snapshot);
            } catch (IOException | RuntimeException e) {
                failure = e instanceof IOException io ? io : new IOException(e);
                LOG.error("cannot write the metadata data file {}: {}", file.path(), e.toString());
            }
            synchronized (persistLock) {
                attemptedGeneration = target;
                if (failure == null) {
                    flushedGeneration = target;
                } else {
                    lastPersistError = failure;
                }
                persistLock.notifyAll();
            }
        }
    }

    /** Wakes every long poll; stops expiry; writes what is not yet on disk. */
    @Override
    public void close() {
        List<CompletableFuture<Void>> waiting;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            waiting = new ArrayList<>(signals.values());
            signals.clear();
        }
        waiting.forEach(f -> f.complete(null));
        expirer.interrupt();
        if (writer != null) {
            synchronized (persistLock) {
                stopping = true;
                persistLock.notifyAll();
            }
            try {
                writer.join(TimeUnit.SECONDS.toMillis(30));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
