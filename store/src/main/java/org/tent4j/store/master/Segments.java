package org.tent4j.store.master;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.PrintableId;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.Tier;

/**
 * Segments and placement: the mounted segments, their allocators, and where a new object's replicas go. Owns the
 * segment table ({@link SegmentIndexes}: index -> segment, an index reused once nothing names it) and the count of
 * allocated bytes the watermark is read from.
 */
final class Segments {
    private final MasterState state;
    private final MasterConfig config;

    private final Object lock = new Object();
    private final ConcurrentHashMap<String, MountedSegment> byId = new ConcurrentHashMap<>();
    /** Index -> segment; an index is reused only once no packed reference names it ({@link #reclaim}). */
    private final SegmentIndexes indexes;
    /** Memory segments open for allocation, in index order, copy-on-write. Placement, reservations and the watermark see only these. */
    private volatile MountedSegment[] active = new MountedSegment[0];
    /** Disk segments open for offloads, in index order, copy-on-write. */
    private volatile MountedSegment[] disks = new MountedSegment[0];
    /** Bytes allocated on the active memory segments (objects, reservations, parked ranges). */
    private final AtomicLong allocated = new AtomicLong();
    /** Bytes allocated on the active disk segments (disk replicas, offloads in flight, parked ranges). */
    private final AtomicLong diskAllocated = new AtomicLong();
    /**
     * Segments one client may have mounted at once (memory and disk): a node mounts one or two, and a client that
     * mounts in a loop fills the master's segment table for everyone else.
     */
    static final int MAX_SEGMENTS_PER_CLIENT = 64;
    /** {@link #allocated} above this is over the high watermark: eviction is wanted (recomputed on mount/unmount). */
    private volatile long evictAbove = Long.MAX_VALUE;
    /**
     * Told, on the applying thread, that usage passed the high watermark or an allocation failed; so it takes no lock
     * (a flag and a wake-up).
     */
    private volatile Runnable evictionWanted = () -> { };

    Segments(MasterState state, int segmentIndexes) {
        this.state = state;
        this.config = state.config();
        this.indexes = new SegmentIndexes(segmentIndexes);
    }

    void onEvictionWanted(Runnable hook) {
        this.evictionWanted = hook;
    }

    Runnable evictionHook() {
        return evictionWanted;
    }

    void wantEviction() {
        evictionWanted.run();
    }

    boolean overHighWatermark() {
        return allocated.get() > evictAbove;
    }

    long allocated() {
        return allocated.get();
    }

    MountedSegment[] active() {
        return active;
    }

    /** The mounted disk segments. */
    MountedSegment[] disks() {
        return disks;
    }

    /**
     * The mounted disk segments, most free bytes first (lowest index among equals): an offload to another node's disk
     * goes where there is most room, and a replay chooses alike (the allocators are state).
     */
    MountedSegment[] disksByRoom() {
        MountedSegment[] disks = this.disks;
        long[][] byRoom = new long[disks.length][];
        for (int i = 0; i < disks.length; i++) {
            byRoom[i] = new long[]{disks[i].allocator.capacity() - disks[i].allocator.used(), disks[i].index, i};
        }
        Arrays.sort(byRoom, (x, y) -> x[0] != y[0] ? Long.compare(y[0], x[0]) : Long.compare(x[1], y[1]));
        MountedSegment[] out = new MountedSegment[disks.length];
        for (int i = 0; i < out.length; i++) {
            out[i] = disks[(int) byRoom[i][2]];
        }
        return out;
    }

    long diskAllocated() {
        return diskAllocated.get();
    }

    /** The segment table by index: mounted segments, unmounted ones something may still name, null where free. */
    MountedSegment[] table() {
        return indexes.table();
    }

    MountedSegment at(int index) {
        return indexes.at(index);
    }

    /** How many segment indexes this master hands out at most. */
    int indexLimit() {
        return indexes.limit();
    }

    /** Unmounted segments whose index is not yet free (something may still name it). */
    int retiredCount() {
        return indexes.retiredCount();
    }

    MountedSegment byId(String id) {
        return byId.get(id);
    }

    /** The counter every segment of this tier adds its allocations to. */
    AtomicLong allocatedCounter(boolean disk) {
        return disk ? diskAllocated : allocated;
    }

