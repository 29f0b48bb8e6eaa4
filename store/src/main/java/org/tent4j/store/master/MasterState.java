package org.tent4j.store.master;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command.ClientStatus;
import org.tent4j.store.master.Command.CommitResult;
import org.tent4j.store.master.Command.Grant;
import org.tent4j.store.master.Command.PutTicket;
import org.tent4j.store.master.Command.ReplicaList;
import org.tent4j.store.master.Command.TickReport;

/**
 * The master's whole state: segments and their allocators, clients, and the object map split into shards, each
 * guarded by its own lock. Nothing here reads a clock; {@link #apply} is told the time.
 *
 * <p>Invariants: a byte of a mounted segment belongs to at most one live replica or parked range; a range is reused
 * only after every read lease that could cover it has ended (removals of leased objects and replaced upsert versions
 * are parked until the lease deadline, abandoned puts until their release timeout).
 */
public final class MasterState {
    private final MasterConfig config;
    private final long leaseNanos;
    private final Shard[] shards;

    private final Object segmentsLock = new Object();
    private final ConcurrentHashMap<String, MountedSegment> segmentsById = new ConcurrentHashMap<>();
    /** Index -> segment, copy-on-write; indexes are never reused, so a stale packed replica never names a new segment. */
    private volatile MountedSegment[] segmentTable = new MountedSegment[0];
    /** Segments open for allocation, copy-on-write. */
    private volatile MountedSegment[] active = new MountedSegment[0];
    /** Bytes allocated on the active segments (objects, reservations, parked ranges). */
    private final AtomicLong allocated = new AtomicLong();
    /** {@link #allocated} above this is over the high watermark: eviction is wanted (recomputed on mount/unmount). */
    private volatile long evictAbove = Long.MAX_VALUE;
    /**
     * Told, on the allocating thread and possibly under a shard's lock, that usage passed the high watermark or an
     * allocation failed; so it takes no lock (a flag and a wake-up).
     */
    private volatile Runnable evictionWanted = () -> { };

    private final ConcurrentHashMap<String, ClientRecord> clients = new ConcurrentHashMap<>();
    private final AtomicLong clientIndexes = new AtomicLong();
    private final AtomicLong putIds = new AtomicLong();

    /** Reservations by id, of every client: a commit naming another client's id is told whose it is. */
    private final ConcurrentHashMap<Long, Reservation> reservations = new ConcurrentHashMap<>();
    private final AtomicLong reservationIds = new AtomicLong();
    /** Live reservations one client may hold (a peer chooses how many it asks for). */
    public static final int MAX_RESERVATIONS_PER_CLIENT = 64;
    /** Largest reservation, and so largest value a commit may carry. */
    public static final long MAX_RESERVATION_BYTES = 16L << 20;
    /** Most items in one commit: it is served on the stream's event loop. */
    public static final int MAX_COMMIT_ITEMS = 1024;
    /**
     * Most objects a put that found no room evicts itself (one sample of {@link #EVICTION_SAMPLES} each) before it
     * is refused: it runs on an event loop, so it is bounded; the evictor thread does the rest.
     */
    static final int MAX_INLINE_EVICTIONS = 64;
    /** Evictable objects looked at to choose one victim (Redis's {@code maxmemory-samples} is 5; more is closer to LRU). */
    static final int EVICTION_SAMPLES = 16;
    /** Leases sampled per eviction round to find the age below which objects go. */
    static final int LEASE_SAMPLES = 4096;

    private final Object evictionLock = new Object();
    private final PriorityQueue<Parked> parked = new PriorityQueue<>(Comparator.comparingLong(Parked::releaseAt));
    private long lastReclaimSweep = Long.MIN_VALUE;

    private static final int HOT_KEY_SAMPLING = 4;
    private final ConcurrentHashMap<String, LongAdder> readCounts = new ConcurrentHashMap<>();

    final LongAdder objects = new LongAdder();
    final LongAdder objectBytes = new LongAdder();
    final LongAdder evictedObjects = new LongAdder();
    final LongAdder evictedBytes = new LongAdder();
    final LongAdder evictionRounds = new LongAdder();
    final LongAdder leasesGranted = new LongAdder();
    final LongAdder removalsBlockedByLease = new LongAdder();
    final LongAdder putsTakenOver = new LongAdder();
    final LongAdder putsReclaimed = new LongAdder();
    final LongAdder partialAllocations = new LongAdder();
    final LongAdder allocationFailures = new LongAdder();
    final LongAdder clientsExpired = new LongAdder();
    final LongAdder reservationsGranted = new LongAdder();
    final LongAdder reservationsReleased = new LongAdder();
    final LongAdder objectsCommitted = new LongAdder();

    public MasterState(MasterConfig config) {
        this.config = config;
        this.leaseNanos = config.leaseTtl().toNanos();
        this.shards = new Shard[config.shards()];
        for (int i = 0; i < shards.length; i++) {
            shards[i] = new Shard();
        }
    }

    public MasterConfig config() {
        return config;
    }

    /**
     * Registers who to tell when eviction is wanted: usage passed the high watermark or a put or reservation found
     * no room. Called often while usage stays high, so it must be cheap (a flag and a wake-up).
     */
    public void onEvictionWanted(Runnable hook) {
        this.evictionWanted = hook;
    }

    /** Whether allocated bytes exceed the high watermark of the mounted capacity. */
    public boolean overHighWatermark() {
        return allocated.get() > evictAbove;
    }

    /** Applies one command at time {@code now} (nanos); the only way state changes. */
    @SuppressWarnings("unchecked")
    public <R> R apply(long now, Command<R> command) {
        Object result = switch (command) {
            case Command.PutStart c -> putStart(now, c);
            case Command.PutEnd c -> {
                putEnd(now, c);
                yield null;
            }
            case Command.PutRevoke c -> {
                putRevoke(c);
                yield null;
            }
            case Command.Commit c -> commit(now, c);
            case Command.GrantRead c -> grantRead(now, c.key());
            case Command.Remove c -> {
                remove(now, c.key(), c.force());
                yield null;
            }
            case Command.RemoveByRegex c -> removeMatching(now, compile(c.regex()).asMatchPredicate(), c.force());
            case Command.RemoveAll c -> removeMatching(now, k -> true, c.force());
            case Command.Mount c -> {
                mount(now, c.clientId(), c.segment());
                yield null;
            }
            case Command.Unmount c -> {
                unmount(c.clientId(), c.segmentId());
                yield null;
            }
            case Command.Heartbeat c -> heartbeat(now, c.clientId());
            case Command.Tick c -> tick(now);
            case Command.Evict c -> evict(now);
        };
        return (R) result;
    }

    // ---------------------------------------------------------------- puts

