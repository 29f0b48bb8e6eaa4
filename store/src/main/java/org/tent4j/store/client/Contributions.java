package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.proto.DiskReplica;
import org.tent4j.store.rpc.MasterClient;

/**
 * The storage-node role: memory and the disk segment this client mounts on the master for everyone's replicas, the
 * thread running the master's tasks (offloads to that disk; repairs into that memory), and mounting them again when
 * the master forgot them.
 */
final class Contributions {
    private static final Logger LOG = LoggerFactory.getLogger(Contributions.class);
    private final ReplicaAccess access;
    private final MasterClient master;
    private final long offloadPollMillis;
    /**
     * This client's incarnation, sent with every mount: random, new for each client (so each start of a node), never
     * 0. A remount carries the same one, and the master keeps the segment's objects; a node started again carries
     * another, and the master drops the old segment's replicas (their bytes died with the old process). Random, not a
     * count: a restarted process remembers nothing of the one before it.
     */
    private final long incarnation = incarnation();
    /** This node's disk segment, once {@link #contributeDisk} ran. */
    private volatile DiskSegment disk;
    /** The thread running the master's tasks, while this node contributes a segment; null otherwise. */
    private volatile Offloader offloader;

    Contributions(ReplicaAccess access, long offloadPollMillis) {
        this.access = access;
        this.master = access.master;
        this.offloadPollMillis = offloadPollMillis;
    }

    private static long incarnation() {
        java.security.SecureRandom random = new java.security.SecureRandom();
        long v;
        do {
            v = random.nextLong();
        } while (v == 0);
        return v;
    }

    SegmentSpec contribute(long bytes) {
        RegisteredMemory mem = access.engine.allocate(bytes, Location.CPU, Permission.READ_WRITE);
        try {
            return mount(mem, true);
        } catch (RuntimeException e) {
            access.engine.unregister(mem);
            throw e;
        }
    }

    SegmentSpec contribute(RegisteredMemory memory) {
        return mount(memory, false);
    }

    private SegmentSpec mount(RegisteredMemory mem, boolean allocatedHere) {
        SegmentSpec spec = new SegmentSpec(UUID.randomUUID().toString(), access.engine.segmentName(), access.host,
                mem.address(), mem.length());
        mountProved(spec, mem);
        access.addContribution(new ReplicaAccess.Contribution(spec, mem, allocatedHere));
        synchronized (this) {
            if (offloader == null) {
                offloader = new Offloader(access, master, disk, offloadPollMillis);
            }
        }
        return spec;
    }

    /** Runs the master's tasks with {@code d} (null: memory only), or stops running them when nothing is contributed. */
    private void restartOffloader(DiskSegment d) {
        Offloader o = offloader;
        if (o != null) {
            o.close();
        }
        offloader = d != null || !access.contributions().isEmpty() ? new Offloader(access, master, d, offloadPollMillis) : null;
    }

    /**
     * Mounts {@code spec}, first writing the master's nonce at its base when the master asks for a mount proof (it
     * reads the nonce back through its own engine before mounting). The segment holds no object of the master's yet
     * (a first mount, or a remount after the master dropped it), so those bytes are free.
     */
    private void mountProved(SegmentSpec spec, RegisteredMemory mem) {
        byte[] nonce = master.mountChallenge(access.id(), spec);
        if (nonce.length > 0) {
            MemorySegment.copy(nonce, 0, mem.segment(), ValueLayout.JAVA_BYTE, 0, nonce.length);
        }
        master.mount(access.id(), spec, incarnation);
    }

    synchronized SegmentSpec contributeDisk(Path dir, long bytes) {
        if (disk != null) {
            throw new StoreException(StoreError.INVALID_PARAMS, "client " + access.id() + " already contributes disk segment "
                    + disk.spec.id() + " (" + disk.spec.file() + ")");
        }
        DiskSegment d = DiskSegment.open(access.engine, dir, bytes, access.host);
        try {
            master.mount(access.id(), d.spec, incarnation);
        } catch (RuntimeException e) {
            d.close();
            throw e;
        }
        disk = d;
        adopt(d);
        restartOffloader(d);
        return d.spec;
    }

