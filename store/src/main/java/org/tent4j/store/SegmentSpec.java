package org.tent4j.store;

/**
 * A segment a client contributes: {@code size} bytes at {@code base} in its engine's address space.
 *
 * @param id            unique id of this mount (a UUID string)
 * @param engineSegment the client's transfer-engine segment name, which peers open to reach the bytes
 * @param host          the client's host, for locality
 * @param base          address of the first byte
 * @param size          bytes
 */
public record SegmentSpec(String id, String engineSegment, String host, long base, long size) {
}