    private PutTicket putStart(long now, Command.PutStart c) {
        checkKey(c.key());
        ReplicateConfig cfg = c.config();
        if (c.size() <= 0) {
            throw new StoreException(StoreError.INVALID_PARAMS, "size of key '" + c.key() + "' must be > 0: " + c.size());
        }
        if (cfg.replicas() < 1 || cfg.replicas() > config.maxReplicas()) {
            throw new StoreException(StoreError.INVALID_PARAMS, "replica count for key '" + c.key() + "' must be in [1, "
                    + config.maxReplicas() + "]: " + cfg.replicas());
        }
        if (cfg.excludedSegments().size() > 1024 || cfg.preferredSegments().size() > 1024) {
            throw new StoreException(StoreError.INVALID_PARAMS, "at most 1024 preferred and 1024 excluded segments per put");
        }
        if (cfg.softPinTtl() != null && (cfg.softPinTtl().isNegative() || cfg.softPinTtl().compareTo(config.maxSoftPinTtl()) > 0)) {
            throw new StoreException(StoreError.INVALID_PARAMS, "soft pin TTL for key '" + c.key() + "' must be in [0, "
                    + config.maxSoftPinTtl() + "]: " + cfg.softPinTtl());
        }
        ClientRecord client = seen(c.clientId(), now);
        MountedSegment[] candidates = active;
        if (candidates.length == 0) {
            allocationFailures.increment();
            throw new StoreException(StoreError.NO_AVAILABLE_HANDLE, "no segment is mounted to hold key '" + c.key() + "'");
        }
        long largest = 0;
        for (MountedSegment s : candidates) {
            largest = Math.max(largest, s.allocator.capacity());
        }
        if (RangeAllocator.aligned(c.size()) > largest) {
            throw new StoreException(StoreError.OBJECT_TOO_LARGE, "key '" + c.key() + "' of " + c.size()
                    + " bytes is larger than the largest mounted segment (" + largest + " bytes)");
        }
        PutTicket ticket = tryPutStart(now, c, client);
        if (ticket == null) {
            evictionWanted.run();
            // a few sampled victims, not a pass over every object: this runs on an event loop. Eviction takes other
            // shards' locks, so it runs with none held
            SplittableRandom rnd = new SplittableRandom(c.seed() ^ 0x5DEECE66DL);
            for (int i = 0; i < MAX_INLINE_EVICTIONS && ticket == null && evictOne(now, rnd); i++) {
                ticket = tryPutStart(now, c, client);
            }
        }
        if (ticket == null) {
            allocationFailures.increment();
            throw new StoreException(StoreError.NO_AVAILABLE_HANDLE, "no segment has " + c.size()
                    + " free bytes for key '" + c.key() + "' even after eviction (leased, pinned and in-flight objects are kept)");
        }
        return ticket;
    }

    /** The reservation, or null when no segment had room. */
    private PutTicket tryPutStart(long now, Command.PutStart c, ClientRecord client) {
        Shard shard = shard(c.key());
        synchronized (shard) {
            ObjectRecord rec = shard.map.get(c.key());
            boolean takeOver = checkWritable(rec, c.key(), now, c.upsert());
            long[] placed = place(c, client);
            if (placed == null) {
                return null;
            }
            if (placed.length < c.config().replicas()) {
                partialAllocations.increment();
            }
            if (takeOver) {
                rec = takeOver(shard, c.key(), rec);
            }
            long putId = putIds.incrementAndGet();
            long pinTtl = c.config().softPin()
                    ? (c.config().softPinTtl() == null ? config.defaultSoftPinTtl() : c.config().softPinTtl()).toNanos() : 0;
            if (rec == null) {
                rec = new ObjectRecord();
                rec.state = ObjectRecord.PROCESSING;
                rec.size = c.size();
                rec.setReplicas(placed);
                shard.map.put(c.key(), rec);
                objects.increment();
            } else {
                // upsert of a readable object: readers keep the old version until the new one is complete
                rec.pending = placed;
                rec.pendingSize = c.size();
                rec.flags |= ObjectRecord.UPSERTING;
            }
            rec.putStart = now;
            rec.putId = putId;
            rec.owner = client.index;
            rec.pin = pinTtl;
            if (c.config().hardPin()) {
                rec.flags |= ObjectRecord.HARD_PIN;
            }
            return new PutTicket(putId, locations(placed, c.size()));
        }
    }

    /** The client's record, made on its first call, marked as heard from at {@code now}. */
    private ClientRecord seen(String clientId, long now) {
        ClientRecord client = clients.computeIfAbsent(clientId, id -> new ClientRecord(id, (int) clientIndexes.incrementAndGet(), now));
        client.lastSeen = now;
        return client;
    }

    /** Throws unless the key may be written now; true if an abandoned put of it must be taken over first. */
    private boolean checkWritable(ObjectRecord rec, String key, long now, boolean upsert) {
        if (rec == null) {
            return false;
        }
        if (rec.inFlight()) {
            long age = now - rec.putStart;
            if (age < config.putDiscardTimeout().toNanos()) {
                throw new StoreException(StoreError.OBJECT_IN_FLIGHT, "key '" + key + "' is being written by client "
                        + ownerName(rec.owner) + " (started " + age / 1_000_000 + " ms ago); it is not readable yet");
            }
            if (rec.state == ObjectRecord.PROCESSING) {
                return true;
            }
        }
        if (rec.state == ObjectRecord.COMPLETE && !upsert) {
            throw new StoreException(StoreError.OBJECT_ALREADY_EXISTS, "key '" + key + "' already exists");
        }
        return rec.inFlight();
    }

    /** Parks an abandoned put's space; the record left, null if the object was only that put. */
    private ObjectRecord takeOver(Shard shard, String key, ObjectRecord rec) {
        putsTakenOver.increment();
        // the abandoned writer may still be moving bytes: its space waits out the release timeout
        long releaseAt = rec.putStart + config.putReleaseTimeout().toNanos();
        if (rec.state == ObjectRecord.PROCESSING) {
            park(rec.replicas(), rec.size, releaseAt);
            shard.map.remove(key);
            objects.decrement();
            return null;
        }
        park(rec.pending, rec.pendingSize, releaseAt);
        rec.pending = null;
        rec.flags &= ~ObjectRecord.UPSERTING;
        return rec;
    }

    // ---------------------------------------------------------------- reservations and commits

    private CommitResult commit(long now, Command.Commit c) {
        if (c.items().size() > MAX_COMMIT_ITEMS || c.retire().size() > MAX_RESERVATIONS_PER_CLIENT) {
            throw new StoreException(StoreError.INVALID_PARAMS, "a commit carries at most " + MAX_COMMIT_ITEMS
                    + " items and retires at most " + MAX_RESERVATIONS_PER_CLIENT + " reservations: " + c.items().size()
                    + " items, " + c.retire().size() + " retired");
        }
        if (c.clientId() == null || c.clientId().isEmpty()) {
            throw new StoreException(StoreError.INVALID_PARAMS, "client id is empty");
        }
        ClientRecord client = seen(c.clientId(), now);
        StoreException[] failures = new StoreException[c.items().size()];
        for (int i = 0; i < failures.length; i++) {
            try {
                commitItem(now, client, c.items().get(i));
            } catch (StoreException e) {
                failures[i] = e;
            }
        }
        for (long id : c.retire()) {
            Reservation r = reservations.get(id);
            if (r != null && r.owner == client) {
                synchronized (client.reserved) {
                    release(r);
                }
            }
        }
        List<Grant> granted = List.of();
        StoreException refillFailure = null;
        if (c.refill() != null) {
            try {
                granted = reserve(now, client, c.refill(), c.seed());
            } catch (StoreException e) {
                // the items are committed whatever happens to the refill: the answer must still say so
                refillFailure = e;
            }
        }
        return new CommitResult(failures, granted, refillFailure);
    }

