package org.tent4j.store.master;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command.ReplicaList;

/**
 * The master's whole state, as per-domain parts that {@link #apply} dispatches each command to (as Kafka's
 * {@code QuorumController} hands records to its control managers): {@link Segments} (segments, allocators,
 * placement), {@link Clients} (clients and their liveness), {@link ObjectTable} (objects, leases, removal),
 * {@link Puts} (put start, end, revoke, take-over), {@link Reservations} (reservations and commits), {@link Eviction}
 * (eviction rounds), {@link Parking} (parked ranges), {@link Offloads} (tasks nodes run: offloads, promotions, repairs),
 * {@link Repairs} (under-replicated objects), and {@link MasterViews} (read-only views for the admin page). Nothing here
 * reads a clock; {@link #apply} is told the time.
 *
 * <p>One ordering point: every change goes through {@link #apply} (a batch through {@link #applyAll}, a recorded entry
 * through {@link #replay}), which takes one lock, gives the command the next log index and a time no earlier than the
 * last one's, hands the {@link LogEntry} to the journal (if one is set) and applies it on the caller's thread before
 * letting the next in. So the state after entry
 * {@code n} is a function of entries 1..n alone: a stream recorded by the journal and replayed into an empty state
 * gives the same objects, ranges and allocator free lists. Replicated logs plug in at {@link #applyAll}: an entry
 * ordered by consensus has its commands applied there, in index order. Reads that change nothing ({@link #exists}, {@link #size},
 * the views) stay off the stream: they take the lock of the shard, allocator or client they read, which the applier
 * holds while it changes that piece.
 *
 * <p>Invariants: a byte of a mounted segment belongs to at most one live replica or parked range; a range is reused
 * only after every read lease that could cover it has ended (removals of leased objects and replaced upsert versions
 * are parked until the lease deadline, abandoned puts until their release timeout).
 */
public final class MasterState {
    /** Live reservations one client may hold (a peer chooses how many it asks for). */
    public static final int MAX_RESERVATIONS_PER_CLIENT = 64;
    /** Largest reservation, and so largest value a commit may carry. */
    public static final long MAX_RESERVATION_BYTES = 16L << 20;
    /** Most items in one commit: it is served on the stream's event loop. */
    public static final int MAX_COMMIT_ITEMS = 1024;
    /**
     * Most objects, each large enough for the put alone (one sample of {@link #EVICTION_SAMPLES} each), a put that
     * found no room evicts before it looks for a window of smaller ones ({@link ContiguousRoom}): more than one only
     * when the first were offloaded (their memory comes free later).
     */
    static final int MAX_INLINE_EVICTIONS = 4;
    /** Evictable objects looked at to choose one victim (Redis's {@code maxmemory-samples} is 5; more is closer to LRU). */
    static final int EVICTION_SAMPLES = 16;
    /** Leases sampled per eviction round to find the age below which objects go. */
    static final int LEASE_SAMPLES = 4096;

    private final MasterConfig config;
    final MasterCounters counters = new MasterCounters();
    final Segments segments;
    final Clients clients;
    final ObjectTable objects;
    private final LookAhead lookAhead;
    final Puts puts;
    final Reservations reservations;
    final Eviction eviction;
    final Parking parking;
    final Offloads offloads;
    final Repairs repairs;
    private final DiskAdoption adoption;
    final RequestIds requestIds = new RequestIds();
    private final MasterViews views;
    private final Housekeeping housekeeping;
    /**
     * A durable group's client-credential key (null in memory, and until the log's first key entry is applied):
     * replicated state like the rest, so in snapshots, and a master that caught up from one holds its group's key.
     */
    private volatile byte[] credentialKey;
    static final int CREDENTIAL_KEY_BYTES = 32;

    /** The ordering point: held while an entry is numbered, journaled and applied. */
    private final ReentrantLock order = new ReentrantLock();
    /** Guarded by {@link #order}: the last entry applied. */
    private long lastIndex;
    private long lastNow = Long.MIN_VALUE;
    private volatile Consumer<LogEntry> journal;

    public MasterState(MasterConfig config) {
        this(config, ObjectRecord.MAX_SEGMENTS);
    }

    /**
     * A state handing out at most {@code segmentIndexes} segment indexes (every one the packing holds in production;
     * tests churn through a small table). A snapshot carries it, so a restored state keeps the one it was taken with.
     */
    MasterState(MasterConfig config, int segmentIndexes) {
        this.config = config;
        this.segments = new Segments(this, segmentIndexes);
        this.clients = new Clients(this);
        this.objects = new ObjectTable(this);
        this.lookAhead = new LookAhead(objects, config.maxKeyBytes());
        this.puts = new Puts(this);
        this.reservations = new Reservations(this);
        this.eviction = new Eviction(this);
        this.parking = new Parking(this);
        this.offloads = new Offloads(this);
        this.repairs = new Repairs(this);
        this.adoption = new DiskAdoption(this);
        this.views = new MasterViews(this);
        this.housekeeping = new Housekeeping(this);
    }

