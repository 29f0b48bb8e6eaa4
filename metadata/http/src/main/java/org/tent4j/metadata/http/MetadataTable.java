package org.tent4j.metadata.http;

import java.io.IOException;
import java.time.Duration;
import java.util.Comparator;
import java.util.TreeSet;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.spi.TimeSource;

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
    /** Longest TTL a put may ask for (a year): larger ones would overflow deadline arithmetic. */
    static final long MAX_TTL_MILLIS = TimeUnit.DAYS.toMillis(365);
    /**
     * Shortest nap of the expiry sweeper: under a test clock that stands still just short of a deadline, the time
     * left never shrinks, and without a floor the sweeper would spin.
     */
    private static final long MIN_SWEEP_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    /** What a reader sees of one key. {@code value} is {@code null} when the key is absent. */
    record State(byte[] value, String version) {
        boolean present() {
            return value != null;
        }
    }

    /** The outcome of a delete: whether the key existed, and the persistence generation to wait for. */
    record Removal(boolean existed, long generation) {
    }

    /** One stored key; the expiry order holds the same objects, so a re-put replaces rather than adds. */
    private record Entry(String key, byte[] value, long revision, long deadlineNanos, long expiresAtMillis) {
        boolean expires() {
            return deadlineNanos != 0;
        }

        boolean expired(long nowNanos) {
            return deadlineNanos != 0 && nowNanos - deadlineNanos >= 0;
        }
    }

    /** Long polls parked on one key: one future they share, and how many wait, so the last to time out removes it. */
    private static final class Signal {
        final CompletableFuture<Void> changed = new CompletableFuture<>();
        int waiters;
    }

    /** Keys that expire, soonest first (nanoTime deadlines compared by difference, so wrap-around is harmless). */
    private static final Comparator<Entry> BY_DEADLINE = (x, y) -> {
        int c = Long.compare(x.deadlineNanos - y.deadlineNanos, 0);
        return c != 0 ? c : x.key.compareTo(y.key);
    };

    private final Object lock = new Object();
    private final Map<String, Entry> entries = new HashMap<>();
    private final Map<String, Signal> signals = new HashMap<>();
    private final TreeSet<Entry> expiries = new TreeSet<>(BY_DEADLINE);
    private final String epoch;
    private long revision;
    private boolean closed;

    private final TimeSource clock;
    private final SnapshotFile file;
    private final Duration durableTimeout;
    private final Object persistLock = new Object();
    private long requestedGeneration;
    private long attemptedGeneration;
    private long flushedGeneration;
    private IOException lastPersistError;
    private boolean stopping;
    private final Thread writer;
    private final Thread expirer;

    /**
     * Loads {@code file} if given and present; a missing file starts an empty table that will be written there. A
     * change not on disk within {@code durableTimeout} fails its {@link #awaitDurable} instead of waiting on.
     * {@code clock} governs TTLs only (deadlines, the persisted expiry times, the sweep), so tests can run them in
     * virtual time; waits on I/O and on long polls stay on real time.
     */
    MetadataTable(SnapshotFile file, Duration durableTimeout, TimeSource clock) throws IOException {
        this.clock = clock;
        this.file = file;
        this.durableTimeout = durableTimeout;
        SnapshotFile.Snapshot snapshot = file == null ? null : file.read();
        if (snapshot == null) {
            epoch = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong());
        } else {
            epoch = snapshot.epoch();
            revision = snapshot.revision();
            long nowMillis = clock.instant().toEpochMilli();
            long nowNanos = clock.nanoTime();
            int expiredWhileDown = 0;
            for (SnapshotFile.Entry e : snapshot.entries()) {
                long deadline = 0;
                if (e.expiresAtMillis() != 0) {
                    long left = e.expiresAtMillis() - nowMillis;
                    if (left <= 0) {
                        expiredWhileDown++;
                        continue;
                    }
                    deadline = deadlineAfter(nowNanos, left);
                }
                Entry entry = new Entry(e.key(), e.value(), e.revision(), deadline, e.expiresAtMillis());
                entries.put(e.key(), entry);
                if (entry.expires()) {
                    expiries.add(entry);
                }
            }
            LOG.info("loaded {} keys (revision {}) from {}; {} expired while the server was down", entries.size(),
                    revision, file.path(), expiredWhileDown);
        }
        this.expirer = Thread.ofPlatform().daemon().name("tent4j-metadata-expiry").start(this::expireLoop);
        this.writer = file == null ? null
                : Thread.ofPlatform().daemon().name("tent4j-metadata-writer").start(this::writeLoop);
    }

    /** A nanoTime deadline {@code millis} from {@code nowNanos}; never 0, which means "does not expire". */
    private static long deadlineAfter(long nowNanos, long millis) {
        long deadline = nowNanos + TimeUnit.MILLISECONDS.toNanos(millis);
        return deadline == 0 ? 1 : deadline;
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
        if (e == null || e.expired(clock.nanoTime())) {
            return new State(null, epoch + "-0");
        }
        return new State(e.value(), epoch + "-" + e.revision());
    }

    /**
     * Stores {@code value}; with {@code ttlMillis > 0} the key expires unless put again. Returns the persistence
     * generation to pass to {@link #awaitDurable(long)}.
     */
    long put(String key, byte[] value, long ttlMillis) {
        if (ttlMillis < 0 || ttlMillis > MAX_TTL_MILLIS) {
            throw new IllegalArgumentException("TTL must be 0.." + MAX_TTL_MILLIS + " ms, got " + ttlMillis);
        }
        synchronized (lock) {
            long rev = ++revision;
            long deadline = 0;
            long expiresAt = 0;
            if (ttlMillis > 0) {
                deadline = deadlineAfter(clock.nanoTime(), ttlMillis);
                expiresAt = clock.instant().toEpochMilli() + ttlMillis;
            }
            Entry entry = new Entry(key, value, rev, deadline, expiresAt);
            replace(entries.put(key, entry), entry);
            signal(key);
            return requestPersist();
        }
    }

    /** Keeps {@link #expiries} holding exactly the live entries that expire; wakes the expirer for a sooner one. */
    private void replace(Entry old, Entry now) {
        if (old != null && old.expires()) {
            expiries.remove(old);
        }
        if (now != null && now.expires()) {
            expiries.add(now);
            if (expiries.first() == now) {
                lock.notifyAll();
            }
        }
    }

    Removal delete(String key) {
        synchronized (lock) {
            Entry e = entries.remove(key);
            if (e == null) {
                return new Removal(false, 0);
            }
            replace(e, null);
            ++revision;
            signal(key);
            return new Removal(!e.expired(clock.nanoTime()), requestPersist());
        }
    }

    /**
     * Long poll: returns the key's state as soon as its version differs from {@code knownVersion} ({@code null} =
     * at once), or {@code null} if it did not change within {@code timeoutMillis} or the table is closing.
     */
    State awaitChange(String key, String knownVersion, long timeoutMillis) throws InterruptedException {
        Signal signal;
        synchronized (lock) {
            State s = stateOf(key);
            if (knownVersion == null || !s.version().equals(knownVersion)) {
                return s;
            }
            if (closed || timeoutMillis <= 0) {
                return null;
            }
            signal = signals.computeIfAbsent(key, k -> new Signal());
            signal.waiters++;
        }
        try {
            signal.changed.get(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            return null;
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        } finally {
            synchronized (lock) {
                // a poll that gives up must not leave its registration behind: keys nobody changes would pile up
                if (--signal.waiters == 0 && signals.get(key) == signal) {
                    signals.remove(key);
                }
            }
        }
        synchronized (lock) {
            State s = stateOf(key);
            return s.version().equals(knownVersion) ? null : s;
        }
    }

    /** Keys with at least one parked long poll (bounded by the polls in flight, not by the keys ever watched). */
    int watchedKeyCount() {
        synchronized (lock) {
            return signals.size();
        }
    }

    /** Keys that will expire (one entry per key however often it is re-put). */
    int pendingExpiryCount() {
        synchronized (lock) {
            return expiries.size();
        }
    }

    private void signal(String key) {
        Signal s = signals.remove(key);
        if (s != null) {
            s.changed.complete(null);
        }
    }

    // ---------------------------------------------------------------------------------------------- expiry

    private void expireLoop() {
        synchronized (lock) {
            while (!closed) {
                long wait = Long.MAX_VALUE;
                long now = clock.nanoTime();
                while (!expiries.isEmpty()) {
                    Entry first = expiries.first();
                    if (!first.expired(now)) {
                        // the clock's time left, slept in real time: under a test clock the sweep is only
                        // housekeeping, since reads check the deadline themselves
                        wait = Math.max(first.deadlineNanos() - now, MIN_SWEEP_WAIT_NANOS);
                        break;
                    }
                    expiries.pollFirst();
                    entries.remove(first.key());
                    ++revision;
                    signal(first.key());
                    requestPersist();
                }
                try {
                    if (wait == Long.MAX_VALUE) {
                        lock.wait();
                    } else {
                        TimeUnit.NANOSECONDS.timedWait(lock, wait);
                    }
                } catch (InterruptedException e) {
                    return;
                }
            }
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
        // real time, not the TTL clock: this bounds a wait on the disk, and a test clock that stands still would
        // turn a stuck write into a hang
        long deadline = System.nanoTime() + durableTimeout.toNanos();
        synchronized (persistLock) {
            while (flushedGeneration < generation && attemptedGeneration < generation) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new DurabilityTimeoutException("the change is in memory but not yet on disk: writing "
                            + file.path() + " has taken longer than " + durableTimeout.toMillis() + " ms");
                }
                TimeUnit.NANOSECONDS.timedWait(persistLock, left);
            }
            if (flushedGeneration < generation) {
                throw new IOException("cannot write " + file.path() + ": " + lastPersistError.getMessage(),
                        lastPersistError);
            }
        }
    }

    /** The data file did not take a change within the configured time (the disk is slow or stuck). */
    static final class DurabilityTimeoutException extends IOException {
        DurabilityTimeoutException(String message) {
            super(message);
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
            IOException failure = null;
            try {
                file.write(snapshot());
            } catch (IOException e) {
                failure = e;
            } catch (Throwable e) {
                // an Error (OutOfMemoryError above all) must not end this thread: every later change would wait on it
                failure = new IOException(e.toString(), e);
            }
            if (failure != null) {
                LOG.error("cannot write the metadata data file {}: {}", file.path(), failure.getMessage());
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

    /** The table now; values are shared, not copied (they are never modified), and the file streams them out. */
    private SnapshotFile.Snapshot snapshot() {
        synchronized (lock) {
            List<SnapshotFile.Entry> list = new ArrayList<>(entries.size());
            long now = clock.nanoTime();
            for (Entry e : entries.values()) {
                if (!e.expired(now)) {
                    list.add(new SnapshotFile.Entry(e.key(), e.value(), e.revision(), e.expiresAtMillis()));
                }
            }
            return new SnapshotFile.Snapshot(epoch, revision, list);
        }
    }

    /** Wakes every long poll; stops expiry; writes what is not yet on disk. */
    @Override
    public void close() {
        List<Signal> waiting;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            waiting = new ArrayList<>(signals.values());
            signals.clear();
        }
        waiting.forEach(w -> w.changed.complete(null));
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
