package org.tent4j.store;

/**
 * Where one replica's bytes live: a range of a segment contributed by some client.
 *
 * @param segmentId     the contributed segment's id (unique per mount)
 * @param engineSegment the transfer-engine segment name to open to reach the bytes
 * @param host          host of the contributing client (for nearest-replica choice)
 * @param address       address of the first byte in the owner's address space (the transfer's target offset)
 * @param length        bytes
 * @param tier          MEMORY or DISK
 * @param crc32c        for a DISK replica, the CRC32C of the object's bytes recorded when they were made durable
 *                      (a read checks it); -1 for memory
 * @param file          for a DISK replica, the file on its node; empty for memory
 * @param fileOffset    for a DISK replica, the offset of the first byte in {@code file}; -1 for memory
 */
public record ReplicaLocation(String segmentId, String engineSegment, String host, long address, long length, Tier tier,
                              long crc32c, String file, long fileOffset) {

    public ReplicaLocation {
        file = file == null ? "" : file;
    }

    /** A memory replica. */
    public ReplicaLocation(String segmentId, String engineSegment, String host, long address, long length) {
        this(segmentId, engineSegment, host, address, length, Tier.MEMORY, -1, "", -1);
    }

    public boolean onDisk() {
        return tier == Tier.DISK;
    }
}
