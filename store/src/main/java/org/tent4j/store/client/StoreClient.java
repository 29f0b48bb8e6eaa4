package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.StoreSecurity;
import org.tent4j.store.master.MasterState;
import org.tent4j.store.master.RangeAllocator;
import org.tent4j.store.proto.CommitItem;
import org.tent4j.store.proto.CommitRequest;
import org.tent4j.store.proto.CommitResponse;
import org.tent4j.store.proto.PutEndRequest;
import org.tent4j.store.proto.PutStartRequest;
import org.tent4j.store.proto.PutStartResponse;
import org.tent4j.store.proto.ReplicaListResponse;
import org.tent4j.store.proto.ReserveRequest;
import org.tent4j.store.proto.Status;
import org.tent4j.store.rpc.MasterClient;
import org.tent4j.store.rpc.SegmentTable;
import org.tent4j.store.rpc.Wire;

/**
 * A store client: asks the master where objects live and moves their bytes itself, through the transfer engine,
 * to and from other clients' segments (a plain copy when the replica is in memory this client contributed).
 *
 * <p>Two roles, as in Mooncake: a requester (put, get, remove, exist, with batch, zero-copy and multi-buffer forms)
 * and, after {@link #contribute}, a storage node whose memory holds replicas for everyone.
 *
 * <p>Reads never return bytes a lease did not cover: the lease's deadline is counted from before the master was
 * asked, and a read that finishes after it is discarded and retried. A replica that cannot be read is skipped for the
 * next nearest (this process, then this host, then others).
 */
