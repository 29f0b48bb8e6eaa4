package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.zip.CRC32C;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/** Reads of disk replicas: each is checked whole against the CRC32C recorded when it was offloaded. */
final class DiskReads {
    private static final Logger LOG = LoggerFactory.getLogger(DiskReads.class);

    private DiskReads() {
    }

    /** Reads the whole disk replica {@code r} through the staging buffer, checks it, and copies {@code [start, ...)} out. */
    static StoreException readRange(ReplicaAccess client, String key, ReplicaLocation r, long start, List<MemorySegment> parts) {
        StagingBuffer.Lease lease = client.staging().borrow(Math.max(1, r.length()));
        try {
            MemorySegment whole = lease.segment().asSlice(0, r.length());
            Transfers reads = new Transfers(client, 1);
            reads.add(true, r, 0, whole);
            StoreException failed = reads.run().firstFailure(key, "reading", 0, 1);
            if (failed == null) {
                failed = verify(client, key, r, List.of(whole));
            }
            if (failed != null) {
                client.replicaFailovers.increment();
                return failed;
            }
            long off = start;
            for (MemorySegment p : parts) {
                long n = Math.min(p.byteSize(), r.length() - off);
                if (n > 0) {
                    MemorySegment.copy(whole, off, p, 0, n);
                }
                off += n;
            }
            return null;
        } finally {
            client.staging().release(lease);
        }
    }

    /**
     * Null if the first {@code r.length()} bytes of {@code parts} match the disk replica's CRC32C; else a
     * CHECKSUM_MISMATCH naming the key, segment, node, file and offset (counted, so the master's metrics show it).
     */
    static StoreException verify(ReplicaAccess client, String key, ReplicaLocation r, List<MemorySegment> parts) {
        CRC32C crc = new CRC32C();
        long left = r.length();
        for (MemorySegment p : parts) {
            long n = Math.min(left, p.byteSize());
            if (n > 0) {
                crc.update(p.asSlice(0, n).asByteBuffer());
            }
            left -= n;
        }
        if (crc.getValue() == r.crc32c()) {
            return null;
        }
        client.checksumFailures.increment();
        StoreException e = new StoreException(StoreError.CHECKSUM_MISMATCH, "key '" + key + "': " + r.length()
                + " bytes read from disk segment " + r.segmentId() + " of node " + r.engineSegment() + " (file " + r.file()
                + " at offset " + r.fileOffset() + ") have CRC32C " + Long.toHexString(crc.getValue()) + ", recorded "
                + Long.toHexString(r.crc32c()));
        LOG.warn("{}", e.getMessage());
        return e;
    }
}