    public MasterConfig config() {
        return config;
    }

    /**
     * Registers who to tell when eviction is wanted: usage passed the high watermark or a put or reservation found
     * no room. Called often while usage stays high, so it must be cheap (a flag and a wake-up).
     */
    public void onEvictionWanted(Runnable hook) {
        segments.onEvictionWanted(hook);
    }

    /**
     * Tells this state's changes to {@code replaced}'s listeners (eviction hook, journal): this state was restored in
     * its place while the master runs (a snapshot installed from the leader).
     */
    void takeListenersOf(MasterState replaced) {
        segments.onEvictionWanted(replaced.segments.evictionHook());
        journal = replaced.journal;
    }

    /**
     * The evictor's next round ({@link Command.EvictVictims}), its victims chosen now, off the ordering point: a walk
     * over every object under shard locks only, while calls go on being applied.
     */
    public Command.EvictVictims planEviction(long now) {
        return eviction.plan(now);
    }

    /** Whether allocated bytes exceed the high watermark of the mounted capacity. */
    public boolean overHighWatermark() {
        return segments.overHighWatermark();
    }

    /**
     * Applies one command at time {@code now} (nanos, or the last entry's time if that is later); the only way state
     * changes. The command is numbered, journaled and applied under the ordering lock, on the caller's thread.
     */
    public <R> R apply(long now, Command<R> command) {
        order.lock();
        try {
            long index = lastIndex + 1;
            long at = Math.max(now, lastNow);
            Consumer<LogEntry> j = journal;
            if (j != null) {
                // before the state changes: an entry that fails half-way still changed what it changed
                j.accept(new LogEntry(index, at, command));
            }
            return applyAt(index, at, command);
        } finally {
            order.unlock();
        }
    }

    /**
     * Applies a batch's commands in order at {@code now}, each as {@link #apply} would, in one hold of the ordering point,
     * their keys looked up first ({@link LookAhead}). Each result is the command's result or the exception that refused
     * it (what it changed before that stays, as in {@link #apply}).
     */
    public List<Object> applyAll(long now, List<? extends Command<?>> commands) {
        order.lock();
        try {
            lookAhead.commands(commands);
            List<Object> results = new ArrayList<>(commands.size());
            for (Command<?> c : commands) {
                Object r;
                try {
                    r = apply(now, c);
                } catch (RuntimeException refused) {
                    r = refused;
                }
                results.add(r);
            }
            return results;
        } finally {
            order.unlock();
        }
    }

    /** {@link LookAhead} of keys about to be read off the command stream when the ordering point is free; never waits. */
    public void lookAhead(List<String> keys) {
        if (order.tryLock()) {
            try {
                lookAhead.keys(keys);
            } finally {
                order.unlock();
            }
        }
    }

    /**
     * Applies an entry ordered elsewhere (a stream the journal recorded): it must be the
     * next index. Answers what {@link #apply} would have: the command's result, or the {@link StoreException} it was
     * refused with (a refusal is an outcome of the entry, not a failure to apply it).
     */
    public Object replay(LogEntry e) {
        order.lock();
        try {
            if (e.index() != lastIndex + 1 || e.now() < lastNow) {
                throw new IllegalStateException("entry " + e.index() + " at " + e.now() + " does not follow entry "
                        + lastIndex + " at " + lastNow);
            }
            Consumer<LogEntry> j = journal;
            if (j != null) {
                j.accept(e);
            }
            try {
                return applyAt(e.index(), e.now(), e.command());
            } catch (StoreException refused) {
                return refused;
            }
        } finally {
            order.unlock();
        }
    }

    /**
     * Runs {@code work} holding the ordering point, so the commands it applies take consecutive indexes (a batch
     * call's items stay together in the log, for a group commit later) and pay for the lock once.
     */
    public <T> T inOrder(java.util.function.Supplier<T> work) {
        order.lock();
        try {
            return work.get();
        } finally {
            order.unlock();
        }
    }

    /**
     * Hands every entry to {@code journal} before it is applied, on the applying thread and under the ordering lock
     * (so it must be quick); null stops it. Set it before the first command to record a stream that replays from
     * empty.
     */
    public void journal(Consumer<LogEntry> journal) {
        this.journal = journal;
    }

