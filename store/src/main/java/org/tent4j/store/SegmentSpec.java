package org.tent4j.store;

/**
 * A segment a client contributes: {@code size} bytes at {@code base} in its engine's address space.
 *
 * @param id            unique id of this mount (a UUID string)
 * @param engineSegment the client's transfer-engine segment name, which peers open to reach the bytes
 * @param host          the client's host, for locality
 * @param base          address of the first byte (for a DISK segment: the registered file's base address)
 * @param size          bytes
 * @param tier          MEMORY (registered memory) or DISK (a registered file)
 * @param file          the file's path on its node for a DISK segment (named in errors), empty for memory
 */
public record SegmentSpec(String id, String engineSegment, String host, long base, long size, Tier tier, String file) {

    public SegmentSpec {
        if (tier == null) {
            throw new IllegalArgumentException("segment " + id + " has no tier");
        }
        file = file == null ? "" : file;
    }

    /** A memory segment. */
    public SegmentSpec(String id, String engineSegment, String host, long base, long size) {
        this(id, engineSegment, host, base, size, Tier.MEMORY, "");
    }
}
