package org.tent4j.runtime.metadata;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Credentials;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.TimeSource;

/**
 * Descriptors in one or more metadata stores, under {@code tent4j/<cluster>/segments/<name>}. Publishing goes to every
 * store that answers; fetching asks them in order and takes the first answer. A store that fails is skipped with one
 * WARN line naming it and the cause (and one INFO line once it answers again), so discovery survives a dead store
 * without a restart. A store that could not be opened is opened again in the background, at most once a second after
 * the last try ended, never on a caller's path (a dead store's probe takes seconds); once it opens, this engine's
 * descriptors are written to it at once, not at the next republish.
 *
 * <p>With a single store, start-up fails if it cannot be reached; with several, at least one must answer.
 */
public final class StoreDirectory implements SegmentDirectory {
    private static final Logger log = LoggerFactory.getLogger(StoreDirectory.class);
    private static final long REOPEN_INTERVAL_NANOS = 1_000_000_000L;

    private final List<Slot> slots = new ArrayList<>();
    private final String prefix;
    private final Duration ttl;
    private final TimeSource clock;
    /** What this engine published, by key: written to a store as soon as it opens again. */
    private final Map<String, Published> published = new ConcurrentHashMap<>();
    private final ExecutorService reopener = Executors.newSingleThreadExecutor(
            Thread.ofPlatform().daemon().name("tent4j-metadata-reopen").factory());

    private record Published(byte[] value, Duration ttl) {
    }

    private volatile boolean closed;

    /** A configured store: opened lazily, reopened after a failed open. */
    private static final class Slot {
        final URI uri;
        final MetadataStoreProvider provider;
        final Map<String, String> options;
        volatile MetadataStore store;
        volatile boolean down;
        long lastOpenAttempt;
        /** A background open is under way. */
        boolean reopening;
        final List<Runnable> rewatch = new ArrayList<>();

        Slot(URI uri, MetadataStoreProvider provider, Map<String, String> options) {
            this.uri = uri;
            this.provider = provider;
            this.options = options;
        }

        String name() {
            MetadataStore s = store;
            return s != null ? s.uri() : Credentials.mask(uri);
        }
    }

    public record Target(URI uri, MetadataStoreProvider provider, Map<String, String> options) {
    }

    public StoreDirectory(List<Target> targets, String cluster, Duration ttl) {
        this(targets, cluster, ttl, TimeSource.SYSTEM);
    }

    /** @param clock when to try reopening a store that failed (tests pass a virtual one) */
    public StoreDirectory(List<Target> targets, String cluster, Duration ttl, TimeSource clock) {
        this.clock = clock;
        this.prefix = "tent4j/" + cluster + "/segments/";
        this.ttl = ttl;
        TransferException first = null;
        for (Target t : targets) {
            Slot s = new Slot(t.uri(), t.provider(), t.options());
            slots.add(s);
            try {
                open(s);
            } catch (TransferException e) {
                first = first == null ? e : first;
                if (targets.size() > 1) {
                    s.down = true;
                    log.warn("metadata store {} skipped at start-up: {}", s.name(), e.getMessage());
                }
            }
        }
        if (first != null && (targets.size() == 1 || slots.stream().allMatch(s -> s.store == null))) {
            close();
            throw first;
        }
    }

    private MetadataStore open(Slot s) {
        MetadataStore m = s.store;
        if (m != null) {
            return m;
        }
        synchronized (s) {
            if (s.store == null) {
                s.lastOpenAttempt = clock.nanoTime();
                s.store = s.provider.open(s.uri, s.options);
                s.rewatch.forEach(Runnable::run);
            }
            return s.store;
        }
    }

    /** The slot's store; {@code null} if it is not open now (it is then opened again in the background). */
    private MetadataStore usable(Slot s) {
        MetadataStore m = s.store;
        if (m == null) {
            reopenLater(s);
        }
        return m;
    }

    /** Opens the slot's store on the reopen thread, at most once a second after the last try ended. */
    private void reopenLater(Slot s) {
        synchronized (s) {
            if (s.reopening || clock.nanoTime() - s.lastOpenAttempt < REOPEN_INTERVAL_NANOS) {
                return;
            }
            s.reopening = true;
        }
        try {
            reopener.execute(() -> {
                try {
                    MetadataStore m = open(s);
                    synchronized (s) {
                        if (closed) {
                            // closed while the store was opening: close() may have missed it
                            m.close();
                            return;
                        }
                    }
                    up(s);
                    published.forEach((key, p) -> {
                        try {
                            m.put(key, p.value(), p.ttl());
                        } catch (TransferException e) {
                            skip(s, "publish", e);
                        }
                    });
                } catch (TransferException e) {
                    skip(s, "open", e);
                } finally {
                    synchronized (s) {
                        s.reopening = false;
                        s.lastOpenAttempt = clock.nanoTime();
                    }
                }
            });
        } catch (RejectedExecutionException closed) {
            synchronized (s) {
                s.reopening = false;
            }
        }
    }

    public String key(String segmentName) {
        return prefix + segmentName;
    }