public final class StoreClient implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StoreClient.class);
    /** How many times a read is retried when its lease ends while bytes are moving. */
    static final int READ_ATTEMPTS = 4;
    /** Keys whose replica lists a batch read fetches at once, before it adapts to how fast reads go. */
    static final int FIRST_WAVE = 256;

    private final TransferEngine engine;
    final LocalMemoryCheck memory;
    private final MasterClient master;
    /** Issued by the master at connect; a new one if the master stops knowing this client's credential (restarted). */
    private volatile String clientId;
    private final String host;
    private final StoreClock clock;
    private final long stagingBytes;
    private volatile StagingBuffer staging;
    private final Map<String, Contribution> contributions = new ConcurrentHashMap<>();
    private final Map<String, SegmentHandle> openSegments = new ConcurrentHashMap<>();
    private final ScheduledExecutorService heartbeats;
    private final long heartbeatMillis;
    private final long reservationBytes;
    /** Reservations not in use by a batch, by replica count; a batch takes one, carves it, and puts it back. */
    private final Map<Integer, ConcurrentLinkedQueue<Reserved>> reserved = new ConcurrentHashMap<>();
    /** When a reservation was last refused (no room): the next ask waits a second, so full stores cost no extra call. */
    private volatile long reserveRefusedAt = Long.MIN_VALUE;
    /** When the master last answered a ping or a commit. */
    private volatile long lastMasterContact = Long.MIN_VALUE;
    /**
     * A reservation is written into only while the master was heard from this recently: the master releases a
     * client's reservations when it expires (10 s of silence by default), and a client cut off from it must stop
     * writing into space that may be handed to others.
     */
    static final long RESERVATION_FRESH_NANOS = 3_000_000_000L;
    /**
     * A reservation left unused this long is retired, not written into: the master releases one unused for its put
     * release timeout (600 s by default) even while its client lives, and bytes written after that could land in space
     * handed to another object. A tenth of the default leaves the margin on this side.
     */
    static final long RESERVATION_IDLE_NANOS = 60_000_000_000L;

    final LongAdder leaseExpiredReads = new LongAdder();
    final LongAdder replicaFailovers = new LongAdder();
    /** Reads of disk replicas whose bytes did not match their CRC32C (reported to the master with the pings). */
    final LongAdder checksumFailures = new LongAdder();
    private long reportedLeaseExpiries;
    private long reportedChecksumFailures;
    /** This node's disk segment and the thread offloading to it, once {@link #contributeDisk} ran. */
    private volatile DiskSegment disk;
    private volatile Offloader offloader;
    private final long offloadPollMillis;
    private final RoomWait roomWait;

    private record Contribution(SegmentSpec spec, RegisteredMemory memory, boolean allocatedHere) {
    }

    private StoreClient(Builder b) {
        this.engine = b.engine;
        this.memory = new LocalMemoryCheck(engine);
        this.master = new MasterClient(b.masterAddress, b.rpcTimeout, b.security);
        this.host = b.host != null ? b.host : hostOf(engine.segmentName());
        this.clock = b.clock;
        this.stagingBytes = b.stagingBytes;
        this.reservationBytes = b.reservationBytes;
        this.offloadPollMillis = Math.max(1, b.offloadPollInterval.toMillis());
        this.roomWait = new RoomWait(b.rpcTimeout);
        if (b.heartbeatInterval.isZero()) {
            heartbeats = null;
        } else {
            heartbeats = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "store-client-heartbeat");
                t.setDaemon(true);
                return t;
            });
        }
        this.heartbeatMillis = b.heartbeatInterval.toMillis();
    }

    /** A client of the masters of a group ({@code host:port} each): calls go to its leader, followed on failover. */
    public static Builder builder(TransferEngine engine, List<String> masters) {
        return builder(engine, String.join(",", masters));
    }

    /** {@code masterAddress}: one master's {@code host:port}, or a group's separated by commas. */
    public static Builder builder(TransferEngine engine, String masterAddress) {
        return new Builder(engine, masterAddress);
    }

    public static final class Builder {
        private final TransferEngine engine;
        private final String masterAddress;
        private StoreSecurity security = StoreSecurity.NONE;
        private String host;
        private StoreClock clock = StoreClock.system();
        private Duration rpcTimeout = Duration.ofSeconds(10);
        private Duration heartbeatInterval = Duration.ofSeconds(1);
        private long stagingBytes = 64L << 20;
        private long reservationBytes = DEFAULT_RESERVATION_BYTES;
        private Duration offloadPollInterval = Duration.ofMillis(100);

        private Builder(TransferEngine engine, String masterAddress) {
            this.engine = Objects.requireNonNull(engine, "engine");
            this.masterAddress = Objects.requireNonNull(masterAddress, "masterAddress");
        }

        /**
         * The token (the engine's {@code security.token}) the master asks for, an admin token for forced bulk removal,
         * and TLS; default none.
         */
        public Builder security(StoreSecurity security) {
            this.security = Objects.requireNonNull(security, "security");
            return this;
        }

        /** Host name used for locality (default: the host part of the engine's segment name). */
        public Builder host(String host) {
            this.host = host;
            return this;
        }

        public Builder clock(StoreClock clock) {
            this.clock = clock;
            return this;
        }

        public Builder rpcTimeout(Duration timeout) {
            this.rpcTimeout = timeout;
            return this;
        }

        /** How often to tell the master this client is alive; zero sends none (tests drive {@link #heartbeat}). */
        public Builder heartbeatInterval(Duration interval) {
            this.heartbeatInterval = interval;
            return this;
        }

        /**
         * How often a node with a disk segment asks the master for offloads when it had none (it asks again at once
         * while it gets some).
         */
        public Builder offloadPollInterval(Duration interval) {
            if (interval.isNegative() || interval.isZero()) {
                throw new IllegalArgumentException("offload poll interval must be positive: " + interval);
            }
            this.offloadPollInterval = interval;
            return this;
        }

        /** Registered scratch memory for the copying API. */
        public Builder stagingBytes(long bytes) {
            this.stagingBytes = bytes;
            return this;
        }

        /**
         * Space per replica the master reserves for this client's batch puts (one round trip each when they fit);
         * zero: every put takes two round trips.
         */
        public Builder reservationBytes(long bytes) {
            if (bytes < 0 || bytes > MasterState.MAX_RESERVATION_BYTES) {
                throw new IllegalArgumentException("reservation bytes must be in [0, "
                        + MasterState.MAX_RESERVATION_BYTES + "]: " + bytes);
            }
            this.reservationBytes = bytes;
            return this;
        }

        /**
         * Connects to the master (checking it answers), registers (the master issues this client's id and the
         * credential every later call carries) and starts heartbeats.
         */
        public StoreClient connect() {
            StoreClient c = new StoreClient(this);
            try {
                c.master.serviceReady();
                c.clientId = c.master.register();
                // only now: a ping needs the id, and one that threw would end the schedule for good
                if (c.heartbeats != null) {
                    c.heartbeats.scheduleWithFixedDelay(c::heartbeat, c.heartbeatMillis, c.heartbeatMillis, TimeUnit.MILLISECONDS);
                }
            } catch (StoreException e) {
                c.close();
                throw e;
            }
            return c;
        }
    }

    public String clientId() {
        return clientId;
    }

    public String host() {
        return host;
    }

    public TransferEngine engine() {
        return engine;
    }

    /** The master's wire client (generated protobuf types): this package's, never the public API. */
    MasterClient master() {
        return master;
    }

    public long leaseExpiredReads() {
        return leaseExpiredReads.sum();
    }

    public long replicaFailovers() {
        return replicaFailovers.sum();
    }

    /** Disk-replica reads whose bytes did not match their CRC32C (each failed over or was reported). */
    public long checksumFailures() {
        return checksumFailures.sum();
    }

    /** Offloads this node made durable and reported (0 without a disk segment). */
    public long offloadsCompleted() {
        Offloader o = offloader;
        return o == null ? 0 : o.completed.sum();
    }

    /** Offload tasks for a key this node was already offloading in the same round (never expected: the master sends one). */
    public long duplicateOffloads() {
        Offloader o = offloader;
        return o == null ? 0 : o.duplicates.sum();
    }

    // ---------------------------------------------------------------- contributing memory

    /** Allocates {@code bytes} with the engine and mounts them on the master as a segment for everyone's replicas. */
    public SegmentSpec contribute(long bytes) {
        RegisteredMemory mem = engine.allocate(bytes, Location.CPU, Permission.READ_WRITE);
        try {
            return mount(mem, true);
        } catch (RuntimeException e) {
            engine.unregister(mem);
            throw e;
        }
    }

    /** Mounts memory the caller registered (and keeps alive until {@link #withdraw}). */
    public SegmentSpec contribute(RegisteredMemory memory) {
        return mount(memory, false);
    }

    private SegmentSpec mount(RegisteredMemory mem, boolean allocatedHere) {
        SegmentSpec spec = new SegmentSpec(UUID.randomUUID().toString(), engine.segmentName(), host, mem.address(), mem.length());
        mountProved(spec, mem);
        contributions.put(spec.id(), new Contribution(spec, mem, allocatedHere));
        return spec;
    }

    /**
     * Mounts {@code spec}, first writing the master's nonce at its base when the master asks for a mount proof (it
     * reads the nonce back through its own engine before mounting). The segment holds no object of the master's yet
     * (a first mount, or a remount after the master dropped it), so those bytes are free.
     */
    private void mountProved(SegmentSpec spec, RegisteredMemory mem) {
        byte[] nonce = master.mountChallenge(clientId, spec);
        if (nonce.length > 0) {
            MemorySegment.copy(nonce, 0, mem.segment(), java.lang.foreign.ValueLayout.JAVA_BYTE, 0, nonce.length);
        }
        master.mount(clientId, spec);
    }

    /**
     * Contributes a disk segment: a new file of {@code bytes} in {@code dir}, registered with the engine as a file
     * segment and mounted at the master as a DISK segment, where eviction from memory offloads this node's objects
     * (see docs/STORE.md, "Disk tier"). One per client. Refused (INVALID_PARAMS naming the directory) when {@code dir}
     * is missing or not writable, {@code bytes} is under 4 KiB, or the engine serves no files.
     */
    public synchronized SegmentSpec contributeDisk(java.nio.file.Path dir, long bytes) {
        if (disk != null) {
            throw new StoreException(StoreError.INVALID_PARAMS, "client " + clientId + " already contributes disk segment "
                    + disk.spec.id() + " (" + disk.spec.file() + ")");
        }
        DiskSegment d = DiskSegment.open(engine, dir, bytes, host);
        try {
            master.mount(clientId, d.spec);
        } catch (RuntimeException e) {
            d.close();
            throw e;
        }
        disk = d;
        offloader = new Offloader(this, master, d, offloadPollMillis);
        return d.spec;
    }

    /**
     * What {@link #contributeDisk} refuses before it touches the engine or the master: a size under 4 KiB, a missing or
     * unwritable directory (INVALID_PARAMS naming it); a service checks its flags with it before it starts.
     */
    public static void checkDiskDir(java.nio.file.Path dir, long bytes) {
        DiskSegment.check(dir, bytes);
    }

    /**
     * Reads every replica on this node's disk segment back through the engine and checks it against its CRC32C; the
     * master drops those that fail (never handed to a reader again). INVALID_PARAMS without a disk segment.
     */
    public ScrubReport scrubDisk() {
        DiskSegment d = disk;
        if (d == null) {
            throw new StoreException(StoreError.INVALID_PARAMS, "client " + clientId + " contributes no disk segment to scrub");
        }
        return DiskScrub.run(this, master, d);
    }

    /** The disk segment this client contributes, if any. */
    public java.util.Optional<SegmentSpec> diskSegment() {
        DiskSegment d = disk;
        return d == null ? java.util.Optional.empty() : java.util.Optional.of(d.spec);
    }

    private synchronized void withdrawDisk() {
        DiskSegment d = disk;
        if (d == null) {
            return;
        }
        offloader.close();
        disk = null;
        offloader = null;
        try {
            master.unmount(clientId, d.spec.id());
        } finally {
            d.close();
        }
    }

    /** Unmounts a contributed segment (its replicas are dropped) and frees it if this client allocated it. */
    public void withdraw(String segmentId) {
        DiskSegment d = disk;
        if (d != null && d.spec.id().equals(segmentId)) {
            withdrawDisk();
            return;
        }
        Contribution c = contributions.remove(segmentId);
        if (c == null) {
            throw new StoreException(StoreError.SEGMENT_NOT_FOUND, "segment " + segmentId + " was not contributed by this client");
        }
        master.unmount(clientId, segmentId);
        if (c.allocatedHere) {
            engine.unregister(c.memory);
        }
    }

    public List<SegmentSpec> contributions() {
        return contributions.values().stream().map(Contribution::spec).toList();
    }

    /**
     * Tells the master this client is alive, remounting its segments if the master had given them up; registering
     * again first if it no longer knows this client's credential (an in-memory master that restarted).
     */
    public void heartbeat() {
        try {
            long expired = leaseExpiredReads.sum();
            long asked = clock.nanoTime();
            long mismatched = checksumFailures.sum();
            boolean remount;
            try {
                remount = master.ping(clientId, expired - reportedLeaseExpiries, mismatched - reportedChecksumFailures);
            } catch (StoreException e) {
                if (e.error() != StoreError.ILLEGAL_CLIENT) {
                    throw e;
                }
                String old = clientId;
                clientId = master.register();
                LOG.warn("master {} no longer knows client {} ({}); registered again as {}", master.address(), old,
                        e.getMessage(), clientId);
                remount = true;
            }
            reportedLeaseExpiries = expired;
            reportedChecksumFailures = mismatched;
            if (remount) {
                // the master released this client's reservations with it
                reserved.clear();
            } else {
                lastMasterContact = asked;
            }
            if (remount && !contributions.isEmpty()) {
                for (Contribution c : contributions.values()) {
                    mountProved(c.spec, c.memory);
                }
                LOG.warn("master {} had dropped client {}; remounted {} segments", master.address(), clientId, contributions.size());
            }
            DiskSegment d = disk;
            if (remount && d != null) {
                // the master forgot what the file held; offloads fill it afresh
                master.mount(clientId, d.spec);
            }
        } catch (StoreException e) {
            LOG.warn("heartbeat to master {} failed: {}", master.address(), e.getMessage());
        } catch (RuntimeException e) {
            // thrown out of a scheduled task it would end the heartbeats silently, and the master would expire us
            LOG.error("heartbeat to master {} failed", master.address(), e);
        }
    }

    // ---------------------------------------------------------------- puts

    /** Stores a copy of {@code value} (any memory, heap included) through the registered staging buffer. */
    public PutResult put(String key, MemorySegment value, ReplicateConfig config) {
        StagingBuffer.Lease lease = staging().borrow(Math.max(1, value.byteSize()));
        try {
            MemorySegment s = lease.segment().asSlice(0, value.byteSize());
            MemorySegment.copy(value, 0, s, 0, value.byteSize());
            return putFrom(key, s, config);
        } finally {
            staging().release(lease);
        }
    }

    public PutResult put(String key, byte[] value, ReplicateConfig config) {
        return put(key, MemorySegment.ofArray(value), config);
    }

    public PutResult put(String key, byte[] value) {
        return put(key, value, ReplicateConfig.defaults());
    }

    /** Zero-copy put: {@code source} must lie in memory registered with this client's engine. */
    public PutResult putFrom(String key, MemorySegment source, ReplicateConfig config) {
        return putParts(key, List.of(source), config, false);
    }

    /** Zero-copy put of one value gathered from several registered buffers, in order. */
    public PutResult putFromParts(String key, List<MemorySegment> parts, ReplicateConfig config) {
        return putParts(key, parts, config, false);
    }

    /** Replaces the value (or stores it if absent); readers see the old value until the new one is complete. */
    public void upsertFrom(String key, MemorySegment source, ReplicateConfig config) {
        putParts(key, List.of(source), config, true);
    }

    public void upsert(String key, byte[] value, ReplicateConfig config) {
        StagingBuffer.Lease lease = staging().borrow(Math.max(1, value.length));
        try {
            MemorySegment s = lease.segment().asSlice(0, value.length);
            MemorySegment.copy(MemorySegment.ofArray(value), 0, s, 0, value.length);
            upsertFrom(key, s, config);
        } finally {
            staging().release(lease);
        }
    }

    private PutResult putParts(String key, List<MemorySegment> parts, ReplicateConfig config, boolean upsert) {
        memory.sources(key, parts);
        if (!upsert && parts.size() == 1 && reservable(parts, config)) {
            // one round trip, as a batch of one: the write into this client's reservation, then the commit
            List<Outcome<PutResult>> out = putBatchReserved(List.of(key), parts, config);
            if (out != null) {
                Outcome<PutResult> o = out.getFirst();
                if (o.ok()) {
                    return o.value();
                }
                // a write failed (its segment's owner may be dead) or the commit was refused: the two-call path places
                // it again without the failed segments, or reports why the key cannot be put
                LOG.debug("put of '{}' into a reservation failed ({}); placing it the two-call way", key, o.error().getMessage());
            }
        }
        long size = totalSize(parts);
        PutStartResponse ticket;
        try {
            ticket = roomWait.call(key, () -> master.putStart(MasterClient.putStartRequest(clientId, key, size, config, host, upsert)));
        } catch (StoreException e) {
            if (e.error() == StoreError.OBJECT_ALREADY_EXISTS && !upsert) {
                return PutResult.ALREADY_EXISTS;
            }
            throw e;
        }
        List<ReplicaLocation> replicas = Wire.replicas(ticket.getReplicasList());
        Transfers writes = new Transfers(this, replicas.size() * parts.size());
        writes.addWrites(replicas, parts);
        StoreException failure = writes.run().firstFailure(key, "writing", 0, writes.size());
        if (failure == null) {
            master.putEnd(clientId, key, ticket.getPutId());
            return PutResult.STORED;
        }
        revokeQuietly(key, ticket.getPutId());
        memory.afterFailedWrite(key, parts, failure);
        // a segment whose owner died stays mounted until the master's client TTL runs out: place again without it
        List<String> failed = writes.failedSegments(replicas, parts);
        if (failed.isEmpty() || !config.excludedSegments().isEmpty()) {
            throw failure;
        }
        LOG.warn("put of '{}' could not write to segments {} ({}); placing it again without them", key, failed, failure.getMessage());
        return putParts(key, parts, config.withExcludedSegments(failed), upsert);
    }

    /** Puts copies of many values (heap arrays included) through the staging buffer, as {@link #putBatchFrom}. */
    public List<Outcome<PutResult>> putBatch(List<String> keys, List<byte[]> values, ReplicateConfig config) {
        long total = 0;
        for (byte[] v : values) {
            total += v.length;
        }
        StagingBuffer.Lease lease = staging().borrow(Math.max(1, total));
        try {
            List<MemorySegment> copies = new ArrayList<>(values.size());
            long off = 0;
            for (byte[] v : values) {
                copies.add(lease.segment().asSlice(off, v.length).copyFrom(MemorySegment.ofArray(v)));
                off += v.length;
            }
            return putBatchFrom(keys, copies, config);
        } finally {
            staging().release(lease);
        }
    }

    /**
     * Puts many values; each key succeeds or fails on its own. Small values with a plain replica count go into space
     * the master reserved for this client earlier: one round trip (the commit, which also hands out the next
     * reservation). The rest, and a batch that finds no reservation, take two (reserve per key, then end).
     */
    public List<Outcome<PutResult>> putBatchFrom(List<String> keys, List<MemorySegment> sources, ReplicateConfig config) {
        if (keys.size() != sources.size()) {
            throw new StoreException(StoreError.INVALID_PARAMS, keys.size() + " keys but " + sources.size() + " values");
        }
        memory.batch(keys, sources, false);
        if (reservable(sources, config)) {
            List<Outcome<PutResult>> out = putBatchReserved(keys, sources, config);
            if (out != null) {
                return out;
            }
        }
        List<PutStartRequest> reqs = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            reqs.add(MasterClient.putStartRequest(clientId, keys.get(i), sources.get(i).byteSize(), config, host, false));
        }
        List<PutStartResponse> tickets = master.batchPutStart(reqs);
        List<Outcome<PutResult>> out = new ArrayList<>(Collections.nCopies(keys.size(), null));
        // every value's writes in one engine batch; key i's moves are [firstMove[i], firstMove[i + 1])
        Transfers writes = new Transfers(this, keys.size());
        int[] firstMove = new int[keys.size() + 1];
        for (int i = 0; i < keys.size(); i++) {
            firstMove[i] = writes.size();
            PutStartResponse t = tickets.get(i);
            if (t.getStatus().getCode() != 0) {
                out.set(i, refused(t.getStatus()));
            } else {
                writes.addWrites(Wire.replicas(t.getReplicasList()), List.of(sources.get(i)));
            }
        }
        firstMove[keys.size()] = writes.size();
        writes.run();
        List<PutEndRequest> ends = new ArrayList<>();
        List<Integer> endIdx = new ArrayList<>();
        List<PutEndRequest> revokes = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            if (out.get(i) != null) {
                continue;
            }
            StoreException failure = writes.firstFailure(keys.get(i), "writing", firstMove[i], firstMove[i + 1]);
            PutEndRequest req = MasterClient.endRequest(clientId, keys.get(i), tickets.get(i).getPutId());
            if (failure == null) {
                ends.add(req);
                endIdx.add(i);
            } else {
                revokes.add(req);
                out.set(i, Outcome.failed(failure));
            }
        }
        if (!revokes.isEmpty()) {
            try {
                master.batchPutRevoke(revokes);
            } catch (StoreException e) {
                LOG.warn("revoking {} failed puts: {} (the master reclaims them after its release timeout)", revokes.size(), e.getMessage());
            }
        }
        if (!ends.isEmpty()) {
            List<Status> st = master.batchPutEnd(ends);
            for (int j = 0; j < st.size(); j++) {
                int i = endIdx.get(j);
                out.set(i, st.get(j).getCode() == 0 ? Outcome.of(PutResult.STORED) : Outcome.failed(error(st.get(j))));
            }
        }
        return out;
    }

    /** Largest value put into a reservation (a reservation holds at least four); larger ones take two round trips. */
    static final long MAX_RESERVED_VALUE = MasterState.MAX_RESERVATION_BYTES / 4;
    /** A reservation is asked for this many times a call's bytes (at least the builder's size): few refills, one call each. */
    static final int RESERVATION_CALLS = 8;
    static final long DEFAULT_RESERVATION_BYTES = 1 << 20;

    /** A reservation per replica, carved front to back by one batch at a time. */
    private static final class Reserved {
        final long[] ids;
        final ReplicaLocation[] ranges;
        long carved;
        /** When the master last answered a call that used this reservation (this client's clock, so never early). */
        long usedAt;

        Reserved(long[] ids, ReplicaLocation[] ranges, long usedAt) {
            this.ids = ids;
            this.ranges = ranges;
            this.usedAt = usedAt;
        }

        long room() {
            return ranges[0].length() - carved;
        }
    }

    private boolean reservable(List<MemorySegment> sources, ReplicateConfig c) {
        if (reservationBytes == 0 || sources.isEmpty() || sources.size() > MasterState.MAX_COMMIT_ITEMS
                || !c.preferredSegments().isEmpty() || c.preferLocalHost() || c.softPin() || c.hardPin()
                || !c.excludedSegments().isEmpty() || c.replicas() < 1) {
            return false;
        }
        for (MemorySegment s : sources) {
            if (s.byteSize() == 0 || s.byteSize() > MAX_RESERVED_VALUE) {
                return false;
            }
        }
        return true;
    }

    /** The batch put through a reservation, or null when none could be had (the caller takes the two-call path). */
    private List<Outcome<PutResult>> putBatchReserved(List<String> keys, List<MemorySegment> sources, ReplicateConfig config) {
        int n = keys.size();
        long need = 0;
        for (MemorySegment s : sources) {
            need += RangeAllocator.aligned(s.byteSize());
        }
        long ask = Math.min(MasterState.MAX_RESERVATION_BYTES, Math.max(reservationBytes, RESERVATION_CALLS * need));
        if (need > ask) {
            return null;
        }
        var pool = reserved.computeIfAbsent(config.replicas(), r -> new ConcurrentLinkedQueue<>());
        long now = clock.nanoTime();
        List<Reserved> retire = new ArrayList<>();
        if (lastMasterContact == Long.MIN_VALUE || now - lastMasterContact > RESERVATION_FRESH_NANOS) {
            // what this client holds may have been released meanwhile: retire it and ask afresh
            for (Reserved stale; (stale = pool.poll()) != null; ) {
                retire.add(stale);
            }
        }
        Reserved res = pool.poll();
        if (res != null && now - res.usedAt > RESERVATION_IDLE_NANOS) {
            retire.add(res);
            res = null;
        }
        if (res == null || res.room() < need) {
            if (clock.nanoTime() - reserveRefusedAt < 1_000_000_000L && reserveRefusedAt != Long.MIN_VALUE) {
                if (res != null) {
                    pool.add(res);
                }
                return null;
            }
            // the first batch (or one larger than what is left) asks first: two round trips, as without reservations
            if (res != null) {
                retire.add(res);
            }
            CommitResponse r = master.commit(commitRequest(List.of(), retire, ask, config.replicas()));
            lastMasterContact = now;
            res = granted(r, config.replicas(), now);
            if (res == null) {
                reserveRefusedAt = clock.nanoTime();
                return null;
            }
        }
        long[] offset = new long[n];
        Transfers writes = new Transfers(this, n * config.replicas());
        int[] firstMove = new int[n + 1];
        for (int i = 0; i < n; i++) {
            offset[i] = res.carved;
            res.carved += RangeAllocator.aligned(sources.get(i).byteSize());
            firstMove[i] = writes.size();
            for (ReplicaLocation range : res.ranges) {
                writes.add(false, range, offset[i], sources.get(i));
            }
        }
        firstMove[n] = writes.size();
        writes.run();
        List<Outcome<PutResult>> out = new ArrayList<>(Collections.nCopies(n, null));
        List<CommitItem> items = new ArrayList<>(n);
        List<Integer> itemIdx = new ArrayList<>(n);
        boolean writeFailed = false;
        for (int i = 0; i < n; i++) {
            StoreException failure = writes.firstFailure(keys.get(i), "writing", firstMove[i], firstMove[i + 1]);
            if (failure != null) {
                // never committed: the master gives the bytes back as the mark passes them
                out.set(i, Outcome.failed(failure));
                writeFailed = true;
                continue;
            }
            var item = CommitItem.newBuilder().setKey(keys.get(i)).setSize(sources.get(i).byteSize());
            for (int j = 0; j < res.ranges.length; j++) {
                item.addReservation(res.ids[j]).addAddress(res.ranges[j].address() + offset[i]);
            }
            items.add(item.build());
            itemIdx.add(i);
        }
        // a segment that failed a write may be gone: stop using this reservation
        boolean done = writeFailed || res.room() < need;
        long asked = clock.nanoTime();
        CommitResponse r = master.commit(commitRequest(items, done ? List.of(res) : List.of(), done ? ask : 0, config.replicas()));
        lastMasterContact = asked;
        if (r.getItemsCount() != items.size()) {
            // refused as a whole: nothing was committed, and what this reservation holds is unknown
            StoreException e = error(r.getRefillStatus());
            for (int i : itemIdx) {
                out.set(i, Outcome.failed(e));
            }
            return out;
        }
        for (int j = 0; j < items.size(); j++) {
            Status st = r.getItems(j);
            int i = itemIdx.get(j);
            if (st.getCode() == 0) {
                out.set(i, Outcome.of(PutResult.STORED));
            } else {
                out.set(i, refused(st));
            }
        }
        Reserved next = done ? granted(r, config.replicas(), asked) : res;
        if (next != null) {
            // asked, not now: the master touched the reservation after this call was sent, never before
            next.usedAt = asked;
            pool.add(next);
        }
        return out;
    }

    private CommitRequest commitRequest(List<CommitItem> items, List<Reserved> retire,
                                                              long refillBytes, int replicas) {
        var b = CommitRequest.newBuilder().setClientId(clientId).addAllItems(items);
        for (Reserved r : retire) {
            for (long id : r.ids) {
                b.addRetire(id);
            }
        }
        if (refillBytes > 0) {
            b.setRefill(ReserveRequest.newBuilder().setBytes(refillBytes).setReplicas(replicas).setWriterHost(host));
        }
        return b.build();
    }

    /** A batch item the master refused: the key being there already is an answer, anything else a failure. */
    private static Outcome<PutResult> refused(Status st) {
        StoreException e = error(st);
        return e.error() == StoreError.OBJECT_ALREADY_EXISTS ? Outcome.of(PutResult.ALREADY_EXISTS) : Outcome.failed(e);
    }

    private static Reserved granted(CommitResponse r, int replicas, long askedAt) {
        if (r.getGrantedCount() != replicas) {
            if (r.getRefillStatus().getCode() != 0) {
                LOG.debug("no reservation: {}", r.getRefillStatus().getMessage());
            }
            return null;
        }
        long[] ids = new long[replicas];
        ReplicaLocation[] ranges = new ReplicaLocation[replicas];
        for (int j = 0; j < replicas; j++) {
            ids[j] = r.getGranted(j).getId();
            ranges[j] = Wire.replica(r.getGranted(j).getRange());
        }
        return new Reserved(ids, ranges, askedAt);
    }

    private void revokeQuietly(String key, long putId) {
        try {
            master.putRevoke(clientId, key, putId);
        } catch (StoreException e) {
            LOG.warn("revoking put of '{}' failed: {} (the master reclaims it after its release timeout)", key, e.getMessage());
        }
    }

    // ---------------------------------------------------------------- gets

    /** A copy of the value, read through the registered staging buffer. */
    public byte[] get(String key) {
        for (int attempt = 1; ; attempt++) {
            long t0 = clock.nanoTime();
            ReplicaListResponse list = master.getReplicaList(key);
            long size = list.getSize();
            if (size > Integer.MAX_VALUE - 8) {
                throw new StoreException(StoreError.INVALID_PARAMS, "key '" + key + "' of " + size + " bytes does not fit a byte[]; use getInto");
            }
            long deadline = t0 + Duration.ofMillis(list.getLeaseTtlMs()).toNanos();
            StagingBuffer.Lease lease = staging().borrow(Math.max(1, size));
            try {
                MemorySegment dst = lease.segment().asSlice(0, size);
                StoreException e = readReplicas(key, nearestFirst(Wire.replicas(list.getReplicasList())), 0, List.of(dst), deadline);
                if (e == null) {
                    return dst.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
                }
                if (e.error() != StoreError.LEASE_EXPIRED || attempt >= READ_ATTEMPTS) {
                    throw e;
                }
            } finally {
                staging().release(lease);
            }
        }
    }

    /** Zero-copy read into {@code destination} (registered memory at least as large as the value); returns its size. */
    public long getInto(String key, MemorySegment destination) {
        return getIntoParts(key, List.of(destination));
    }

    /** Zero-copy read scattered over several registered buffers, in order; returns the value's size. */
    public long getIntoParts(String key, List<MemorySegment> parts) {
        long room = totalSize(parts);
        return readInto(key, parts, room);
    }

    private long readInto(String key, List<MemorySegment> parts, long room) {
        memory.destinations(key, parts);
        for (int attempt = 1; ; attempt++) {
            long t0 = clock.nanoTime();
            ReplicaListResponse list = master.getReplicaList(key);
            long deadline = t0 + Duration.ofMillis(list.getLeaseTtlMs()).toNanos();
            if (list.getSize() > room) {
                throw bufferTooSmall(key, room, list.getSize());
            }
            StoreException e = readReplicas(key, nearestFirst(Wire.replicas(list.getReplicasList())), 0, parts, deadline);
            if (e == null) {
                return list.getSize();
            }
            if (e.error() != StoreError.LEASE_EXPIRED || attempt >= READ_ATTEMPTS) {
                throw e;
            }
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
        return last != null ? last : noReplica(key);
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

    /**
     * Reads many values, each into its registered buffer. Replica lists are fetched in waves, and a wave that ran past
     * leases makes the next one smaller, so a batch of any size completes as long as single reads fit in a lease.
     */
    public List<Outcome<Long>> getBatchInto(List<String> keys, List<MemorySegment> destinations) {
        return new BatchReads(this, master).read(keys, destinations);
    }

    /** Values as copies; a missing key's outcome carries OBJECT_NOT_FOUND. */
    public List<Outcome<byte[]>> getBatch(List<String> keys) {
        List<Outcome<byte[]>> out = new ArrayList<>(keys.size());
        for (String k : keys) {
            try {
                out.add(Outcome.of(get(k)));
            } catch (StoreException e) {
                out.add(Outcome.failed(e));
            }
        }
        return out;
    }

    // ---------------------------------------------------------------- sessions

    /** Reserves space for several values at once; bytes are then written at any offsets, and the session ended or revoked. */
    public PutSession putSession(List<String> keys, List<Long> sizes, ReplicateConfig config) {
        return new PutSession(this, keys, sizes, config);
    }

    /** One replica-list fetch for several keys; reads then go straight to the replicas until the lease ends. */
    public GetSession getSession(List<String> keys) {
        long t0 = clock.nanoTime();
        return new GetSession(this, keys, master.batchGetReplicaList(keys), t0);
    }

    // ---------------------------------------------------------------- metadata

    /** Whether the key is readable. Takes no lease, so probing keeps nothing from eviction. */
    public boolean exists(String key) {
        return master.exists(key);
    }

    public List<Outcome<Boolean>> existsBatch(List<String> keys) {
        return master.batchExists(keys).stream().map(r -> r.getStatus().getCode() == 0 ? Outcome.of(r.getExists())
                : Outcome.<Boolean>failed(error(r.getStatus()))).toList();
    }

    public long size(String key) {
        return master.size(key);
    }

    public void remove(String key) {
        master.remove(key, false);
    }

    /** Removes even a leased object (its bytes stay reserved until the lease ends, so readers are not torn). */
    public void remove(String key, boolean force) {
        master.remove(key, force);
    }

    public List<Outcome<Void>> removeBatch(List<String> keys, boolean force) {
        return master.batchRemove(keys, force).stream().map(s -> s.getCode() == 0 ? Outcome.<Void>of(null)
                : Outcome.<Void>failed(error(s))).toList();
    }

    /** Removes every unleased readable object whose key matches {@code regex} (whole key); returns how many. */
    public long removeByRegex(String regex) {
        return master.removeByRegex(regex, false);
    }

    public long removeByRegex(String regex, boolean force) {
        return master.removeByRegex(regex, force);
    }

    public long removeAll(boolean force) {
        return master.removeAll(force);
    }

    // ---------------------------------------------------------------- moving bytes

    /** The range of a replica in memory this client contributed (copied directly, no engine), else null. */
    MemorySegment contributedRange(ReplicaLocation r, long offset, long length) {
        Contribution mine = contributions.get(r.segmentId());
        return mine == null ? null : mine.memory.segment().asSlice(r.address() - mine.spec.base() + offset, length);
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
        out.sort(java.util.Comparator.comparingInt(r -> r.onDisk() ? 3
                : contributions.containsKey(r.segmentId()) ? 0 : host.equals(r.host()) ? 1 : 2));
        return out;
    }

    StoreClock clock() {
        return clock;
    }

    String id() {
        return clientId;
    }

    /** Writes {@code src} into every replica at {@code offset}; null on success, else the first failure. */
    StoreException writeAt(String key, List<ReplicaLocation> replicas, long offset, MemorySegment src) {
        Transfers writes = new Transfers(this, replicas.size());
        for (ReplicaLocation r : replicas) {
            writes.add(false, r, offset, src);
        }
        return writes.run().firstFailure(key, "writing", 0, writes.size());
    }

    static StoreException bufferTooSmall(String key, long room, long size) {
        return new StoreException(StoreError.INVALID_PARAMS, "buffer of " + room + " bytes is too small for key '" + key
                + "' (" + size + " bytes)");
    }

    static StoreException noReplica(String key) {
        return new StoreException(StoreError.OBJECT_NOT_FOUND, "key '" + key + "' has no replica to read");
    }

    static StoreException error(Status s) {
        try {
            Wire.check(s);
            return null;
        } catch (StoreException e) {
            return e;
        }
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

    private static long totalSize(List<MemorySegment> parts) {
        long n = 0;
        for (MemorySegment p : parts) {
            n += p.byteSize();
        }
        return n;
    }

    private static String hostOf(String segmentName) {
        int colon = segmentName.lastIndexOf(':');
        return colon > 0 ? segmentName.substring(0, colon) : segmentName;
    }

    /**
     * Unmounts contributed segments (their replicas are dropped), stops heartbeats, retires reservations, and tells the
     * master this client leaves (so it is not counted as expired), then closes the master connection.
     */
    @Override
    public void close() {
        if (heartbeats != null) {
            heartbeats.shutdownNow();
            try {
                // a ping answered after the leave would remount what was withdrawn
                heartbeats.awaitTermination(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            withdrawDisk();
        } catch (StoreException e) {
            LOG.warn("unmounting the disk segment on close failed: {}", e.getMessage());
        }
        List<Reserved> held = new ArrayList<>();
        reserved.values().forEach(pool -> {
            for (Reserved r; (r = pool.poll()) != null; ) {
                held.add(r);
            }
        });
        if (!held.isEmpty()) {
            try {
                master.commit(commitRequest(List.of(), held, 0, 1));
            } catch (StoreException e) {
                LOG.warn("retiring {} reservations on close failed: {} (the master releases them when this client expires)",
                        held.size(), e.getMessage());
            }
        }
        for (String id : List.copyOf(contributions.keySet())) {
            try {
                withdraw(id);
            } catch (StoreException e) {
                LOG.warn("unmounting segment {} on close failed: {}", id, e.getMessage());
            }
        }
        try {
            if (clientId != null) { // null: connect failed before the master issued one
                master.leave(clientId); // a clean exit, never counted as an expiry
            }
        } catch (StoreException e) {
            LOG.warn("leaving master {} failed: {} (it counts this client expired after its TTL)", master.address(), e.getMessage());
        }
        if (staging != null) {
            staging.close();
        }
        master.close();
    }
}