    /**
     * The state as bytes, at the last entry applied ({@link #lastApplied}): {@link #restore} of it, then the entries
     * after that one replayed, gives the state this master has after them. Taken under the ordering point, so no
     * command is applied meanwhile.
     */
    public byte[] snapshot() {
        order.lock();
        try {
            return MasterSnapshot.write(this, new MasterSnapshot.Position(lastIndex, lastNow, housekeeping.lastReclaimSweep()));
        } finally {
            order.unlock();
        }
    }

    /**
     * A state restored from {@link #snapshot}'s bytes under {@code config} (its shard count must be the snapshot's);
     * it goes on with the entry after the snapshot's. A corrupt or foreign snapshot is refused
     * ({@link IllegalArgumentException}), never half-read into a state.
     */
    public static MasterState restore(MasterConfig config, byte[] snapshot) {
        MasterState s = new MasterState(config);
        MasterSnapshot.Position at = MasterSnapshot.read(s, snapshot);
        s.lastIndex = at.lastIndex();
        s.lastNow = at.lastNow();
        s.housekeeping.restore(at.lastReclaimSweep());
        return s;
    }

    /** The group's client-credential key, or null while the state holds none. */
    byte[] credentialKey() {
        return credentialKey;
    }

    /**
     * Adopts {@code key} unless the state holds one: the first key entry of the log is the group's key on every master
     * and in every replay, later ones change nothing. Called on the applier in log order, and by a snapshot's restore.
     */
    void adoptCredentialKey(byte[] key) {
        if (key.length != CREDENTIAL_KEY_BYTES) {
            throw new IllegalArgumentException("a client-credential key of " + key.length + " bytes, not "
                    + CREDENTIAL_KEY_BYTES);
        }
        if (credentialKey == null) {
            credentialKey = key.clone();
        }
    }

    /** The index of the last entry applied (0 before the first). */
    public long lastApplied() {
        order.lock();
        try {
            return lastIndex;
        } finally {
            order.unlock();
        }
    }

    /** The time of the last entry applied (nanos; {@link Long#MIN_VALUE} before the first). */
    public long lastAppliedTime() {
        order.lock();
        try {
            return lastNow;
        } finally {
            order.unlock();
        }
    }

    private <R> R applyAt(long index, long now, Command<R> command) {
        lastIndex = index;
        lastNow = now;
        return dispatch(now, command);
    }

    /** Hands the command to the part it belongs to; runs only under {@link #order}. */
    @SuppressWarnings("unchecked")
    private <R> R dispatch(long now, Command<R> command) {
        Object result = switch (command) {
            case Command.PutStart c -> puts.start(now, c);
            case Command.PutEnd c -> {
                puts.end(now, c);
                yield null;
            }
            case Command.PutRevoke c -> {
                puts.revoke(c);
                yield null;
            }
            case Command.Commit c -> {
                lookAhead.commit(c);
                yield reservations.commit(now, c);
            }
            case Command.GrantRead c -> objects.grantRead(now, c.key());
            case Command.RenewReads c -> ReadRenewals.renew(this, now, c.keys());
            case Command.Remove c -> {
                objects.remove(now, c.key(), c.force());
                yield null;
            }
            case Command.RemoveKeys c -> objects.removeKeys(now, c.keys(), c.force());
            case Command.RemoveAll c -> objects.removeMatching(now, k -> true, c.force());
            case Command.Mount c -> {
                segments.mount(now, c.clientId(), c.segment(), c.incarnation());
                yield null;
            }
            case Command.Unmount c -> {
                segments.unmount(c.clientId(), c.segmentId());
                yield null;
            }
            case Command.Heartbeat c -> clients.heartbeat(now, c.clientId());
            case Command.Leave c -> {
                clients.leave(c.clientId());
                yield null;
            }
            case Command.Tick c -> housekeeping.tick(now, c.evict());
            case Command.Grace c -> clients.grace(now);
            case Command.Evict c -> eviction.evict(now);
            case Command.EvictVictims c -> eviction.evictVictims(now, c);
            case Command.TakeOffloads c -> offloads.take(now, c.clientId(), c.max());
            case Command.TakeDiskWork c -> new Command.DiskWork(segments.freedFor(c.clientId(), c.freedAck()),
                    offloads.take(now, c.clientId(), c.max()));
            case Command.OffloadDone c -> {
                offloads.done(now, c.clientId(), c.results());
                yield null;
            }
            case Command.DropDiskReplicas c -> objects.dropDiskReplicas(now, c);
            case Command.AdoptDiskReplicas c -> adoption.adopt(now, c);
            case Command.Once<?> c -> requestIds.once(c.clientId(), c.seq(), () -> dispatch(now, c.command()));
        };
        return (R) result;
    }

