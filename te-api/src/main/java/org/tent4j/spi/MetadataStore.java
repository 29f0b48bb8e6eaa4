package org.tent4j.spi;

import java.time.Duration;
import java.util.Optional;

/**
 * A key-value store engines publish segment descriptors into. Keys are '/'-separated strings; values are opaque bytes
 * (the runtime stores compact JSON). Thread-safe. A store that cannot be reached fails with a
 * {@link org.tent4j.api.TransferException} with code METADATA_UNAVAILABLE whose message names {@link #uri()};
 * bad arguments fail with INVALID_ARGUMENT.
 */
public interface MetadataStore extends AutoCloseable {

    /** The store's URI with any password masked, for messages and logs. */
    String uri();

    Optional<byte[]> get(String key);

    /**
     * Stores a value. With a positive {@code ttl} the key disappears by itself unless {@code put} is called again
     * (or the lease kept alive) within {@code ttl}; {@link Duration#ZERO} stores it with no expiry. A backend may round
     * the TTL up to its own granularity (etcd: whole seconds, at least 2 s).
     */
    void put(String key, byte[] value, Duration ttl);

    /** Removes a key; returns whether it existed. */
    boolean delete(String key);

    /**
     * Calls {@code listener} for every change of {@code key} (put, delete, or expiry) until the returned handle is
     * closed. Delivery is at least once and in order per key; a put that leaves the value unchanged (a TTL refresh)
     * need not be reported. The listener runs on a store thread.
     */
    Watch watch(String key, MetadataListener listener);

    @Override
    void close();

    /** An active watch. */
    interface Watch extends AutoCloseable {
        @Override
        void close();
    }

    @FunctionalInterface
    interface MetadataListener {
        /** {@code value} is {@code null} when the key was deleted or expired. */
        void changed(String key, byte[] value);
    }
}
