package org.tent4j.store.client;

/** What a put did. A put of a key another writer still has in flight is an error, never one of these. */
public enum PutResult {
    STORED,
    /** The key was already readable; the store keeps the first value (use upsert to replace it). */
    ALREADY_EXISTS
}