    /**
     * Installs a restored segment table over {@code limit} indexes (a restore, before the first command); the mounted
     * ones are active.
     */
    void restore(MountedSegment[] restored, int limit) {
        synchronized (lock) {
            indexes.restore(restored, limit);
            active = Arrays.stream(restored).filter(s -> s != null && s.mounted() && !s.disk).toArray(MountedSegment[]::new);
            disks = Arrays.stream(restored).filter(s -> s != null && s.mounted() && s.disk).toArray(MountedSegment[]::new);
            for (MountedSegment seg : restored) {
                if (seg != null && seg.mounted()) {
                    byId.put(seg.spec.id(), seg);
                }
            }
            evictAbove = evictAbove(active);
        }
    }

    /**
     * Mounts {@code spec} for {@code clientId} in its {@code incarnation}. The same segment (id) mounted again by its
     * owner in the same incarnation is a remount and changes nothing: its objects stay. A segment mounted in another
     * incarnation is the memory of a process that is gone (its node restarted): a mount of the same id on the same
     * engine segment, or of a range of the same engine segment overlapping it, drops it first, as an unmount does
     * (every replica on it, objects left with none erased), and the new mount gets a fresh allocator (and an index
     * nothing names: the old one only if the drop left no reference to it); so none of its objects is served from the
     * new memory and none of its ranges is handed out as free beside them. Refused, changing nothing: the id mounted
     * by another client or in this incarnation with another spec, or on another engine segment; a range overlapping a
     * segment mounted in this incarnation (one memory handed out twice); no segment index left.
     */
    void mount(long now, String clientId, SegmentSpec spec, long incarnation) {
        // a client is registered by its first mount, and these ids reach the log, the output and /metrics
        PrintableId.require("client id", clientId);
        PrintableId.require("segment id", spec.id());
        PrintableId.require("engine segment name", spec.engineSegment());
        PrintableId.require("host", spec.host());
        long least = spec.tier() == Tier.DISK ? MountedSegment.DISK_ALIGNMENT : RangeAllocator.ALIGNMENT;
        if (spec.size() < least || spec.size() > ObjectRecord.OFFSET_MASK) {
            throw new StoreException(StoreError.INVALID_PARAMS, spec.tier() + " segment " + spec.id() + " size must be in ["
                    + least + ", " + ObjectRecord.OFFSET_MASK + "]: " + spec.size());
        }
        if (spec.file().length() > 4096 || spec.file().chars().anyMatch(Character::isISOControl)) {
            throw new StoreException(StoreError.INVALID_PARAMS, "segment " + spec.id() + " names a file of "
                    + spec.file().length() + " characters or with control characters");
        }
        List<MountedSegment> gone;
        synchronized (lock) {
            MountedSegment existing = byId.get(spec.id());
            if (existing != null && existing.incarnation == incarnation && existing.owner.equals(clientId)
                    && existing.spec.equals(spec)) {
                return;
            }
            gone = restarted(clientId, spec, incarnation, existing);
            Clients.ClientRecord client = state.clients.seen(clientId, now);
            long kept = client.segments.stream().filter(s -> !gone.contains(s)).count();
            if (kept >= MAX_SEGMENTS_PER_CLIENT) {
                throw new StoreException(StoreError.INVALID_PARAMS, "client " + clientId + " already mounts "
                        + kept + " segments, the limit per client; segment " + spec.id()
                        + " is refused (unmount one first)");
            }
            // before the drop below: a refusal changes nothing (the drop may free an index too, not counted here)
            indexes.checkRoom(spec.id(), byId.size());
        }
        List<long[]> writing = List.of();
        if (!gone.isEmpty()) {
            state.counters.segmentsReplaced.add(gone.size());
            writing = drop(gone);
        }
        MountedSegment seg;
        synchronized (lock) {
            Clients.ClientRecord client = state.clients.seen(clientId, now);
            boolean disk = spec.tier() == Tier.DISK;
            seg = new MountedSegment(indexes.next(), spec, clientId, incarnation, allocatedCounter(disk));
            indexes.install(seg);
            byId.put(spec.id(), seg);
            if (disk) {
                disks = inIndexOrder(disks, seg);
            } else {
                active = inIndexOrder(active, seg);
                evictAbove = evictAbove(active);
            }
            client.segments.add(seg);
        }
        if (!gone.isEmpty() && !seg.disk) {
            Quarantine.park(state, now, seg, gone, writing);
        }
    }