    @Override
    public void publish(SegmentDescriptor descriptor) {
        byte[] value = DescriptorCodec.encode(descriptor);
        published.put(key(descriptor.name()), new Published(value, ttl));
        int ok = 0;
        TransferException last = null;
        for (Slot s : slots) {
            MetadataStore m = usable(s);
            if (m == null) {
                continue;
            }
            try {
                m.put(key(descriptor.name()), value, ttl);
                up(s);
                ok++;
            } catch (TransferException e) {
                skip(s, "publish", e);
                last = e;
            }
        }
        if (ok == 0) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "cannot publish segment '" + descriptor.name()
                    + "': no metadata store answered" + (last == null ? "" : " (last: " + last.getMessage() + ")"), last);
        }
    }

    @Override
    public SegmentDescriptor fetch(String segmentName) {
        TransferException last = null;
        for (Slot s : slots) {
            MetadataStore m = usable(s);
            if (m == null) {
                continue;
            }
            Optional<byte[]> v;
            try {
                v = m.get(key(segmentName));
                up(s);
            } catch (TransferException e) {
                skip(s, "lookup", e);
                last = e;
                continue;
            }
            if (v.isPresent()) {
                // outside the try: a malformed or foreign descriptor is the answer, not an unavailable store
                return DescriptorCodec.decodeFor(segmentName, v.get(), m.uri());
            }
        }
        if (last != null && slots.size() == 1) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "cannot open segment '" + segmentName + "': " + last.getMessage(), last);
        }
        throw new TransferException(ErrorCode.UNKNOWN_SEGMENT, "segment '" + segmentName + "' is not published in "
                + slots.stream().map(Slot::name).toList() + (last == null ? "" : " (a store failed: " + last.getMessage() + ")"));
    }

    @Override
    public AutoCloseable watch(String segmentName, Consumer<SegmentDescriptor> listener) {
        List<MetadataStore.Watch> watches = new ArrayList<>();
        MetadataStore.MetadataListener l = (key, value) -> {
            try {
                listener.accept(value == null ? null : DescriptorCodec.decodeFor(segmentName, value, "watch of " + key));
            } catch (TransferException e) {
                log.warn("ignoring a malformed descriptor of segment '{}': {}", segmentName, e.getMessage());
            }
        };
        for (Slot s : slots) {
            Runnable start = () -> {
                try {
                    MetadataStore m = s.store;
                    if (m != null) {
                        synchronized (watches) {
                            watches.add(m.watch(key(segmentName), l));
                        }
                    }
                } catch (TransferException e) {
                    skip(s, "watch", e);
                }
            };
            synchronized (s) {
                if (s.store == null) {
                    s.rewatch.add(start);
                    continue;
                }
            }
            start.run();
        }
        return () -> {
            synchronized (watches) {
                watches.forEach(MetadataStore.Watch::close);
                watches.clear();
            }
        };
    }

    private void skip(Slot s, String what, TransferException e) {
        if (!s.down) {
            s.down = true;
            log.warn("metadata store {} skipped for {}: {}", s.name(), what, e.getMessage());
        }
    }

    private void up(Slot s) {
        if (s.down) {
            s.down = false;
            log.info("metadata store {} answers again", s.name());
        }
    }

    @Override
    public void unpublish(String segmentName) {
        published.remove(key(segmentName));
        for (Slot s : slots) {
            MetadataStore m = s.store;
            if (m == null) {
                continue;
            }
            try {
                m.delete(key(segmentName));
            } catch (TransferException e) {
                log.debug("cannot remove {} from {}: {}", segmentName, s.name(), e.getMessage());
            }
        }
    }

    // ---------------------------------------------------------------- raw keys (for MetadataExchange's namespaces)

    /** The key prefix of this cluster ({@code tent4j/<cluster>/}); segment descriptors live under its {@code segments/}. */
    public String clusterPrefix() {
        return prefix.substring(0, prefix.length() - "segments/".length());
    }

    /** Stores {@code value} in every store that answers; fails naming {@code what} when none does. */
    public void put(String key, byte[] value, Duration ttl, String what) {
        int ok = 0;
        TransferException last = null;
        for (Slot s : slots) {
            MetadataStore m = usable(s);
            if (m == null) {
                continue;
            }
            try {
                m.put(key, value, ttl);
                up(s);
                ok++;
            } catch (TransferException e) {
                skip(s, what, e);
                last = e;
            }
        }
        if (ok == 0) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "cannot " + what + ": no metadata store answered"
                    + (last == null ? "" : " (last: " + last.getMessage() + ")"), last);
        }
    }

    /** The value of the first store that has {@code key}; fails only when no store answered at all. */
    public Optional<byte[]> get(String key, String what) {
        TransferException last = null;
        boolean answered = false;
        for (Slot s : slots) {
            MetadataStore m = usable(s);
            if (m == null) {
                continue;
            }
            try {
                Optional<byte[]> v = m.get(key);
                up(s);
                answered = true;
                if (v.isPresent()) {
                    return v;
                }
            } catch (TransferException e) {
                skip(s, what, e);
                last = e;
            }
        }
        if (!answered) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "cannot " + what + ": no metadata store answered"
                    + (last == null ? "" : " (last: " + last.getMessage() + ")"), last);
        }
        return Optional.empty();
    }

    /** Removes {@code key} from every store that answers; whether any had it. */
    public boolean delete(String key) {
        boolean existed = false;
        for (Slot s : slots) {
            MetadataStore m = usable(s);
            if (m == null) {
                continue;
            }
            try {
                existed |= m.delete(key);
            } catch (TransferException e) {
                skip(s, "delete " + key, e);
            }
        }
        return existed;
    }

    /** Watches {@code key} in every open store until the handle is closed. */
    public AutoCloseable watchKey(String key, MetadataStore.MetadataListener listener) {
        List<MetadataStore.Watch> watches = new ArrayList<>();
        for (Slot s : slots) {
            MetadataStore m = s.store;
            if (m != null) {
                try {
                    watches.add(m.watch(key, listener));
                } catch (TransferException e) {
                    skip(s, "watch " + key, e);
                }
            }
        }
        return () -> watches.forEach(MetadataStore.Watch::close);
    }

    @Override
    public void close() {
        closed = true;
        reopener.shutdownNow();
        for (Slot s : slots) {
            synchronized (s) {
                MetadataStore m = s.store;
                if (m != null) {
                    m.close();
                }
            }
        }
    }
}