    private void commitItem(long now, ClientRecord client, Command.CommitItem item) {
        String key = item.key();
        checkKey(key);
        if (item.size() <= 0 || item.size() > MAX_RESERVATION_BYTES) {
            throw new StoreException(StoreError.INVALID_PARAMS, "size of key '" + key + "' must be in [1, "
                    + MAX_RESERVATION_BYTES + "] to commit into a reservation: " + item.size());
        }
        int n = item.reservations().length;
        if (n == 0 || n != item.addresses().length || n > config.maxReplicas()) {
            throw new StoreException(StoreError.INVALID_PARAMS, "key '" + key + "' names " + n + " reservations and "
                    + item.addresses().length + " addresses; both must be the replica count, in [1, " + config.maxReplicas() + "]");
        }
        long len = RangeAllocator.aligned(item.size());
        Reservation[] rs = new Reservation[n];
        for (int j = 0; j < n; j++) {
            Reservation r = reservations.get(item.reservations()[j]);
            if (r == null) {
                throw new StoreException(StoreError.INVALID_WRITE, "key '" + key + "': reservation " + item.reservations()[j]
                        + " (address " + item.addresses()[j] + ") is not held by client " + client.id
                        + " (released, expired or never granted)");
            }
            if (r.owner != client) {
                throw new StoreException(StoreError.ILLEGAL_CLIENT, "key '" + key + "': reservation " + r.id + " on segment "
                        + r.seg.spec.id() + " (offset " + (item.addresses()[j] - r.seg.spec.base()) + ") belongs to client "
                        + r.owner.id + ", not " + client.id);
            }
            for (int k = 0; k < j; k++) {
                if (rs[k].seg == r.seg) {
                    throw new StoreException(StoreError.INVALID_PARAMS, "key '" + key + "': two replicas on segment " + r.seg.spec.id());
                }
            }
            rs[j] = r;
        }
        Shard shard = shard(key);
        synchronized (shard) {
            ObjectRecord rec = shard.map.get(key);
            boolean takeOver = checkWritable(rec, key, now, false);
            long[] placed = new long[n];
            synchronized (client.reserved) {
                for (int j = 0; j < n; j++) {
                    Reservation r = rs[j];
                    long off = item.addresses()[j] - r.seg.spec.base();
                    String range = "[" + off + ", " + (off + len) + ") of segment " + r.seg.spec.id();
                    if (r.released) {
                        throw new StoreException(StoreError.INVALID_WRITE, "key '" + key + "': reservation " + r.id
                                + " on segment " + r.seg.spec.id() + " (offset " + off + ") was released");
                    }
                    if ((off & (RangeAllocator.ALIGNMENT - 1)) != 0 || off < r.start || off + len > r.end || off + len < off) {
                        throw new StoreException(StoreError.INVALID_WRITE, "key '" + key + "': " + range + " (offset " + off
                                + ") is not a " + RangeAllocator.ALIGNMENT + "-byte aligned range inside client " + client.id
                                + "'s reservation " + r.id + " [" + r.start + ", " + r.end + ")");
                    }
                    if (off < r.mark) {
                        throw new StoreException(StoreError.INVALID_WRITE, "key '" + key + "': " + range + " (offset " + off
                                + ") overlaps bytes committed earlier (reservation " + r.id + " is committed up to " + r.mark + ")");
                    }
                    if (!r.seg.mounted()) {
                        throw new StoreException(StoreError.SEGMENT_NOT_FOUND, "key '" + key + "': segment " + r.seg.spec.id()
                                + " (offset " + off + ") was unmounted");
                    }
                    placed[j] = ObjectRecord.pack(r.seg.index, off);
                }
                for (int j = 0; j < n; j++) {
                    Reservation r = rs[j];
                    long off = ObjectRecord.offset(placed[j]);
                    // bytes skipped over (an item refused earlier) go back now: the writer never commits below its mark
                    if (off > r.mark) {
                        r.seg.free(r.mark, off - r.mark);
                    }
                    r.mark = off + len;
                    r.lastUsed = now;
                }
            }
            if (takeOver) {
                rec = takeOver(shard, key, rec);
            }
            rec = new ObjectRecord();
            rec.state = ObjectRecord.COMPLETE;
            rec.size = item.size();
            rec.setReplicas(placed);
            rec.putStart = now;
            rec.putId = putIds.incrementAndGet();
            rec.owner = client.index;
            rec.lease = now;
            shard.map.put(key, rec);
            objects.increment();
            objectBytes.add(item.size());
            objectsCommitted.increment();
        }
    }

    /** Grants {@code r.bytes()} on each of {@code r.replicas()} distinct segments, or nothing if not all have room. */
    private List<Grant> reserve(long now, ClientRecord client, Command.Reserve r, long seed) {
        if (r.bytes() <= 0 || r.bytes() > MAX_RESERVATION_BYTES || r.replicas() < 1 || r.replicas() > config.maxReplicas()) {
            throw new StoreException(StoreError.INVALID_PARAMS, "a reservation is [1, " + MAX_RESERVATION_BYTES
                    + "] bytes on [1, " + config.maxReplicas() + "] segments: " + r.bytes() + " bytes on " + r.replicas());
        }
        checkReservationCount(client, r.replicas());
        Command.PutStart shape = new Command.PutStart(client.id, "", r.bytes(), ReplicateConfig.replicas(r.replicas()),
                r.writerHost(), false, seed);
        // no eviction here when it does not fit: this runs on an event loop, so the evictor is woken instead (it frees
        // runs of neighbours a later reservation fits in) and the client takes the two-call path meanwhile
        long[] placed = placeAll(shape, client);
        if (placed == null) {
            evictionWanted.run();
            return List.of();
        }
        long len = RangeAllocator.aligned(r.bytes());
        synchronized (client.reserved) {
            try {
                checkReservationCount(client, r.replicas());
            } catch (StoreException e) {
                free(placed, r.bytes());
                throw e;
            }
            List<Grant> out = new ArrayList<>(placed.length);
            for (long p : placed) {
                MountedSegment seg = segmentAt(ObjectRecord.segment(p));
                long off = ObjectRecord.offset(p);
                Reservation res = new Reservation(reservationIds.incrementAndGet(), client, seg, off, off + len, now);
                reservations.put(res.id, res);
                client.reserved.add(res);
                reservationsGranted.increment();
                out.add(new Grant(res.id, new ReplicaLocation(seg.spec.id(), seg.spec.engineSegment(), seg.spec.host(),
                        seg.spec.base() + off, len)));
            }
            return out;
        }
    }

    private static void checkReservationCount(ClientRecord client, int more) {
        synchronized (client.reserved) {
            if (client.reserved.size() + more > MAX_RESERVATIONS_PER_CLIENT) {
                throw new StoreException(StoreError.INVALID_PARAMS, "client " + client.id + " holds " + client.reserved.size()
                        + " reservations; at most " + MAX_RESERVATIONS_PER_CLIENT);
            }
        }
    }

    /** Every replica of {@code shape} placed on distinct segments, or null (and nothing held) if not all fit. */
    private long[] placeAll(Command.PutStart shape, ClientRecord client) {
        long[] placed = place(shape, client);
        if (placed != null && placed.length < shape.config().replicas()) {
            free(placed, shape.size());
            return null;
        }
        return placed;
    }

    /** Gives back what was never committed; the caller holds {@code r.owner.reserved}. */
    private void release(Reservation r) {
        release(r, Long.MIN_VALUE);
    }