    /**
     * Reports what the disk index holds (a restart's leftovers) to the master, which adopts each replica whose key has
     * no object or the same one; the node forgets the rest (tombstones). A failed report is logged: those objects are
     * offered again at the next mount, unless offloads reuse their ranges first.
     */
    private void adopt(DiskSegment d) {
        List<DiskIndex.Entry> held = d.index.entries();
        if (held.isEmpty()) {
            return;
        }
        Map<Long, Long> refused = new TreeMap<>();
        try {
            for (int i = 0; i < held.size(); i += DiskScrub.PAGE) {
                List<DiskIndex.Entry> page = held.subList(i, Math.min(held.size(), i + DiskScrub.PAGE));
                Map<Long, Long> sizes = new HashMap<>();
                List<DiskReplica> wire = new ArrayList<>(page.size());
                for (DiskIndex.Entry e : page) {
                    sizes.put(e.offset(), e.length());
                    wire.add(DiskReplica.newBuilder().setKey(e.key()).setOffset(e.offset()).setSize(e.length())
                            .setCrc32C(e.crc()).setPutId(e.putId()).build());
                }
                for (long off : master.adoptDiskReplicas(access.id(), d.spec.id(), wire)) {
                    refused.put(off, sizes.getOrDefault(off, 1L));
                }
            }
            d.index.append(List.of(), refused);
            LOG.info("disk segment {}: the master adopted {} of the {} objects its index held", d.spec.file(),
                    held.size() - refused.size(), held.size());
        } catch (StoreException | java.io.IOException e) {
            LOG.warn("disk segment {}: reporting the {} objects its index holds failed: {}", d.spec.file(), held.size(),
                    e.getMessage());
        }
    }

    ScrubReport scrubDisk() {
        DiskSegment d = disk;
        if (d == null) {
            throw new StoreException(StoreError.INVALID_PARAMS, "client " + access.id() + " contributes no disk segment to scrub");
        }
        return DiskScrub.run(access, master, d);
    }

    Optional<SegmentSpec> diskSegment() {
        DiskSegment d = disk;
        return d == null ? Optional.empty() : Optional.of(d.spec);
    }

    long offloadsCompleted() {
        Offloader o = offloader;
        return o == null ? 0 : o.completed.sum();
    }

    /** Records the disk index dropped when it was reopened (torn, or bytes not matching their CRC32C). */
    long diskRecordsDropped() {
        DiskSegment d = disk;
        return d == null ? 0 : d.index.dropped();
    }

    long duplicateOffloads() {
        Offloader o = offloader;
        return o == null ? 0 : o.duplicates.sum();
    }

    synchronized void withdrawDisk() {
        DiskSegment d = disk;
        if (d == null) {
            return;
        }
        disk = null;
        restartOffloader(null);
        try {
            master.unmount(access.id(), d.spec.id());
        } finally {
            d.close();
        }
    }

    void withdraw(String segmentId) {
        DiskSegment d = disk;
        if (d != null && d.spec.id().equals(segmentId)) {
            withdrawDisk();
            return;
        }
        ReplicaAccess.Contribution c = access.removeContribution(segmentId);
        if (c == null) {
            throw new StoreException(StoreError.SEGMENT_NOT_FOUND, "segment " + segmentId + " was not contributed by this client");
        }
        master.unmount(access.id(), segmentId);
        if (c.allocatedHere()) {
            access.engine.unregister(c.memory());
        }
    }

    List<SegmentSpec> specs() {
        return access.contributions().stream().map(ReplicaAccess.Contribution::spec).toList();
    }

    /** Mounts everything again on a master that dropped this client (its segments with it). */
    void remount() {
        List<ReplicaAccess.Contribution> mine = access.contributions();
        if (!mine.isEmpty()) {
            for (ReplicaAccess.Contribution c : mine) {
                mountProved(c.spec(), c.memory());
            }
            LOG.warn("master {} had dropped client {}; remounted {} segments", master.address(), access.id(), mine.size());
        }
        DiskSegment d = disk;
        if (d != null) {
            // the master forgot what the file held: what the index holds is offered again
            master.mount(access.id(), d.spec, incarnation);
            offloader.remounted();
            adopt(d);
        }
    }

    /** Unmounts the disk segment, logging (not throwing) a failure: for close. */
    void closeDisk() {
        try {
            withdrawDisk();
        } catch (StoreException e) {
            LOG.warn("unmounting the disk segment on close failed: {}", e.getMessage());
        }
    }

    /** Unmounts every memory segment, logging (not throwing) what fails: for close. */
    void closeMemory() {
        synchronized (this) {
            Offloader o = offloader;
            offloader = null;
            if (o != null) {
                o.close();
            }
        }
        for (SegmentSpec spec : specs()) {
            try {
                withdraw(spec.id());
            } catch (StoreException e) {
                LOG.warn("unmounting segment {} on close failed: {}", spec.id(), e.getMessage());
            }
        }
    }
}
