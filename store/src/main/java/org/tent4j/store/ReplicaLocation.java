package org.tent4j.store;

/**
 * Where one replica's bytes live: a range of a segment contributed by some client.
 *
 * @param segmentId   the contributed segment's id (unique per mount)
 * @param engineSegment the transfer-engine segment name to open to reach the bytes
 * @param host        host of the contributing client (for nearest-replica choice)
 * @param address     address of the first byte in the owner's address space (the transfer's target offset)
 * @param length      bytes
 */
public record ReplicaLocation(String segmentId, String engineSegment, String host, long address, long length) {
}