    /**
     * As {@link #release(Reservation)}, but the uncommitted rest waits until {@code parkUntil} before it can be handed
     * out again (unless that is {@code Long.MIN_VALUE}): a client that went silent may still be writing into it.
     */
    private void release(Reservation r, long parkUntil) {
        if (r.released) {
            return;
        }
        r.released = true;
        if (r.end > r.mark && parkUntil != Long.MIN_VALUE) {
            park(new long[] {ObjectRecord.pack(r.seg.index, r.mark)}, r.end - r.mark, parkUntil);
        } else if (r.end > r.mark) {
            r.seg.free(r.mark, r.end - r.mark);
        }
        r.mark = r.end;
        reservations.remove(r.id);
        r.owner.reserved.remove(r);
        reservationsReleased.increment();
    }

    /** Releases the client's reservations unused since {@code unusedSince}, their rest parked until {@code parkUntil}. */
    private void releaseAll(ClientRecord client, long unusedSince, long parkUntil) {
        synchronized (client.reserved) {
            for (Reservation r : new ArrayList<>(client.reserved)) {
                if (r.lastUsed <= unusedSince) {
                    release(r, parkUntil);
                }
            }
        }
    }

    /** Allocates up to the wanted number of replicas on distinct segments; null if none could be placed. */
    private long[] place(Command.PutStart c, ClientRecord client) {
        MountedSegment[] segs = active;
        int want = Math.min(c.config().replicas(), segs.length);
        long[] out = new long[want];
        int n = 0;
        boolean[] tried = new boolean[segs.length];
        if (!c.config().excludedSegments().isEmpty()) {
            for (int i = 0; i < segs.length; i++) {
                tried[i] = c.config().excludedSegments().contains(segs[i].spec.id());
            }
        }
        SplittableRandom rnd = new SplittableRandom(c.seed());
        for (String pref : c.config().preferredSegments()) {
            for (int i = 0; i < segs.length && n < want; i++) {
                if (!tried[i] && (segs[i].spec.id().equals(pref) || segs[i].spec.engineSegment().equals(pref))) {
                    tried[i] = true;
                    n = tryAllocate(segs[i], c.size(), out, n);
                }
            }
        }
        if (c.config().preferLocalHost() && c.writerHost() != null && n < want) {
            int start = rnd.nextInt(segs.length);
            for (int k = 0; k < segs.length && n < want; k++) {
                int i = (start + k) % segs.length;
                if (!tried[i] && segs[i].spec.host().equals(c.writerHost())) {
                    tried[i] = true;
                    n = tryAllocate(segs[i], c.size(), out, n);
                }
            }
        }
        if (config.placement() == Placement.FREE_RATIO_FIRST) {
            // two random choices, the emptier wins; a bounded number of rounds, then the walk below mops up
            for (int round = 0; round < 2 * segs.length && n < want; round++) {
                int a = rnd.nextInt(segs.length);
                int b = rnd.nextInt(segs.length);
                if (tried[a] && tried[b]) {
                    continue;
                }
                int pick = tried[a] ? b : tried[b] ? a : (segs[a].freeRatio() >= segs[b].freeRatio() ? a : b);
                tried[pick] = true;
                n = tryAllocate(segs[pick], c.size(), out, n);
            }
        }
        int start = rnd.nextInt(segs.length);
        for (int k = 0; k < segs.length && n < want; k++) {
            int i = (start + k) % segs.length;
            if (!tried[i]) {
                tried[i] = true;
                n = tryAllocate(segs[i], c.size(), out, n);
            }
        }
        if (allocated.get() > evictAbove) {
            evictionWanted.run();
        }
        return n == 0 ? null : (n == want ? out : Arrays.copyOf(out, n));
    }

    private static int tryAllocate(MountedSegment seg, long size, long[] out, int n) {
        long off = seg.allocate(size);
        if (off < 0) {
            return n;
        }
        out[n] = ObjectRecord.pack(seg.index, off);
        return n + 1;
    }

    private void putEnd(long now, Command.PutEnd c) {
        Shard shard = shard(c.key());
        synchronized (shard) {
            ObjectRecord rec = writeInProgress(shard, c.clientId(), c.key(), c.putId());
            if (rec == null) {
                return;
            }
            if (rec.state == ObjectRecord.PROCESSING) {
                if (!rec.hasReplicas()) {
                    shard.map.remove(c.key());
                    objects.decrement();
                    throw new StoreException(StoreError.SEGMENT_NOT_FOUND, "every segment written for key '" + c.key()
                            + "' was unmounted before the put ended");
                }
                rec.state = ObjectRecord.COMPLETE;
                objectBytes.add(rec.size);
            } else {
                if (rec.pending.length == 0) {
                    rec.pending = null;
                    rec.flags &= ~ObjectRecord.UPSERTING;
                    throw new StoreException(StoreError.SEGMENT_NOT_FOUND, "every segment written for the upsert of key '"
                            + c.key() + "' was unmounted before it ended");
                }
                // readers holding a lease may still be copying the old version
                park(rec.replicas(), rec.size, Math.max(now, rec.lease));
                objectBytes.add(rec.pendingSize - rec.size);
                rec.size = rec.pendingSize;
                rec.setReplicas(rec.pending);
                rec.pending = null;
                rec.flags &= ~ObjectRecord.UPSERTING;
            }
            rec.lease = now;
            if (rec.pin > 0) {
                rec.flags |= ObjectRecord.SOFT_PIN;
                rec.pin = now + rec.pin;
            }
        }
    }

    private void putRevoke(Command.PutRevoke c) {
        Shard shard = shard(c.key());
        synchronized (shard) {
            ObjectRecord rec = writeInProgress(shard, c.clientId(), c.key(), c.putId());
            if (rec == null) {
                throw new StoreException(StoreError.INVALID_WRITE, "put " + c.putId() + " of key '" + c.key()
                        + "' already ended; it cannot be revoked");
            }
            if (rec.state == ObjectRecord.PROCESSING) {
                free(rec.replicas(), rec.size);
                shard.map.remove(c.key());
                objects.decrement();
            } else {
                free(rec.pending, rec.pendingSize);
                rec.pending = null;
                rec.flags &= ~ObjectRecord.UPSERTING;
            }
        }
    }

    /** The record whose put {@code putId} is in flight; null if that put already ended (an idempotent repeat). */
    private ObjectRecord writeInProgress(Shard shard, String clientId, String key, long putId) {
        ObjectRecord rec = shard.map.get(key);
        if (rec == null) {
            throw new StoreException(StoreError.OBJECT_NOT_FOUND, "no put of key '" + key + "' is known (reclaimed or removed?)");
        }
        if (rec.putId != putId) {
            throw new StoreException(StoreError.INVALID_WRITE, "put " + putId + " of key '" + key
                    + "' was taken over by a later put (" + rec.putId + ")");
        }
        ClientRecord client = clients.get(clientId);
        if (client == null || client.index != rec.owner) {
            throw new StoreException(StoreError.ILLEGAL_CLIENT, "client " + clientId + " did not start put " + putId
                    + " of key '" + key + "' (" + ownerName(rec.owner) + " did)");
        }
        return rec.inFlight() ? rec : null;
    }

    // ---------------------------------------------------------------- reads

