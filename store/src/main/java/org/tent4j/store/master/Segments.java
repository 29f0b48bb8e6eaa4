package org.tent4j.store.master;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
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
 * segment table (index -> segment, indexes never reused) and the count of allocated bytes the watermark is read from.
 */
final class Segments {
    private final MasterState state;
    private final MasterConfig config;

    private final Object lock = new Object();
    private final ConcurrentHashMap<String, MountedSegment> byId = new ConcurrentHashMap<>();
    /** Index -> segment, copy-on-write; indexes are never reused, so a stale packed replica never names a new segment. */
    private volatile MountedSegment[] table = new MountedSegment[0];
    /** Memory segments open for allocation, copy-on-write. Placement, reservations and the watermark see only these. */
    private volatile MountedSegment[] active = new MountedSegment[0];
    /** Disk segments open for offloads, copy-on-write. */
    private volatile MountedSegment[] disks = new MountedSegment[0];
    /** Bytes allocated on the active memory segments (objects, reservations, parked ranges). */
    private final AtomicLong allocated = new AtomicLong();
    /** Bytes allocated on the active disk segments (disk replicas, offloads in flight, parked ranges). */
    private final AtomicLong diskAllocated = new AtomicLong();
    /** {@link #allocated} above this is over the high watermark: eviction is wanted (recomputed on mount/unmount). */
    /**
     * Segments one client may have mounted at once (memory and disk): a node mounts one or two, and a client that
     * mounts in a loop fills the master's segment table for everyone else.
     */
    static final int MAX_SEGMENTS_PER_CLIENT = 64;
    private volatile long evictAbove = Long.MAX_VALUE;
    /**
     * Told, on the applying thread, that usage passed the high watermark or an allocation failed; so it takes no lock
     * (a flag and a wake-up).
     */
    private volatile Runnable evictionWanted = () -> { };

    Segments(MasterState state) {
        this.state = state;
        this.config = state.config();
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

    long diskAllocated() {
        return diskAllocated.get();
    }

    /** Every segment ever mounted, by index (unmounted ones included). */
    MountedSegment[] table() {
        return table;
    }

    MountedSegment at(int index) {
        return table[index];
    }

    MountedSegment byId(String id) {
        return byId.get(id);
    }

    /** The counter every segment of this tier adds its allocations to. */
    AtomicLong allocatedCounter(boolean disk) {
        return disk ? diskAllocated : allocated;
    }

    /** Installs a restored segment table (a restore, before the first command); the mounted ones are active. */
    void restore(MountedSegment[] restored) {
        synchronized (lock) {
            table = restored;
            active = Arrays.stream(restored).filter(s -> s.mounted() && !s.disk).toArray(MountedSegment[]::new);
            disks = Arrays.stream(restored).filter(s -> s.mounted() && s.disk).toArray(MountedSegment[]::new);
            for (MountedSegment seg : restored) {
                if (seg.mounted()) {
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
     * (every replica on it, objects left with none erased), and the new mount gets a new index and a fresh allocator;
     * so none of its objects is served from the new memory and none of its ranges is handed out as free beside them.
     * Refused, changing nothing: the id mounted by another client or in this incarnation with another spec, or on
     * another engine segment; a range overlapping a segment mounted in this incarnation (one memory handed out twice).
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
            if (table.length >= ObjectRecord.MAX_SEGMENTS) {
                throw new StoreException(StoreError.UNAVAILABLE_IN_CURRENT_STATUS, "this master has mounted its maximum of "
                        + ObjectRecord.MAX_SEGMENTS + " segments; restart it");
            }
        }
        List<long[]> writing = List.of();
        if (!gone.isEmpty()) {
            state.counters.segmentsReplaced.add(gone.size());
            writing = drop(gone);
        }
        MountedSegment seg;
        synchronized (lock) {
            Clients.ClientRecord client = state.clients.seen(clientId, now);
            int index = table.length;
            boolean disk = spec.tier() == Tier.DISK;
            seg = new MountedSegment(index, spec, clientId, incarnation, allocatedCounter(disk));
            MountedSegment[] t = Arrays.copyOf(table, index + 1);
            t[index] = seg;
            table = t;
            byId.put(spec.id(), seg);
            if (disk) {
                MountedSegment[] d = Arrays.copyOf(disks, disks.length + 1);
                d[d.length - 1] = seg;
                disks = d;
            } else {
                MountedSegment[] act = Arrays.copyOf(active, active.length + 1);
                act[act.length - 1] = seg;
                active = act;
                evictAbove = evictAbove(act);
            }
            client.segments.add(seg);
        }
        if (!gone.isEmpty() && !seg.disk) {
            quarantine(now, seg, gone, writing);
        }
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
        for (MountedSegment other : table) {
            if (other != existing && other.mounted() && other.overlaps(spec)) {
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
     * Takes segments out of service; replicas on them vanish and objects left without one are erased. Answers the
     * dropped replicas a writer may still be writing (puts in flight) as {replica, size}.
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
        boolean[] dropped = new boolean[table.length];
        for (MountedSegment seg : gone) {
            dropped[seg.index] = true;
        }
        state.objects.dropReplicasOn(dropped, writing);
        state.eviction.forgetUnmounted();
        return writing;
    }

    /**
     * Parks, in {@code seg}'s new memory, every range of the {@code gone} segments it overlaps that a live writer may
     * still write into: a put in flight ({@code writing}) and the uncommitted rest of any client's reservation. A
     * writer that has not heard of the restart writes its old addresses, which are now the new process's memory; parked
     * for the put release timeout, as an abandoned put's space is, no new object is placed where such a write lands.
     */
    private void quarantine(long now, MountedSegment seg, List<MountedSegment> gone, List<long[]> writing) {
        List<long[]> ranges = new ArrayList<>(); // {address, length} in the engine segment's address space
        for (long[] w : writing) {
            ranges.add(new long[] {at(ObjectRecord.segment(w[0])).spec.base() + ObjectRecord.offset(w[0]), w[1]});
        }
        for (Clients.ClientRecord c : state.clients.all()) {
            synchronized (c.reserved) {
                for (Reservations.Reservation r : c.reserved) {
                    if (gone.contains(r.seg) && r.mark < r.end) {
                        ranges.add(new long[] {r.seg.spec.base() + r.mark, r.end - r.mark});
                    }
                }
            }
        }
        // as aligned runs of the new segment, sorted and merged: each byte parked once, in the same order on a replay
        long capacity = seg.allocator.capacity();
        TreeMap<Long, Long> runs = new TreeMap<>();
        for (long[] r : ranges) {
            long start = Math.max(0, r[0] - seg.spec.base()) & -RangeAllocator.ALIGNMENT;
            long end = Math.min(capacity, RangeAllocator.aligned(Math.max(0, r[0] + RangeAllocator.aligned(r[1]) - seg.spec.base())));
            if (start < end) {
                runs.merge(start, end, Math::max);
            }
        }
        long releaseAt = now + config.putReleaseTimeout().toNanos();
        long start = -1;
        long end = -1;
        for (Map.Entry<Long, Long> run : runs.entrySet()) {
            if (run.getKey() > end) {
                park(seg, start, end, releaseAt);
                start = run.getKey();
            }
            end = Math.max(end, run.getValue());
        }
        park(seg, start, end, releaseAt);
    }

    private void park(MountedSegment seg, long start, long end, long releaseAt) {
        if (start >= 0 && start < end) {
            seg.take(start, end - start);
            state.eviction.park(new long[] {ObjectRecord.pack(seg.index, start)}, end - start, releaseAt);
        }
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
