package org.tent4j.runtime.metadata;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.spi.TimeSource;

/**
 * A metadata store shared by the engines of one JVM ({@code memory://<name>}): no server to install, for tests and
 * embedded use. Expiry is checked on read, so a lapsed key vanishes without a reaper thread.
 */
public final class InMemoryMetadataStore implements MetadataStore {
    private static final Map<String, Space> SPACES = new ConcurrentHashMap<>();

    private final String uri;
    private final Space space;
    private final TimeSource clock;
    private volatile boolean closed;

    private InMemoryMetadataStore(String uri, Space space, TimeSource clock) {
        this.uri = uri;
        this.space = space;
        this.clock = clock;
    }

    /**
     * Opens {@code memory://name} reading time from {@code clock} (expiries follow it: tests run TTLs in virtual
     * time). Stores of one name share their entries whatever their clocks.
     */
    public static InMemoryMetadataStore open(URI uri, TimeSource clock) {
        String name = uri.getAuthority() == null ? "default" : uri.getAuthority();
        return new InMemoryMetadataStore(uri.toString(), SPACES.computeIfAbsent(name, n -> new Space()), clock);
    }

    private record Entry(byte[] value, long expiresAtNanos) {
        boolean live(long now) {
            return expiresAtNanos == 0 || now - expiresAtNanos < 0;
        }
    }

    private record WatchEntry(String key, MetadataListener listener) {
    }

    private static final class Space {
        final Map<String, Entry> entries = new ConcurrentHashMap<>();
        final List<WatchEntry> watches = new CopyOnWriteArrayList<>();

        void fire(String key, byte[] value) {
            for (WatchEntry w : watches) {
                if (w.key.equals(key)) {
                    w.listener.changed(key, value);
                }
            }
        }
    }

    @Override
    public String uri() {
        return uri;
    }

    private void open() {
        if (closed) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "metadata store " + uri + " is closed");
        }
    }

    @Override
    public Optional<byte[]> get(String key) {
        open();
        Entry e = space.entries.get(key);
        if (e == null) {
            return Optional.empty();
        }
        if (!e.live(clock.nanoTime())) {
            if (space.entries.remove(key, e)) {
                space.fire(key, null);
            }
            return Optional.empty();
        }
        return Optional.of(e.value.clone());
    }

    @Override
    public void put(String key, byte[] value, Duration ttl) {
        open();
        long exp = ttl.isZero() ? 0 : clock.nanoTime() + ttl.toNanos();
        space.entries.put(key, new Entry(value.clone(), exp == 0 ? 0 : exp | 1));
        space.fire(key, value.clone());
    }

    @Override
    public boolean delete(String key) {
        open();
        boolean existed = space.entries.remove(key) != null;
        if (existed) {
            space.fire(key, null);
        }
        return existed;
    }

    @Override
    public Watch watch(String key, MetadataListener listener) {
        open();
        WatchEntry w = new WatchEntry(key, listener);
        space.watches.add(w);
        return () -> space.watches.remove(w);
    }

    @Override
    public void close() {
        closed = true;
    }

    /** Serves {@code memory://name}. */
    public static final class Provider implements MetadataStoreProvider {
        @Override
        public List<String> schemes() {
            return List.of("memory");
        }

        @Override
        public String description() {
            return "in-JVM metadata store shared by engines of one process (memory://<name>)";
        }

        @Override
        public MetadataStore open(URI uri, Map<String, String> options) {
            return InMemoryMetadataStore.open(uri, TimeSource.SYSTEM);
        }
    }
}