    private ReplicaList grantRead(long now, String key) {
        checkKey(key);
        Shard shard = shard(key);
        synchronized (shard) {
            ObjectRecord rec = shard.map.get(key);
            if (rec == null) {
                throw new StoreException(StoreError.OBJECT_NOT_FOUND, "key '" + key + "' not found");
            }
            if (rec.state != ObjectRecord.COMPLETE) {
                throw new StoreException(StoreError.REPLICA_IS_NOT_READY, "key '" + key + "' is still being written");
            }
            List<ReplicaLocation> locs = locations(rec.replicas(), rec.size);
            if (locs.isEmpty()) {
                throw new StoreException(StoreError.OBJECT_NOT_FOUND, "key '" + key + "' has no readable replica left");
            }
            rec.lease = Math.max(rec.lease, now + leaseNanos);
            leasesGranted.increment();
            // one read in HOT_KEY_SAMPLING is counted: hot keys are a metric, not state, so this draw is not replayed
            if (java.util.concurrent.ThreadLocalRandom.current().nextInt(HOT_KEY_SAMPLING) == 0) {
                readCounts.computeIfAbsent(key, k -> new LongAdder()).add(HOT_KEY_SAMPLING);
            }
            return new ReplicaList(rec.size, locs, config.leaseTtl());
        }
    }

    /** Whether the key is readable now. Grants no lease, so probing does not keep objects from eviction. */
    public boolean exists(String key) {
        checkKey(key);
        Shard shard = shard(key);
        synchronized (shard) {
            ObjectRecord rec = shard.map.get(key);
            return rec != null && rec.state == ObjectRecord.COMPLETE && !locations(rec.replicas(), rec.size).isEmpty();
        }
    }

    /** The object's size in bytes; no lease. */
    public long size(String key) {
        checkKey(key);
        Shard shard = shard(key);
        synchronized (shard) {
            ObjectRecord rec = shard.map.get(key);
            if (rec == null || rec.state != ObjectRecord.COMPLETE) {
                throw new StoreException(StoreError.OBJECT_NOT_FOUND, "key '" + key + "' not found");
            }
            return rec.size;
        }
    }

    // ---------------------------------------------------------------- removal

    private void remove(long now, String key, boolean force) {
        checkKey(key);
        Shard shard = shard(key);
        synchronized (shard) {
            ObjectRecord rec = shard.map.get(key);
            if (rec == null) {
                throw new StoreException(StoreError.OBJECT_NOT_FOUND, "key '" + key + "' not found");
            }
            if (rec.inFlight()) {
                throw new StoreException(StoreError.REPLICA_IS_NOT_READY, "key '" + key + "' has a put in flight");
            }
            if (rec.lease > now && !force) {
                removalsBlockedByLease.increment();
                throw new StoreException(StoreError.OBJECT_HAS_LEASE, "key '" + key + "' is leased to a reader for "
                        + (rec.lease - now) / 1_000_000 + " ms more");
            }
            erase(shard, key, rec, now);
        }
    }

    private int removeMatching(long now, Predicate<String> match, boolean force) {
        int removed = 0;
        for (Shard shard : shards) {
            synchronized (shard) {
                for (Iterator<Map.Entry<String, ObjectRecord>> it = shard.map.entrySet().iterator(); it.hasNext(); ) {
                    Map.Entry<String, ObjectRecord> e = it.next();
                    ObjectRecord rec = e.getValue();
                    if (rec.inFlight() || (rec.lease > now && !force) || !match.test(e.getKey())) {
                        continue;
                    }
                    it.remove();
                    release(rec, now);
                    removed++;
                }
            }
        }
        return removed;
    }

    private void erase(Shard shard, String key, ObjectRecord rec, long now) {
        shard.map.remove(key);
        release(rec, now);
    }

    /** Frees a removed record's space, or parks it while a lease may still cover it. */
    private void release(ObjectRecord rec, long now) {
        objects.decrement();
        objectBytes.add(-rec.size);
        if (rec.lease > now) {
            park(rec.replicas(), rec.size, rec.lease);
        } else {
            free(rec.replicas(), rec.size);
        }
    }

    private static Pattern compile(String regex) {
        if (regex == null || regex.isEmpty() || regex.length() > 4096) {
            throw new StoreException(StoreError.INVALID_PARAMS, "regex must be 1 to 4096 characters");
        }
        try {
            return Pattern.compile(regex);
        } catch (PatternSyntaxException e) {
            throw new StoreException(StoreError.INVALID_PARAMS, "bad regex '" + regex + "': " + e.getDescription());
        }
    }

    // ---------------------------------------------------------------- segments and clients

    private void mount(long now, String clientId, SegmentSpec spec) {
        if (clientId == null || clientId.isEmpty()) {
            throw new StoreException(StoreError.INVALID_PARAMS, "client id is empty");
        }
        if (spec.id() == null || spec.id().isEmpty() || spec.engineSegment() == null || spec.engineSegment().isEmpty()) {
            throw new StoreException(StoreError.INVALID_PARAMS, "segment id and engine segment name must not be empty");
        }
        if (spec.size() < RangeAllocator.ALIGNMENT || spec.size() > ObjectRecord.OFFSET_MASK) {
            throw new StoreException(StoreError.INVALID_PARAMS, "segment " + spec.id() + " size must be in ["
                    + RangeAllocator.ALIGNMENT + ", " + ObjectRecord.OFFSET_MASK + "]: " + spec.size());
        }
        synchronized (segmentsLock) {
            MountedSegment existing = segmentsById.get(spec.id());
            if (existing != null) {
                if (existing.owner.equals(clientId) && existing.spec.equals(spec)) {
                    return;
                }
                throw new StoreException(StoreError.SEGMENT_ALREADY_EXISTS, "segment " + spec.id() + " is already mounted by "
                        + existing.owner);
            }
            ClientRecord client = seen(clientId, now);
            int index = segmentTable.length;
            if (index >= ObjectRecord.MAX_SEGMENTS) {
                throw new StoreException(StoreError.UNAVAILABLE_IN_CURRENT_STATUS, "this master has mounted its maximum of "
                        + ObjectRecord.MAX_SEGMENTS + " segments; restart it");
            }
            MountedSegment seg = new MountedSegment(index, spec, clientId, allocated);
            MountedSegment[] table = Arrays.copyOf(segmentTable, index + 1);
            table[index] = seg;
            segmentTable = table;
            segmentsById.put(spec.id(), seg);
            MountedSegment[] act = Arrays.copyOf(active, active.length + 1);
            act[act.length - 1] = seg;
            active = act;
            evictAbove = evictAbove(act);
            client.segments.add(seg);
        }
    }

    private void unmount(String clientId, String segmentId) {
        MountedSegment seg = segmentsById.get(segmentId);
        if (seg == null) {
            return;
        }
        if (!seg.owner.equals(clientId)) {
            throw new StoreException(StoreError.ILLEGAL_CLIENT, "segment " + segmentId + " belongs to " + seg.owner
                    + ", not " + clientId);
        }
        dropSegments(List.of(seg));
    }

    /** Takes segments out of service; replicas on them vanish and objects left without one are erased. */
    private void dropSegments(List<MountedSegment> gone) {
        if (gone.isEmpty()) {
            return;
        }
        synchronized (segmentsLock) {
            for (MountedSegment seg : gone) {
                seg.markUnmounted();
                segmentsById.remove(seg.spec.id());
                ClientRecord owner = clients.get(seg.owner);
                if (owner != null) {
                    owner.segments.remove(seg);
                }
            }
            active = Arrays.stream(active).filter(MountedSegment::mounted).toArray(MountedSegment[]::new);
            evictAbove = evictAbove(active);
        }
        boolean[] dropped = new boolean[segmentTable.length];
        for (MountedSegment seg : gone) {
            dropped[seg.index] = true;
        }
        // one pass over every object however many segments went
        for (Shard shard : shards) {
            synchronized (shard) {
                for (Iterator<ObjectRecord> it = shard.map.values().iterator(); it.hasNext(); ) {
                    ObjectRecord rec = it.next();
                    if (!touches(rec, dropped)) {
                        continue;
                    }
                    rec.setReplicas(liveOnly(rec.replicas()));
                    if (rec.pending != null) {
                        rec.pending = liveOnly(rec.pending);
                    }
                    if (rec.state == ObjectRecord.COMPLETE && !rec.hasReplicas()) {
                        it.remove();
                        objects.decrement();
                        objectBytes.add(-rec.size);
                        if (rec.pending != null) {
                            free(rec.pending, rec.pendingSize);
                        }
                    }
                }
            }
        }
        synchronized (parked) {
            parked.removeIf(p -> !segmentAt(ObjectRecord.segment(p.replica)).mounted());
        }
    }