    /**
     * {@code segs} with {@code seg} in its place by index: the order a restore rebuilds them in from the table, and
     * placement, repairs and a node's disk or memory lookup walk them in it (a segment that took a freed lower index
     * is not last).
     */
    private static MountedSegment[] inIndexOrder(MountedSegment[] segs, MountedSegment seg) {
        int at = 0;
        while (at < segs.length && segs[at].index < seg.index) {
            at++;
        }
        MountedSegment[] out = new MountedSegment[segs.length + 1];
        System.arraycopy(segs, 0, out, 0, at);
        out[at] = seg;
        System.arraycopy(segs, at, out, at + 1, segs.length - at);
        return out;
    }

    /**
     * The mounted segments a mount of {@code spec} in {@code incarnation} shows to be gone with their process, in
     * index order; or the refusal, before anything changed. {@code existing}: the segment of the same id, if any.
     */
    private List<MountedSegment> restarted(String clientId, SegmentSpec spec, long incarnation, MountedSegment existing) {
        List<MountedSegment> gone = new ArrayList<>();
        if (existing != null) {
            if (existing.incarnation == incarnation || !existing.spec.engineSegment().equals(spec.engineSegment())
                    || existing.spec.tier() != spec.tier()) {
                throw new StoreException(StoreError.SEGMENT_ALREADY_EXISTS, "segment " + spec.id() + " is already mounted by "
                        + existing.owner + (existing.incarnation == incarnation ? " in this incarnation as " + existing.spec
                        : " on engine segment " + existing.spec.engineSegment() + " (" + existing.spec.tier() + ")"));
            }
            gone.add(existing);
        }
        // index order, not the map's: which segment a refusal names and the order of the drops are state
        for (MountedSegment other : indexes.table()) {
            if (other != null && other != existing && other.mounted() && other.overlaps(spec)) {
                if (other.incarnation == incarnation) {
                    throw new StoreException(StoreError.SEGMENT_ALREADY_EXISTS, "segment " + spec.id() + " ["
                            + spec.base() + ", +" + spec.size() + ") of engine segment " + spec.engineSegment()
                            + " overlaps segment " + other.spec.id() + " [" + other.spec.base() + ", +" + other.spec.size()
                            + ") that client " + other.owner + " mounted in the same incarnation as client " + clientId
                            + ": one memory is never mounted twice");
                }
                gone.add(other);
            }
        }
        return gone;
    }

    void unmount(String clientId, String segmentId) {
        MountedSegment seg = byId.get(segmentId);
        if (seg == null) {
            return;
        }
        if (!seg.owner.equals(clientId)) {
            throw new StoreException(StoreError.ILLEGAL_CLIENT, "segment " + segmentId + " belongs to " + seg.owner
                    + ", not " + clientId);
        }
        drop(List.of(seg));
    }

    /**
     * Takes segments out of service; replicas on them vanish and objects left without one are erased, and their
     * indexes are freed if nothing names them any more ({@link #reclaim}). Answers the dropped replicas a writer may
     * still be writing (puts in flight) as {address in the engine segment, size}.
     */
    List<long[]> drop(List<MountedSegment> gone) {
        List<long[]> writing = new ArrayList<>();
        if (gone.isEmpty()) {
            return writing;
        }
        synchronized (lock) {
            for (MountedSegment seg : gone) {
                seg.markUnmounted();
                byId.remove(seg.spec.id());
                Clients.ClientRecord owner = state.clients.get(seg.owner);
                if (owner != null) {
                    owner.segments.remove(seg);
                }
            }
            active = Arrays.stream(active).filter(MountedSegment::mounted).toArray(MountedSegment[]::new);
            disks = Arrays.stream(disks).filter(MountedSegment::mounted).toArray(MountedSegment[]::new);
            evictAbove = evictAbove(active);
        }
        boolean[] dropped = new boolean[indexes.table().length];
        for (MountedSegment seg : gone) {
            dropped[seg.index] = true;
        }
        state.objects.dropReplicasOn(dropped, writing);
        state.parking.forgetUnmounted();
        for (long[] w : writing) {
            // as an address now: the sweep below may free the index, and the mount that follows take it
            w[0] = at(ObjectRecord.segment(w[0])).spec.base() + ObjectRecord.offset(w[0]);
        }
        for (MountedSegment seg : gone) {
            indexes.retire(seg);
        }
        reclaim();
        return writing;
    }

