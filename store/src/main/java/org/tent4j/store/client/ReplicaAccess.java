package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.rpc.MasterClient;

/**
 * What every part of a client reaches replicas through: who this client is to the master (its id, its host, the
 * connection), the engine's handles on other clients' segments, the memory this client contributed (copied directly,
 * no engine), the staging memory, the read counters, and the byte moves themselves (reading a value from the nearest
 * replica that works, writing one into every replica). {@link Transfers} and the sessions depend on this part, never
 * on the {@link StoreClient} facade.
 */
final class ReplicaAccess {
    /** How many times a read is retried when its lease ends while bytes are moving. */
    static final int READ_ATTEMPTS = 4;

    final TransferEngine engine;
    final LocalMemoryCheck memory;
    final MasterClient master;
    final String host;
    final StoreClock clock;
    /** Issued by the master at connect; a new one if the master stops knowing this client's credential (restarted). */
    private volatile String clientId;
    private final long stagingBytes;
    private volatile StagingBuffer staging;
    private final Map<String, Contribution> contributions = new ConcurrentHashMap<>();
    private final Map<String, SegmentHandle> openSegments = new ConcurrentHashMap<>();

    final LongAdder leaseExpiredReads = new LongAdder();
    final LongAdder replicaFailovers = new LongAdder();
    /** Reads of disk replicas whose bytes did not match their CRC32C (reported to the master with the pings). */
    final LongAdder checksumFailures = new LongAdder();

    /** Memory this client mounted as a segment, and whether it allocated it (and so frees it on withdraw). */
    record Contribution(SegmentSpec spec, RegisteredMemory memory, boolean allocatedHere) {
    }

    ReplicaAccess(TransferEngine engine, MasterClient master, String host, StoreClock clock, long stagingBytes) {
        this.engine = engine;
        this.memory = new LocalMemoryCheck(engine);
        this.master = master;
        this.host = host;
        this.clock = clock;
        this.stagingBytes = stagingBytes;
    }

    String id() {
        return clientId;
    }

    void id(String clientId) {
        this.clientId = clientId;
    }

    void addContribution(Contribution c) {
        contributions.put(c.spec().id(), c);
    }

    Contribution removeContribution(String segmentId) {
        return contributions.remove(segmentId);
    }

    List<Contribution> contributions() {
        return List.copyOf(contributions.values());
    }

    /** Whether this client contributed the segment {@code segmentId}. */
    boolean contributes(String segmentId) {
        return contributions.containsKey(segmentId);
    }

    /** The range of a replica in memory this client contributed (copied directly, no engine), else null. */
    MemorySegment contributedRange(ReplicaLocation r, long offset, long length) {
        Contribution mine = contributions.get(r.segmentId());
        return mine == null ? null : mine.memory().segment().asSlice(r.address() - mine.spec().base() + offset, length);
    }

    /** The engine's handle on a replica's segment, opened once per client. */
    SegmentHandle segment(ReplicaLocation r) {
        // this engine's own segment (its disk file) is reached directly, not through a peer connection to itself
        return openSegments.computeIfAbsent(r.engineSegment(),
                name -> name.equals(engine.segmentName()) ? engine.localSegment() : engine.openSegment(name));
    }

    void forgetSegment(ReplicaLocation r) {
        openSegments.remove(r.engineSegment());
    }

    /** Memory replicas in this process first, then on this host, then the rest; disk replicas last. */
    List<ReplicaLocation> nearestFirst(List<ReplicaLocation> replicas) {
        if (replicas.size() <= 1) {
            return replicas;
        }
        List<ReplicaLocation> out = new ArrayList<>(replicas);
        out.sort(Comparator.comparingInt(r -> r.onDisk() ? 3
                : contributions.containsKey(r.segmentId()) ? 0 : host.equals(r.host()) ? 1 : 2));
        return out;
    }

    StagingBuffer staging() {
        StagingBuffer s = staging;
        if (s == null) {
            synchronized (this) {
                if (staging == null) {
                    staging = new StagingBuffer(engine, stagingBytes);
                }
                s = staging;
            }
        }
        return s;
    }

    /** The size of the staging memory (what a copying call stages at once without registering more). */
    long stagingBytes() {
        return stagingBytes;
    }

    /** Frees the staging memory if it was ever allocated. */
    void closeStaging() {
        if (staging != null) {
            staging.close();
        }
    }

    /**
     * Reads the value from the first replica that works into {@code parts}; null on success, else why not. A read
     * that ends at or after {@code deadline} is discarded (LEASE_EXPIRED), since the master may have reused the bytes.
     */
    StoreException readReplicas(String key, List<ReplicaLocation> replicas, long start, List<MemorySegment> parts, long deadline) {
        StoreException last = null;
        for (ReplicaLocation r : replicas) {
            if (r.onDisk() && (start != 0 || totalSize(parts) < r.length())) {
                // a disk replica is checked whole against its CRC32C: part of it is read whole, then copied out
                StoreException e = DiskReads.readRange(this, key, r, start, parts);
                if (e != null) {
                    last = e;
                    continue;
                }
                return leaseEnded(key, deadline);
            }
            Transfers reads = new Transfers(this, parts.size());
            long off = start;
            for (MemorySegment p : parts) {
                long n = Math.min(p.byteSize(), r.length() - off);
                if (n > 0) {
                    reads.add(true, r, off, p.asSlice(0, n));
                }
                off += n;
            }
            StoreException failed = reads.run().firstFailure(key, "reading", 0, reads.size());
            if (failed == null && r.onDisk()) {
                failed = DiskReads.verify(this, key, r, parts);
            }
            if (failed != null) {
                replicaFailovers.increment();
                last = failed;
                continue;
            }
            return leaseEnded(key, deadline);
        }
        return last != null ? last : ClientErrors.noReplica(key);
    }

    /** A read that finished after its lease: its bytes may be another object's, so it is refused and counted. */
    private StoreException leaseEnded(String key, long deadline) {
        if (clock.nanoTime() < deadline) {
            return null;
        }
        leaseExpiredReads.increment();
        return new StoreException(StoreError.LEASE_EXPIRED, "read of key '" + key
                + "' finished after its lease ended; the bytes were discarded");
    }

    /** Writes {@code src} into every replica at {@code offset}; null on success, else the first failure. */
    StoreException writeAt(String key, List<ReplicaLocation> replicas, long offset, MemorySegment src) {
        Transfers writes = new Transfers(this, replicas.size());
        for (ReplicaLocation r : replicas) {
            writes.add(false, r, offset, src);
        }
        return writes.run().firstFailure(key, "writing", 0, writes.size());
    }

    /** The host part of an engine segment name ({@code host:port}). */
    static String hostOf(String segmentName) {
        int colon = segmentName.lastIndexOf(':');
        return colon > 0 ? segmentName.substring(0, colon) : segmentName;
    }

    static long totalSize(List<MemorySegment> parts) {
        long n = 0;
        for (MemorySegment p : parts) {
            n += p.byteSize();
        }
        return n;
    }
}