    private long evictAbove(MountedSegment[] segs) {
        long capacity = 0;
        for (MountedSegment s : segs) {
            capacity += s.allocator.capacity();
        }
        return (long) (capacity * config.highWatermark());
    }

    private static boolean touches(ObjectRecord rec, boolean[] dropped) {
        if (rec.replica0 != -1 && dropped[ObjectRecord.segment(rec.replica0)]) {
            return true;
        }
        return touches(rec.more, dropped) || touches(rec.pending, dropped);
    }

    private static boolean touches(long[] replicas, boolean[] dropped) {
        if (replicas != null) {
            for (long r : replicas) {
                if (dropped[ObjectRecord.segment(r)]) {
                    return true;
                }
            }
        }
        return false;
    }

    private long[] liveOnly(long[] replicas) {
        int n = 0;
        for (long r : replicas) {
            if (segmentAt(ObjectRecord.segment(r)).mounted()) {
                n++;
            }
        }
        if (n == replicas.length) {
            return replicas;
        }
        long[] out = new long[n];
        int i = 0;
        for (long r : replicas) {
            if (segmentAt(ObjectRecord.segment(r)).mounted()) {
                out[i++] = r;
            }
        }
        return out;
    }

    private ClientStatus heartbeat(long now, String clientId) {
        ClientRecord client = clients.get(clientId);
        if (client == null) {
            return ClientStatus.NEED_REMOUNT;
        }
        client.lastSeen = now;
        return ClientStatus.OK;
    }

    // ---------------------------------------------------------------- housekeeping

    private TickReport tick(long now) {
        releaseParked(now);
        List<String> expired = expireClients(now);
        for (ClientRecord client : clients.values()) {
            // a reservation untouched as long as an abandoned put's space is held: its writer is gone
            releaseAll(client, now - config.putReleaseTimeout().toNanos(), Long.MIN_VALUE);
        }
        int reclaimed = 0;
        long sweepEvery = config.putReleaseTimeout().toNanos() / 10;
        if (lastReclaimSweep == Long.MIN_VALUE || now - lastReclaimSweep >= sweepEvery) {
            lastReclaimSweep = now;
            reclaimed = reclaimAbandonedPuts(now);
        }
        Command.Evicted evicted = evict(now);
        trimReadCounts();
        return new TickReport(expired, reclaimed, evicted.objects(), evicted.bytes());
    }

    private List<String> expireClients(long now) {
        long ttl = config.clientTtl().toNanos();
        List<String> expired = new ArrayList<>();
        List<MountedSegment> gone = new ArrayList<>();
        for (ClientRecord client : clients.values()) {
            if (now - client.lastSeen > ttl && clients.remove(client.id, client)) {
                expired.add(client.id);
                // as an abandoned put's space: a client silent past its TTL may only be stalled, and still writing
                releaseAll(client, Long.MAX_VALUE, now + config.putReleaseTimeout().toNanos());
                clientsExpired.increment();
                gone.addAll(client.segments);
            }
        }
        dropSegments(gone);
        return expired;
    }

    private int reclaimAbandonedPuts(long now) {
        long timeout = config.putReleaseTimeout().toNanos();
        int reclaimed = 0;
        for (Shard shard : shards) {
            synchronized (shard) {
                for (Iterator<ObjectRecord> it = shard.map.values().iterator(); it.hasNext(); ) {
                    ObjectRecord rec = it.next();
                    if (!rec.inFlight() || now - rec.putStart < timeout) {
                        continue;
                    }
                    reclaimed++;
                    putsReclaimed.increment();
                    if (rec.state == ObjectRecord.PROCESSING) {
                        it.remove();
                        objects.decrement();
                        free(rec.replicas(), rec.size);
                    } else {
                        free(rec.pending, rec.pendingSize);
                        rec.pending = null;
                        rec.flags &= ~ObjectRecord.UPSERTING;
                    }
                }
            }
        }
        return reclaimed;
    }

    /**
     * Above the high watermark, frees space by dropping the least recently leased objects until usage is an eviction
     * ratio under the mark. Leased, in-flight and hard-pinned objects are never taken; soft-pinned ones only when
     * nothing else is left.
     */
    Command.Evicted evict(long now) {
        // the housekeeping round and the evictor may both find usage high: the second then finds it low again
        synchronized (evictionLock) {
            long objs = evictedObjects.sum();
            long bytes = evictedBytes.sum();
            evictLocked(now);
            return new Command.Evicted(evictedObjects.sum() - objs, evictedBytes.sum() - bytes);
        }
    }

    private void evictLocked(long now) {
        long capacity = 0;
        long used = 0;
        for (MountedSegment s : active) {
            capacity += s.allocator.capacity();
            used += s.allocator.used();
        }
        if (capacity == 0) {
            return;
        }
        double ratio = (double) used / capacity;
        if (ratio <= config.highWatermark()) {
            return;
        }
        evictionRounds.increment();
        double fraction = Math.max(config.evictionRatio(), ratio - config.highWatermark() + config.evictionRatio());
        long target = (long) (capacity * fraction);
        // the time seeds the lease sample, so a replayed log evicts the same objects
        SplittableRandom rnd = new SplittableRandom(now);
        long goal = used - target;
        // a sampled cutoff may fall short, and puts evicting for themselves meanwhile take some of the oldest: a few
        // more passes while usage is above the goal; the soft-pinned only when nothing else is evictable
        for (int pass = 0; pass < 3 && allocated.get() > goal; pass++) {
            if (evictOlderThanCutoff(now, allocated.get() - goal, false, rnd) < 0) {
                evictOlderThanCutoff(now, allocated.get() - goal, true, rnd);
                return;
            }
        }
    }

