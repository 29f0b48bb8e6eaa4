package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreException;
import org.tent4j.store.StoreSecurity;
import org.tent4j.store.master.MasterState;
import org.tent4j.store.rpc.MasterClient;

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
 *
 * <p>This class is the facade; the work is done by package-private parts, none of which calls back into it
 * (docs/ARCHITECTURE.md, "Store client parts"): {@link PutPath} with {@link ReservedPuts}, {@link GetPath},
 * {@link Contributions}, {@link Heartbeats}, and {@link ReplicaAccess}, through which every part and session reaches
 * replicas.
 */
public final class StoreClient implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StoreClient.class);
    /** How many times a read is retried when its lease ends while bytes are moving. */
    static final int READ_ATTEMPTS = ReplicaAccess.READ_ATTEMPTS;

    private final MasterClient master;
    private final ReplicaAccess access;
    private final ReservedPuts reserved;
    private final PutPath puts;
    private final GetPath gets;
    private final Contributions contributions;
    private final Heartbeats heartbeats;
    private final ScrubSchedule scrubs;

    private StoreClient(Builder b) {
        this.master = new MasterClient(b.masterAddress, b.rpcTimeout, b.security);
        this.access = new ReplicaAccess(b.engine, master, b.host != null ? b.host : ReplicaAccess.hostOf(b.engine.segmentName()), b.clock,
                b.stagingBytes);
        this.reserved = new ReservedPuts(access, b.reservationBytes);
        this.puts = new PutPath(access, reserved, new RoomWait(b.rpcTimeout));
        this.gets = new GetPath(access);
        this.contributions = new Contributions(access, Math.max(1, b.offloadPollInterval.toMillis()));
        this.heartbeats = new Heartbeats(access, contributions, reserved, b.heartbeatInterval);
        this.scrubs = new ScrubSchedule(contributions, b.scrubInterval);
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
        private long reservationBytes = ReservedPuts.DEFAULT_RESERVATION_BYTES;
        private Duration offloadPollInterval = Duration.ofMillis(100);
        private Duration scrubInterval = Duration.ZERO;

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

        /**
         * How often a node with a disk segment scrubs it ({@link #scrubDisk}) by itself: the next scrub starts this
         * long after the last one ended. Zero (the default): only when asked.
         */
        public Builder scrubInterval(Duration interval) {
            if (interval.isNegative()) {
                throw new IllegalArgumentException("scrub interval must not be negative: " + interval);
            }
            this.scrubInterval = interval;
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
                c.access.id(c.master.register());
                c.heartbeats.start();
                c.scrubs.start();
            } catch (StoreException e) {
                c.close();
                throw e;
            }
            return c;
        }
    }

    public String clientId() {
        return access.id();
    }

    public String host() {
        return access.host;
    }

    public TransferEngine engine() {
        return access.engine;
    }

    /** The master's wire client (generated protobuf types): this package's, never the public API. */
    /**
     * The highest Raft term among the masters' answers so far: the term of the leader this client last heard from, on
     * a durable master or group (0: a master without a durable log).
     */
    public long masterTerm() {
        return master.term();
    }

    MasterClient master() {
        return master;
    }

    /** What the parts reach replicas through (for this package's probes). */
    ReplicaAccess access() {
        return access;
    }

    public long leaseExpiredReads() {
        return access.leaseExpiredReads.sum();
    }

    public long replicaFailovers() {
        return access.replicaFailovers.sum();
    }

    /** Disk-replica reads whose bytes did not match their CRC32C (each failed over or was reported). */
    public long checksumFailures() {
        return access.checksumFailures.sum();
    }

    /** Offloads this node made durable and reported (0 without a disk segment). */
    public long offloadsCompleted() {
        return contributions.offloadsCompleted();
    }

    /**
     * Records the disk index dropped when this node reopened its disk file: a torn tail, or bytes that no longer
     * match their CRC32C (0 without a disk segment, or on a fresh file).
     */
    public long diskRecordsDropped() {
        return contributions.diskRecordsDropped();
    }

    /** Offload tasks for a key this node was already offloading in the same round (never expected: the master sends one). */
    public long duplicateOffloads() {
        return contributions.duplicateOffloads();
    }

    /** Allocates {@code bytes} with the engine and mounts them on the master as a segment for everyone's replicas. */
    public SegmentSpec contribute(long bytes) {
        return contributions.contribute(bytes);
    }

    /** Mounts memory the caller registered (and keeps alive until {@link #withdraw}). */
    public SegmentSpec contribute(RegisteredMemory memory) {
        return contributions.contribute(memory);
    }

    /**
     * Contributes a disk segment: a new file of {@code bytes} in {@code dir}, registered with the engine as a file
     * segment and mounted at the master as a DISK segment, where eviction from memory offloads this node's objects
     * (see docs/STORE.md, "Disk tier"). One per client. Refused (INVALID_PARAMS naming the directory) when {@code dir}
     * is missing or not writable, {@code bytes} is under 4 KiB, or the engine serves no files.
     */
    public SegmentSpec contributeDisk(Path dir, long bytes) {
        return contributions.contributeDisk(dir, bytes);
    }

    /**
     * What {@link #contributeDisk} refuses before it touches the engine or the master: a size under 4 KiB, a missing or
     * unwritable directory (INVALID_PARAMS naming it); a service checks its flags with it before it starts.
     */
    public static void checkDiskDir(Path dir, long bytes) {
        DiskSegment.check(dir, bytes);
    }

    /**
     * Reads every replica on this node's disk segment back through the engine and checks it against its CRC32C; the
     * master drops those that fail (never handed to a reader again). INVALID_PARAMS without a disk segment. Waits for a
     * scrub in progress (a periodic one: {@link Builder#scrubInterval}) to end first.
     */
    public ScrubReport scrubDisk() {
        return scrubs.scrubNow();
    }

    /** Scrubs of the disk segment completed since this client connected, periodic and asked for. */
    public long scrubsCompleted() {
        return scrubs.completed();
    }

    /** Disk replicas those scrubs found not matching their CRC32C. */
    public long scrubMismatches() {
        return scrubs.mismatches();
    }

    /** The disk segment this client contributes, if any. */
    public Optional<SegmentSpec> diskSegment() {
        return contributions.diskSegment();
    }

    /** Unmounts a contributed segment (its replicas are dropped) and frees it if this client allocated it. */
    public void withdraw(String segmentId) {
        contributions.withdraw(segmentId);
    }

    public List<SegmentSpec> contributions() {
        return contributions.specs();
    }

    /**
     * Tells the master this client is alive, remounting its segments if the master had given them up; registering
     * again first if it no longer knows this client's credential (an in-memory master that restarted).
     */
    public void heartbeat() {
        heartbeats.beat();
    }

    /** Stores a copy of {@code value} (any memory, heap included) through the registered staging buffer. */
    public PutResult put(String key, MemorySegment value, ReplicateConfig config) {
        return puts.put(key, value, config);
    }

    public PutResult put(String key, byte[] value, ReplicateConfig config) {
        return put(key, MemorySegment.ofArray(value), config);
    }

    public PutResult put(String key, byte[] value) {
        return put(key, value, ReplicateConfig.defaults());
    }

    /** Zero-copy put: {@code source} must lie in memory registered with this client's engine. */
    public PutResult putFrom(String key, MemorySegment source, ReplicateConfig config) {
        return puts.putParts(key, List.of(source), config, false);
    }

    /** Zero-copy put of one value gathered from several registered buffers, in order. */
    public PutResult putFromParts(String key, List<MemorySegment> parts, ReplicateConfig config) {
        return puts.putParts(key, parts, config, false);
    }

    /** Replaces the value (or stores it if absent); readers see the old value until the new one is complete. */
    public void upsertFrom(String key, MemorySegment source, ReplicateConfig config) {
        puts.putParts(key, List.of(source), config, true);
    }

    public void upsert(String key, byte[] value, ReplicateConfig config) {
        puts.upsert(key, value, config);
    }

    /**
     * Puts copies of many values (heap arrays included) through the staging memory, as {@link #putBatchFrom}; per key
     * its outcome. Values are staged in groups that fit the staging memory ({@link Builder#stagingBytes}).
     */
    public List<Outcome<PutResult>> putBatch(List<String> keys, List<byte[]> values, ReplicateConfig config) {
        return puts.putBatchCopies(keys, values.stream().map(v -> v == null ? null : MemorySegment.ofArray(v)).toList(), config);
    }

    /**
     * As {@link #putBatch}, for buffers (heap or direct, read-only included): each value is its buffer's bytes from
     * position to limit; the buffers' positions are left as they were.
     */
    public List<Outcome<PutResult>> putBatchBuffers(List<String> keys, List<ByteBuffer> values, ReplicateConfig config) {
        return puts.putBatchCopies(keys, values.stream().map(v -> v == null ? null : MemorySegment.ofBuffer(v)).toList(), config);
    }

    /**
     * Puts many values; each key succeeds or fails on its own. Small values with a plain replica count go into space
     * the master reserved for this client earlier: one round trip (the commit, which also hands out the next
     * reservation). The rest, and a batch that finds no reservation, take two (reserve per key, then end).
     */
    public List<Outcome<PutResult>> putBatchFrom(List<String> keys, List<MemorySegment> sources, ReplicateConfig config) {
        return puts.putBatchFrom(keys, sources, config);
    }

    /** A copy of the value, read through the registered staging buffer. */
    public byte[] get(String key) {
        return gets.get(key);
    }

    /** Zero-copy read into {@code destination} (registered memory at least as large as the value); returns its size. */
    public long getInto(String key, MemorySegment destination) {
        return gets.getInto(key, destination);
    }

    /** Zero-copy read scattered over several registered buffers, in order; returns the value's size. */
    public long getIntoParts(String key, List<MemorySegment> parts) {
        return gets.getIntoParts(key, parts);
    }

    /**
     * Reads many values, each into its registered buffer. Replica lists are fetched in waves, and a wave that ran past
     * leases makes the next one smaller, so a batch of any size completes as long as single reads fit in a lease.
     */
    public List<Outcome<Long>> getBatchInto(List<String> keys, List<MemorySegment> destinations) {
        return gets.getBatchInto(keys, destinations);
    }

    /** Values as copies; a missing key's outcome carries OBJECT_NOT_FOUND. */
    public List<Outcome<byte[]>> getBatch(List<String> keys) {
        return gets.getBatch(keys);
    }

    /** Reserves space for several values at once; bytes are then written at any offsets, and the session ended or revoked. */
    public PutSession putSession(List<String> keys, List<Long> sizes, ReplicateConfig config) {
        return puts.session(keys, sizes, config);
    }

    /** One replica-list fetch for several keys; reads then go straight to the replicas until the lease ends. */
    public GetSession getSession(List<String> keys) {
        return GetSession.open(access, keys);
    }

    /** Whether the key is readable. Takes no lease, so probing keeps nothing from eviction. */
    public boolean exists(String key) {
        return master.exists(key);
    }

    public List<Outcome<Boolean>> existsBatch(List<String> keys) {
        return master.batchExists(keys).stream().map(r -> r.getStatus().getCode() == 0 ? Outcome.of(r.getExists())
                : Outcome.<Boolean>failed(ClientErrors.error(r.getStatus()))).toList();
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
                : Outcome.<Void>failed(ClientErrors.error(s))).toList();
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

    /**
     * Unmounts contributed segments (their replicas are dropped), stops heartbeats, retires reservations, and tells the
     * master this client leaves (so it is not counted as expired), then closes the master connection.
     */
    @Override
    public void close() {
        scrubs.stop();
        heartbeats.stop();
        contributions.closeDisk();
        reserved.retireAll();
        contributions.closeMemory();
        String id = access.id();
        try {
            if (id != null) { // null: connect failed before the master issued one
                master.leave(id); // a clean exit, never counted as an expiry
            }
        } catch (StoreException e) {
            LOG.warn("leaving master {} failed: {} (it counts this client expired after its TTL)", master.address(), e.getMessage());
        }
        access.closeStaging();
        master.close();
    }
}