    /** Frees the index of every unmounted segment that nothing names any more ({@link IndexSweep}). */
    void reclaim() {
        IndexSweep.reclaim(state, indexes);
    }

    private long evictAbove(MountedSegment[] segs) {
        long capacity = 0;
        for (MountedSegment s : segs) {
            capacity += s.allocator.capacity();
        }
        return (long) (capacity * config.highWatermark());
    }

    /** Every replica of {@code shape} placed on distinct segments, or null (and nothing held) if not all fit. */
    long[] placeAll(Command.PutStart shape) {
        long[] placed = place(shape);
        if (placed != null && placed.length < shape.config().replicas()) {
            free(placed, shape.size());
            return null;
        }
        return placed;
    }

    /** Allocates up to the wanted number of replicas on distinct segments; null if none could be placed. */
    long[] place(Command.PutStart c) {
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

    void free(long[] replicas, long size) {
        for (long r : replicas) {
            at(ObjectRecord.segment(r)).free(ObjectRecord.offset(r), size);
        }
    }

    List<ReplicaLocation> locations(long[] replicas, long size) {
        List<ReplicaLocation> out = new ArrayList<>(replicas.length);
        for (long r : replicas) {
            MountedSegment seg = at(ObjectRecord.segment(r));
            if (seg.mounted()) {
                out.add(new ReplicaLocation(seg.spec.id(), seg.spec.engineSegment(), seg.spec.host(),
                        seg.spec.base() + ObjectRecord.offset(r), size));
            }
        }
        return out;
    }

    /** The object's readable replicas: memory ones first, then its disk replica (with its CRC32C) if it has one. */
    List<ReplicaLocation> locations(ObjectRecord rec) {
        List<ReplicaLocation> out = locations(rec.replicas(), rec.size);
        if (rec.disk != -1) {
            MountedSegment seg = at(ObjectRecord.segment(rec.disk));
            if (seg.mounted()) {
                long off = ObjectRecord.offset(rec.disk);
                out.add(new ReplicaLocation(seg.spec.id(), seg.spec.engineSegment(), seg.spec.host(), seg.spec.base() + off,
                        rec.size, Tier.DISK, Integer.toUnsignedLong(rec.crc), seg.spec.file(), off));
            }
        }
        return out;
    }

    /** A memory segment of {@code owner} (where a promotion from its disk lands), or null. */
    MountedSegment memoryOf(String owner) {
        for (MountedSegment m : active) {
            if (m.owner.equals(owner)) {
                return m;
            }
        }
        return null;
    }

    /** The ranges freed on {@code owner}'s disk segment after {@code ack} (see {@link MountedSegment#freedAfter}). */
    List<Command.Freed> freedFor(String owner, long ack) {
        MountedSegment d = diskOf(owner);
        if (d == null) {
            return List.of();
        }
        List<Command.Freed> out = new ArrayList<>();
        for (long[] f : d.freedAfter(ack)) {
            out.add(new Command.Freed(f[0], f[1], f[2]));
        }
        return out;
    }

    /** {@code owner}'s disk segment, or null if it mounted none. */
    MountedSegment diskOf(String owner) {
        for (MountedSegment d : disks) {
            if (d.owner.equals(owner)) {
                return d;
            }
        }
        return null;
    }

    long[] liveOnly(long[] replicas) {
        int n = 0;
        for (long r : replicas) {
            if (at(ObjectRecord.segment(r)).mounted()) {
                n++;
            }
        }
        if (n == replicas.length) {
            return replicas;
        }
        long[] out = new long[n];
        int i = 0;
        for (long r : replicas) {
            if (at(ObjectRecord.segment(r)).mounted()) {
                out[i++] = r;
            }
        }
        return out;
    }
}