    /**
     * Two passes over the shards: the first samples the leases of the evictable objects (a reservoir of
     * {@link #LEASE_SAMPLES}, no allocation per object) and sums their bytes; the lease below which {@code target}
     * bytes lie is read off the sample; the second drops the objects leased before it. Each shard's lock is held
     * only while that shard is walked, so calls keep being served meanwhile. Returns the bytes freed, or -1 if no
     * object was evictable or about to be (leased).
     */
    private long evictOlderThanCutoff(long now, long target, boolean softPinned, SplittableRandom rnd) {
        long[] sample = new long[LEASE_SAMPLES];
        long seen = 0;
        long evictableBytes = 0;
        boolean leased = false;
        for (Shard shard : shards) {
            synchronized (shard) {
                for (ObjectRecord rec : shard.map.values()) {
                    if (!evictable(rec, now, softPinned)) {
                        leased |= !softPinned && rec.lease > now && evictable(rec, rec.lease, false);
                        continue;
                    }
                    evictableBytes += footprint(rec);
                    if (seen < LEASE_SAMPLES) {
                        sample[(int) seen] = rec.lease;
                    } else {
                        long j = rnd.nextLong(seen + 1);
                        if (j < LEASE_SAMPLES) {
                            sample[(int) j] = rec.lease;
                        }
                    }
                    seen++;
                }
            }
        }
        if (seen == 0) {
            // unpinned objects only leased (or written after `now`, if this thread stalled since it was read) are
            // no reason to take the soft-pinned: they become evictable soon
            return leased ? 0 : -1;
        }
        int k = (int) Math.min(seen, LEASE_SAMPLES);
        Arrays.sort(sample, 0, k);
        double q = Math.min(1.0, (double) target / evictableBytes);
        long cutoff = sample[Math.min(k - 1, Math.max(0, (int) Math.ceil(q * k) - 1))];
        // everything older than the cutoff goes, even past the target (the sample's error is small): objects written
        // together are evicted together, so their ranges coalesce into runs a reservation fits in. Objects leased
        // exactly at the cutoff (a burst within one clock tick) go only while the target is not yet reached
        long freed = 0;
        long[] replicas = new long[1024];
        long[] lengths = new long[1024];
        int n = 0;
        for (Shard shard : shards) {
            synchronized (shard) {
                for (Iterator<ObjectRecord> it = shard.map.values().iterator(); it.hasNext(); ) {
                    ObjectRecord rec = it.next();
                    if (rec.lease > cutoff || (rec.lease == cutoff && freed >= target) || !evictable(rec, now, softPinned)) {
                        continue;
                    }
                    it.remove();
                    long bytes = footprint(rec);
                    objects.decrement();
                    objectBytes.add(-rec.size);
                    evictedObjects.increment();
                    evictedBytes.add(bytes);
                    freed += bytes;
                    for (long r : rec.replicas()) {
                        if (n == replicas.length) {
                            replicas = Arrays.copyOf(replicas, 2 * n);
                            lengths = Arrays.copyOf(lengths, 2 * n);
                        }
                        replicas[n] = r;
                        lengths[n++] = rec.size;
                    }
                }
            }
        }
        freeInAddressOrder(replicas, lengths, n);
        return freed;
    }

    /**
     * Evicts the least recently leased of up to {@link #EVICTION_SAMPLES} evictable objects, found walking the shards
     * from a random one (soft-pinned only if no other is within reach of a bounded walk). False if none was found;
     * true also when the one found was taken meanwhile (by the evictor or another put: space came free either way).
     */
    private boolean evictOne(long now, SplittableRandom rnd) {
        int start = rnd.nextInt(shards.length);
        int sampled = 0;
        int looked = 0;
        int bestShard = -1;
        long bestLease = Long.MAX_VALUE;
        int softShard = -1;
        long softLease = Long.MAX_VALUE;
        for (int i = 0; i < shards.length && sampled < EVICTION_SAMPLES && looked < 64 * EVICTION_SAMPLES; i++) {
            int si = (start + i) & (shards.length - 1);
            Shard shard = shards[si];
            synchronized (shard) {
                for (ObjectRecord rec : shard.map.values()) {
                    if (sampled >= EVICTION_SAMPLES || ++looked > 64 * EVICTION_SAMPLES) {
                        break;
                    }
                    if (evictable(rec, now, false)) {
                        sampled++;
                        if (rec.lease < bestLease) {
                            bestLease = rec.lease;
                            bestShard = si;
                        }
                    } else if (softShard < 0 && evictable(rec, now, true)) {
                        softShard = si;
                        softLease = rec.lease;
                    }
                }
            }
        }
        int si = bestShard >= 0 ? bestShard : softShard;
        if (si < 0) {
            return false;
        }
        long lease = bestShard >= 0 ? bestLease : softLease;
        boolean soft = bestShard < 0;
        Shard shard = shards[si];
        synchronized (shard) {
            for (Iterator<ObjectRecord> it = shard.map.values().iterator(); it.hasNext(); ) {
                ObjectRecord rec = it.next();
                // the victim, or another as old, if a call changed it while no lock was held
                if (rec.lease <= lease && evictable(rec, now, soft)) {
                    it.remove();
                    dropEvicted(rec, now);
                    return true;
                }
            }
        }
        // another call or the evictor took it first: space was freed all the same, so the caller tries again
        return true;
    }

    /**
     * Frees evicted ranges (unleased, so nothing is parked) sorted by segment and address: freed in the shards' hash
     * order they would coalesce only at the end, and the allocators' free lists would grow by one entry per object
     * meanwhile (each free then a walk down a large tree); in address order each free merges with the one before.
     */
    private void freeInAddressOrder(long[] replicas, long[] lengths, int n) {
        long[] sorted = Arrays.copyOf(replicas, n);
        Arrays.sort(sorted);
        long[] sortedLengths = new long[n];
        for (int i = 0; i < n; i++) {
            // a live replica's start is unique, so its position in the sorted copy is too
            sortedLengths[Arrays.binarySearch(sorted, replicas[i])] = lengths[i];
        }
        // neighbours (written together, evicted together) are freed as one run: one walk of the free list per run
        int i = 0;
        while (i < n) {
            int seg = ObjectRecord.segment(sorted[i]);
            long start = ObjectRecord.offset(sorted[i]);
            long end = start + RangeAllocator.aligned(sortedLengths[i]);
            for (i++; i < n && ObjectRecord.segment(sorted[i]) == seg && ObjectRecord.offset(sorted[i]) == end; i++) {
                end += RangeAllocator.aligned(sortedLengths[i]);
            }
            segmentAt(seg).free(start, end - start);
        }
    }

    /** Frees an evicted record's space (it is unleased, so nothing is parked) and counts it. */
    private void dropEvicted(ObjectRecord rec, long now) {
        long bytes = footprint(rec);
        release(rec, now);
        evictedObjects.increment();
        evictedBytes.add(bytes);
    }

    private static long footprint(ObjectRecord rec) {
        return rec.hasReplicas() ? RangeAllocator.aligned(rec.size) * (rec.more == null ? 1 : rec.more.length + 1) : 0;
    }

    private static boolean evictable(ObjectRecord rec, long now, boolean softPinnedToo) {
        if (rec.inFlight() || rec.lease > now || (rec.flags & ObjectRecord.HARD_PIN) != 0) {
            return false;
        }
        boolean pinned = (rec.flags & ObjectRecord.SOFT_PIN) != 0 && rec.pin > now;
        return softPinnedToo || !pinned;
    }

    private void park(long[] replicas, long size, long releaseAt) {
        synchronized (parked) {
            for (long r : replicas) {
                parked.add(new Parked(r, size, releaseAt));
            }
        }
    }

    private void releaseParked(long now) {
        List<Parked> due = new ArrayList<>();
        synchronized (parked) {
            while (!parked.isEmpty() && parked.peek().releaseAt() <= now) {
                due.add(parked.poll());
            }
        }
        for (Parked p : due) {
            segmentAt(ObjectRecord.segment(p.replica)).free(ObjectRecord.offset(p.replica), p.size);
        }
    }

    private void free(long[] replicas, long size) {
        for (long r : replicas) {
            segmentAt(ObjectRecord.segment(r)).free(ObjectRecord.offset(r), size);
        }
    }

