package org.tent4j.api;

import java.time.Duration;
import java.util.Optional;

/**
 * Key/value access to the engine's configured metadata stores (etcd, Redis, HTTP, {@code memory://}), confined to one
 * namespace so an application's keys never collide with the engine's segment descriptors or another application's
 * keys. Obtained from {@link TransferEngine#metadataNamespace}. Writes go to every configured store that answers,
 * reads take the first store that has the key. Keys are 1 to 256 characters of {@code [A-Za-z0-9._/-]}; values are
 * opaque bytes of at most {@link #MAX_VALUE} bytes. Thread-safe.
 *
 * <p>Errors are {@link TransferException}s: INVALID_ARGUMENT naming the bad key or size, METADATA_UNAVAILABLE naming
 * the store when none answers, TIMEOUT from {@link #await}.
 */
public interface MetadataNamespace {
    /** The largest value a namespace stores (the engine's control-plane message limit, so any value can be relayed). */
    int MAX_VALUE = 1 << 20;

    /**
     * The namespace's name.
     *
     * @return the name given to {@link TransferEngine#metadataNamespace}
     */
    String name();

    /**
     * Stores {@code value} under {@code key}; a positive {@code ttl} makes it expire unless put again in time.
     *
     * @param key   the key
     * @param value at most {@link #MAX_VALUE} bytes; copied before this returns
     * @param ttl   how long it lives, or zero for no expiry
     */
    void put(String key, byte[] value, Duration ttl);

    /**
     * Reads a key.
     *
     * @param key the key
     * @return its value, or empty when no store has it
     */
    Optional<byte[]> get(String key);

    /**
     * Waits up to {@code timeout} for {@code key} to exist (watching, not polling) and returns its value.
     *
     * @param key     the key
     * @param timeout how long to wait
     * @return its value
     * @throws TransferException TIMEOUT naming the key when it did not appear in time
     */
    byte[] await(String key, Duration timeout);

    /**
     * Removes a key; returns whether it existed.
     *
     * @param key the key
     * @return {@code true} if some store held it
     */

    boolean delete(String key);
}