    // ---------------------------------------------------------------- reads off the command stream

    /**
     * Up to {@code limit} disk replicas on segment {@code segmentId} of {@code clientId} from the {@code from}-th in walk
     * order, for its scrub (a walk over the objects: read off the stream, shard by shard; pages of a changing table may
     * skip or repeat a replica). Refused (ILLEGAL_CLIENT, SEGMENT_NOT_FOUND) for another client's or no disk segment.
     */
    public List<Command.DiskReplica> diskReplicas(String clientId, String segmentId, long from, int limit) {
        return objects.diskReplicas(clientId, segmentId, from, limit);
    }

    /** Whether the client has offloads waiting to be taken (a poll that would take nothing need not be a command). */
    public boolean hasOffloadsFor(String clientId) {
        return offloads.hasQueued(clientId);
    }

    /** Whether ranges freed on the client's disk segment wait past {@code freedAck}, or confirmed ones wait to be dropped. */
    public boolean hasFreedFor(String clientId, long freedAck) {
        MountedSegment d = segments.diskOf(clientId);
        return d != null && d.hasFreedSince(freedAck);
    }

    /** The key's replicas under the lease it holds, if it runs long enough; else null (see {@code ObjectTable.heldRead}). */
    public ReplicaList heldRead(long now, String key) {
        return objects.heldRead(now, key);
    }

    /** Whether the key is readable now. Grants no lease, so probing does not keep objects from eviction. */
    public boolean exists(String key) {
        return objects.exists(key);
    }

    /** The object's size in bytes; no lease. */
    public long size(String key) {
        return objects.size(key);
    }

    /**
     * Keys {@code regex} (RE2 syntax) matches whole, found without the ordering point or any shard lock held during
     * a match; {@code INVALID_PARAMS} naming the pattern if RE2 refuses it.
     */
    public List<String> keysMatching(String regex) {
        return objects.keysMatching(ObjectTable.compile(regex));
    }

    public record SegmentView(String id, String engineSegment, String host, String owner, long capacity, long used,
                              long largestFree, org.tent4j.store.Tier tier) {
    }

    public record ClientView(String id, int segments, long silentNanos, long reservedBytes) {
    }

    /** {@code askedReplicas}: the memory replicas its put asked for (repair brings it back to that many). */
    public record KeyView(String key, long size, String state, long leaseRemainingNanos, boolean hardPin,
                          boolean softPin, List<ReplicaLocation> replicas, int askedReplicas) {
    }

    public List<SegmentView> segments() {
        return views.segments();
    }

    public List<ClientView> clients(long now) {
        return views.clients(now);
    }

    public KeyView describe(long now, String key) {
        return views.describe(now, key);
    }

    /** Up to {@code limit} keys, in no particular order. */
    public List<String> keys(int limit) {
        return views.keys(limit);
    }

    /** The most read keys with their estimated read counts (one read in four is sampled), most read first. */
    public List<Map.Entry<String, Long>> hotKeys(int limit) {
        return objects.hotKeys.top(limit);
    }

    /** Bytes granted to clients' reservations and not yet committed (counted as used by the allocators). */
    public long reservedBytes() {
        return views.reservedBytes();
    }

    public long objectCount() {
        return counters.objects.sum();
    }

    /** Counters since start, for metrics and the status page. */
    public record Stats(long objects, long objectBytes, long evictedObjects, long evictedBytes, long evictionRounds,
                        long leasesGranted, long removalsBlockedByLease, long putsTakenOver, long putsReclaimed,
                        long partialAllocations, long allocationFailures, long clientsExpired, long segmentsReplaced,
                        int clients,
                        long objectsCommitted, long reservationsGranted, long reservationsReleased, long reservedBytes,
                        Tiering tiering, Repair repair) {
    }

    /**
     * Replica repair: objects with fewer memory replicas than their put asked (and no disk replica) now, repairs in
     * flight now, and repairs by outcome since start.
     */
    public record Repair(int underReplicated, int inFlight, long started, long completed, long failed, long expired,
                         long cancelled) {
    }

    /** The disk tier: offloads by outcome, disk reads and evictions, and the offloads in flight now. */
    public record Tiering(long offloadsStarted, long offloadsCompleted, long offloadsFailed, long offloadsCancelled,
                          long offloadsDuplicate, long offloadsNoSpace, long diskReads, long diskEvictedObjects,
                          int offloadsInFlight, long promotionsStarted, long promotionsCompleted, long scrubDropped,
                          long writeThroughStarted, long offloadsRemote) {
    }

    public Stats stats() {
        return views.stats();
    }
}
