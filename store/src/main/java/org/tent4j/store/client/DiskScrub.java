package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.StoreException;
import org.tent4j.store.Tier;
import org.tent4j.store.proto.DiskReplica;
import org.tent4j.store.rpc.MasterClient;

/**
 * A node's scrub of its disk segment: the master lists the disk replicas it holds there (in pages), the node reads each
 * through its engine and checks it against its recorded CRC32C, and the master drops the ones that fail, so no reader is
 * ever handed them again (an object left with no replica is gone).
 */
final class DiskScrub {
    private static final Logger LOG = LoggerFactory.getLogger(DiskScrub.class);
    static final int PAGE = 1024;
    /** How often a long scrub logs how far it got. */
    private static final long PROGRESS_NANOS = 10_000_000_000L;

    private DiskScrub() {
    }

    static ScrubReport run(ReplicaAccess client, MasterClient master, DiskSegment disk) {
        long checked = 0;
        long dropped = 0;
        List<ScrubReport.Mismatch> corrupt = new ArrayList<>();
        long lastProgress = System.nanoTime();
        for (long from = 0; !Thread.currentThread().isInterrupted(); ) { // interrupted: the client closes
            List<DiskReplica> page = master.diskReplicas(client.id(), disk.spec.id(), from, PAGE);
            if (page.isEmpty()) {
                break;
            }
            from += page.size();
            List<DiskReplica> bad = new ArrayList<>();
            for (DiskReplica d : page) {
                checked++;
                ReplicaLocation r = new ReplicaLocation(disk.spec.id(), disk.spec.engineSegment(), disk.spec.host(),
                        disk.file.address() + d.getOffset(), d.getSize(), Tier.DISK, Integer.toUnsignedLong(d.getCrc32C()),
                        disk.spec.file(), d.getOffset());
                StoreException e = check(client, d.getKey(), r);
                if (e != null) {
                    LOG.warn("scrub of {}: {}", disk.spec.file(), e.getMessage());
                    corrupt.add(new ScrubReport.Mismatch(d.getKey(), disk.spec.file(), d.getOffset(), d.getSize(), e.getMessage()));
                    bad.add(d);
                }
            }
            if (!bad.isEmpty()) {
                dropped += master.dropDiskReplicas(client.id(), disk.spec.id(), bad);
            }
            if (System.nanoTime() - lastProgress >= PROGRESS_NANOS) {
                lastProgress = System.nanoTime();
                LOG.info("scrub of {}: {} disk replicas checked so far, {} corrupt", disk.spec.file(), checked, corrupt.size());
            }
        }
        return new ScrubReport(checked, corrupt, dropped);
    }

    /** Null if the replica reads back matching its CRC32C; else why not (a failed read counts as corrupt too). */
    private static StoreException check(ReplicaAccess client, String key, ReplicaLocation r) {
        StagingBuffer.Lease lease = client.staging().borrow(Math.max(1, r.length()));
        try {
            MemorySegment bytes = lease.segment().asSlice(0, r.length());
            Transfers read = new Transfers(client, 1);
            read.add(true, r, 0, bytes);
            StoreException failed = read.run().firstFailure(key, "scrubbing", 0, 1);
            return failed != null ? failed : DiskReads.verify(client, key, r, List.of(bytes));
        } finally {
            client.staging().release(lease);
        }
    }
}
