package org.tent4j.store;

/**
 * Where a segment's bytes live. MEMORY segments take every new object; DISK segments (a file a node registered with
 * its engine) take only objects demoted from memory by eviction, each with a CRC32C recorded when its bytes were
 * made durable there.
 */
public enum Tier {
    MEMORY,
    DISK
}
