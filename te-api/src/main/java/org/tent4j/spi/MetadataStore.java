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

    /**
     * The store's URI with any password masked, for messages and logs.
     *
     * @return the masked URI
     */
    String uri();

    /**
     * Reads a key. Blocks on the store, within the store's own timeout.
     *
     * @param key the key
     * @return a copy of the value the caller owns, or empty
     */
    Optional<byte[]> get(String key);

    /**
     * Stores a value. With a positive {@code ttl} the key disappears by itself unless {@code put} is called again
     * (or the lease kept alive) within {@code ttl}; {@link Duration#ZERO} stores it with no expiry. A backend may round
     * the TTL up to its own granularity (etcd: whole seconds, at least 2 s).
     *
     * @param key   the key
     * @param value the value; the store does not keep the array
     * @param ttl   how long it lives, or {@link Duration#ZERO}
     */
    void put(String key, byte[] value, Duration ttl);

    /**
     * Removes a key; returns whether it existed.
     *
     * @param key the key
     * @return {@code true} if it existed
     */
    boolean delete(String key);

    /**
     * Calls {@code listener} for every change of {@code key} (put, delete, or expiry) until the returned handle is
     * closed. Delivery is at least once and in order per key; a put that leaves the value unchanged (a TTL refresh)
     * need not be reported. The listener runs on a store thread.
     *
     * @param key      the key to watch
     * @param listener called on a store thread; it must not block nor call back into the store synchronously
     * @return the watch; closing it stops delivery
     */
    Watch watch(String key, MetadataListener listener);

    /** Closes connections and stops every watch; keys with a TTL then expire by themselves. */
    @Override
    void close();

    /** An active watch. */
    interface Watch extends AutoCloseable {
        /** Stops delivery; a listener call already running may still finish. */
        @Override
        void close();
    }

    /** Told of a watched key's changes. */
    @FunctionalInterface
    interface MetadataListener {
        /**
         * {@code value} is {@code null} when the key was deleted or expired.
         *
         * @param key   the watched key
         * @param value the new value, or {@code null}
         */

        void changed(String key, byte[] value);
    }
}