    private void trimReadCounts() {
        if (readCounts.size() > 4096) {
            List<Map.Entry<String, LongAdder>> all = new ArrayList<>(readCounts.entrySet());
            all.sort(Comparator.comparingLong(e -> e.getValue().sum()));
            for (int i = 0; i < all.size() / 2; i++) {
                readCounts.remove(all.get(i).getKey());
            }
        }
    }

    // ---------------------------------------------------------------- views

    public record SegmentView(String id, String engineSegment, String host, String owner, long capacity, long used,
                              long largestFree) {
    }

    public record ClientView(String id, int segments, long silentNanos, long reservedBytes) {
    }

    public record KeyView(String key, long size, String state, long leaseRemainingNanos, boolean hardPin,
                          boolean softPin, List<ReplicaLocation> replicas) {
    }

    public List<SegmentView> segments() {
        List<SegmentView> out = new ArrayList<>();
        for (MountedSegment s : active) {
            out.add(new SegmentView(s.spec.id(), s.spec.engineSegment(), s.spec.host(), s.owner, s.allocator.capacity(),
                    s.allocator.used(), s.allocator.largestFree()));
        }
        return out;
    }

    public List<ClientView> clients(long now) {
        List<ClientView> out = new ArrayList<>();
        for (ClientRecord c : clients.values()) {
            out.add(new ClientView(c.id, c.segments.size(), now - c.lastSeen, c.reservedBytes()));
        }
        return out;
    }

    public KeyView describe(long now, String key) {
        checkKey(key);
        Shard shard = shard(key);
        synchronized (shard) {
            ObjectRecord rec = shard.map.get(key);
            if (rec == null) {
                return null;
            }
            return new KeyView(key, rec.size, rec.state == ObjectRecord.COMPLETE ? "COMPLETE" : "PROCESSING",
                    Math.max(0, rec.lease - now), (rec.flags & ObjectRecord.HARD_PIN) != 0,
                    (rec.flags & ObjectRecord.SOFT_PIN) != 0 && rec.pin > now, locations(rec.replicas(), rec.size));
        }
    }

    /** Up to {@code limit} keys, in no particular order. */
    public List<String> keys(int limit) {
        List<String> out = new ArrayList<>();
        for (Shard shard : shards) {
            synchronized (shard) {
                for (String k : shard.map.keySet()) {
                    if (out.size() >= limit) {
                        return out;
                    }
                    out.add(k);
                }
            }
        }
        return out;
    }

    /** The most read keys with their estimated read counts (one read in four is sampled), most read first. */
    public List<Map.Entry<String, Long>> hotKeys(int limit) {
        return readCounts.entrySet().stream().map(e -> Map.entry(e.getKey(), e.getValue().sum()))
                .sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(limit).toList();
    }

    /** Bytes granted to clients' reservations and not yet committed (counted as used by the allocators). */
    public long reservedBytes() {
        long sum = 0;
        for (ClientRecord c : clients.values()) {
            sum += c.reservedBytes();
        }
        return sum;
    }

    public long objectCount() {
        return objects.sum();
    }

    /** Counters since start, for metrics and the status page. */
    public record Stats(long objects, long objectBytes, long evictedObjects, long evictedBytes, long evictionRounds,
                        long leasesGranted, long removalsBlockedByLease, long putsTakenOver, long putsReclaimed,
                        long partialAllocations, long allocationFailures, long clientsExpired, int clients,
                        long objectsCommitted, long reservationsGranted, long reservationsReleased, long reservedBytes) {
    }

    public Stats stats() {
        return new Stats(objects.sum(), objectBytes.sum(), evictedObjects.sum(), evictedBytes.sum(), evictionRounds.sum(),
                leasesGranted.sum(), removalsBlockedByLease.sum(), putsTakenOver.sum(), putsReclaimed.sum(),
                partialAllocations.sum(), allocationFailures.sum(), clientsExpired.sum(), clients.size(),
                objectsCommitted.sum(), reservationsGranted.sum(), reservationsReleased.sum(), reservedBytes());
    }

    // ---------------------------------------------------------------- internals

    private List<ReplicaLocation> locations(long[] replicas, long size) {
        List<ReplicaLocation> out = new ArrayList<>(replicas.length);
        for (long r : replicas) {
            MountedSegment seg = segmentAt(ObjectRecord.segment(r));
            if (seg.mounted()) {
                out.add(new ReplicaLocation(seg.spec.id(), seg.spec.engineSegment(), seg.spec.host(),
                        seg.spec.base() + ObjectRecord.offset(r), size));
            }
        }
        return out;
    }

    private MountedSegment segmentAt(int index) {
        return segmentTable[index];
    }

    private String ownerName(int index) {
        for (ClientRecord c : clients.values()) {
            if (c.index == index) {
                return c.id;
            }
        }
        return "#" + index + " (gone)";
    }

    private void checkKey(String key) {
        if (key == null || key.isEmpty()) {
            throw new StoreException(StoreError.INVALID_KEY, "key is empty");
        }
        // a char is at most 3 UTF-8 bytes, so most keys need no encoding (once per key of every put and commit)
        if (key.length() > config.maxKeyBytes() || (3L * key.length() > config.maxKeyBytes()
                && key.getBytes(StandardCharsets.UTF_8).length > config.maxKeyBytes())) {
            throw new StoreException(StoreError.INVALID_KEY, "key of " + key.getBytes(StandardCharsets.UTF_8).length
                    + " UTF-8 bytes is longer than the limit of " + config.maxKeyBytes() + " (key starts '"
                    + key.substring(0, Math.min(32, key.length())) + "…')");
        }
    }

    private Shard shard(String key) {
        // the top bits of a multiplicative hash: HashMap indexes its table by the low bits of (h ^ h >>> 16), and a
        // shard picked by those same bits put all its keys in 1/1024 of its table's buckets (bins of hundreds, made
        // into trees: every lookup a dozen String compares, most of the master's CPU under load)
        return shards[(int) ((Integer.toUnsignedLong(key.hashCode() * 0x9E3779B9) * shards.length) >>> 32)];
    }

    private static final class Shard {
        final HashMap<String, ObjectRecord> map = new HashMap<>();
    }

    private record Parked(long replica, long size, long releaseAt) {
    }

    /** Space granted to a client; {@code [start, mark)} is committed or given back, {@code [mark, end)} still held. */
    static final class Reservation {
        final long id;
        final ClientRecord owner;
        final MountedSegment seg;
        final long start;
        final long end;
        /** The rest guarded by {@code owner.reserved}. */
        long mark;
        long lastUsed;
        boolean released;

        Reservation(long id, ClientRecord owner, MountedSegment seg, long start, long end, long now) {
            this.id = id;
            this.owner = owner;
            this.seg = seg;
            this.start = start;
            this.end = end;
            this.mark = start;
            this.lastUsed = now;
        }
    }

    static final class ClientRecord {
        final String id;
        final int index;
        volatile long lastSeen;
        final java.util.Set<MountedSegment> segments = ConcurrentHashMap.newKeySet();
        /** Its live reservations; also the lock over their marks (taken after a shard's, before an allocator's). */
        final List<Reservation> reserved = new ArrayList<>();

        /** Granted and not yet committed. */
        long reservedBytes() {
            long sum = 0;
            synchronized (reserved) {
                for (Reservation r : reserved) {
                    sum += r.end - r.mark;
                }
            }
            return sum;
        }

        ClientRecord(String id, int index, long now) {
            this.id = id;
            this.index = index;
            this.lastSeen = now;
        }
    }
}
