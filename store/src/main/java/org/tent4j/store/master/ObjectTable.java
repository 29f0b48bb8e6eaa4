package org.tent4j.store.master;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

import com.google.re2j.Pattern;
import com.google.re2j.PatternSyntaxException;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command.ReplicaList;

/**
 * Objects and leases: the object map split into shards, each guarded by its own lock (so reads off the command stream
 * can look up a key while a command is applied); read leases, removal, the sweeps over every object.
 */
final class ObjectTable {
    private final MasterState state;
    private final MasterConfig config;
    private final MasterCounters counters;
    private final long leaseNanos;
    /**
     * A held read lease answers a durable master's read without a log entry while it runs at least 1/this of a lease
     * TTL more (2.5 s of the default 10 s: what a read or a get session is sure to have). With half a TTL, the 16-thread
     * 4 KiB get bench renewed each key every 5 s, an entry per batch that a renewal held up: 0.63x-0.66x of the
     * in-memory master's gets, against 0.76x-1.0x with a quarter (docs/perf-notes/store.md).
     */
    static final int HELD_LEASE_PARTS = 4;
    private final long promoteWindowMillis;
    private final Shard[] shards;
    /** Fed by every read this table grants or serves under a held lease. */
    final HotKeys hotKeys = new HotKeys();

    ObjectTable(MasterState state) {
        this.state = state;
        this.config = state.config();
        this.counters = state.counters;
        this.leaseNanos = config.leaseTtl().toNanos();
        this.promoteWindowMillis = config.promoteWindow().toMillis();
        this.shards = new Shard[config.shards()];
        for (int i = 0; i < shards.length; i++) {
            shards[i] = new Shard();
        }
    }

    Shard[] shards() {
        return shards;
    }

    /** Replaces shard {@code i} (a restore, before the first command). */
    void restoreShard(int i, Shard shard) {
        shards[i] = shard;
    }

    Shard shard(String key) {
        // the top bits of a multiplicative hash: HashMap indexes its table by the low bits of (h ^ h >>> 16), and a
        // shard picked by those same bits put all its keys in 1/1024 of its table's buckets (bins of hundreds, made
        // into trees: every lookup a dozen String compares, most of the master's CPU under load)
        return shards[(int) ((Integer.toUnsignedLong(key.hashCode() * 0x9E3779B9) * shards.length) >>> 32)];
    }

    void checkKey(String key) {
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

    // ---------------------------------------------------------------- reads

    ReplicaList grantRead(long now, String key) {
        checkKey(key);
        Shard shard = shard(key);
        synchronized (shard) {
            ObjectRecord rec = existing(shard, key);
            if (rec.state != ObjectRecord.COMPLETE) {
                throw new StoreException(StoreError.REPLICA_IS_NOT_READY, "key '" + key + "' is still being written");
            }
            List<ReplicaLocation> locs = state.segments.locations(rec);
            if (locs.isEmpty()) {
                throw new StoreException(StoreError.OBJECT_NOT_FOUND, "key '" + key + "' has no readable replica left");
            }
            long leasedUntil = rec.lease;
            // the lease covers the disk replica as it covers memory ones: neither range is reused before it ends
            rec.lease = Math.max(rec.lease, now + leaseNanos);
            counters.leasesGranted.increment();
            if (locs.get(0).onDisk()) {
                counters.diskReads.increment();
                int promoteAfter = config.promoteAfterHits();
                // the read goes on from disk; the copy into memory runs beside it, once
                rec.countHit(now, leasedUntil, promoteWindowMillis);
                if (promoteAfter > 0 && rec.offloadTask == 0 && rec.hits >= promoteAfter) {
                    state.offloads.promote(now, key, rec);
                }
            }
            hotKeys.sample(key);
            return new ReplicaList(rec.size, locs, config.leaseTtl());
        }
    }

    /**
     * The key's replicas under the read lease it already holds, when that lease runs at least a quarter of a lease TTL
     * ({@link #HELD_LEASE_PARTS}) past {@code now}, its first replica is in memory and it is readable: changes no
     * state and no counter (only the hot-key sample, a metric, as {@link #grantRead}'s), so a durable master serves it
     * without a log entry. The answer's lease is what is left of the held one. Null: the read needs {@link #grantRead} (not leased long enough,
     * on disk, not readable, not found: its own refusal).
     */
    ReplicaList heldRead(long now, String key) {
        checkKey(key);
        Shard shard = shard(key);
        synchronized (shard) {
            ObjectRecord rec = shard.map.get(key);
            if (rec == null || rec.state != ObjectRecord.COMPLETE || rec.lease - now < leaseNanos / HELD_LEASE_PARTS) {
                return null;
            }
            List<ReplicaLocation> locs = state.segments.locations(rec);
            if (locs.isEmpty() || locs.get(0).onDisk()) {
                return null;
            }
            hotKeys.sample(key);
            return new ReplicaList(rec.size, locs, java.time.Duration.ofNanos(rec.lease - now));
        }
    }

    /** The key's record; the caller holds {@code shard}. */
    private static ObjectRecord existing(Shard shard, String key) {
        ObjectRecord rec = shard.map.get(key);
        if (rec == null) {
            throw new StoreException(StoreError.OBJECT_NOT_FOUND, "key '" + key + "' not found");
        }
        return rec;
    }

    /** Whether the key is readable now. Grants no lease, so probing does not keep objects from eviction. */
    boolean exists(String key) {
        checkKey(key);
        Shard shard = shard(key);
        synchronized (shard) {
            ObjectRecord rec = shard.map.get(key);
            return rec != null && rec.state == ObjectRecord.COMPLETE && !state.segments.locations(rec).isEmpty();
        }
    }

    /** The object's size in bytes; no lease. */
    long size(String key) {
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

    void remove(long now, String key, boolean force) {
        checkKey(key);
        Shard shard = shard(key);
        synchronized (shard) {
            ObjectRecord rec = existing(shard, key);
            if (rec.inFlight()) {
                throw new StoreException(StoreError.REPLICA_IS_NOT_READY, "key '" + key + "' has a put in flight");
            }
            if (rec.lease > now && !force) {
                counters.removalsBlockedByLease.increment();
                throw new StoreException(StoreError.OBJECT_HAS_LEASE, "key '" + key + "' is leased to a reader for "
                        + (rec.lease - now) / 1_000_000 + " ms more");
            }
            shard.map.remove(key);
            release(key, rec, now);
        }
    }

    int removeMatching(long now, Predicate<String> match, boolean force) {
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
                    release(e.getKey(), rec, now);
                    removed++;
                }
            }
        }
        return removed;
    }

    /**
     * Removes the named keys that are still removable now (readable or upserting, unleased unless {@code force}); a key
     * gone or in flight since it was matched is skipped. The keys, not a pattern, are the command, so a replay
     * removes exactly these without matching anything.
     */
    int removeKeys(long now, List<String> keys, boolean force) {
        int removed = 0;
        for (String key : keys) {
            Shard shard = shard(key);
            synchronized (shard) {
                ObjectRecord rec = shard.map.get(key);
                if (rec == null || rec.inFlight() || (rec.lease > now && !force)) {
                    continue;
                }
                shard.map.remove(key);
                release(key, rec, now);
                removed++;
            }
        }
        return removed;
    }

    /**
     * Keys that {@code pattern} matches whole, read off the command stream: each shard's keys are copied under its
     * lock and matched after it is let go, so neither the ordering point nor a shard is held while a match runs.
     */
    List<String> keysMatching(Pattern pattern) {
        List<String> matched = new ArrayList<>();
        List<String> candidates = new ArrayList<>();
        for (Shard shard : shards) {
            candidates.clear();
            synchronized (shard) {
                candidates.addAll(shard.map.keySet());
            }
            for (String key : candidates) {
                if (pattern.matches(key)) {
                    matched.add(key);
                }
            }
        }
        return matched;
    }

    /** A record its caller removed from its shard: repairs forget it, and it no longer counts among the objects. */
    void removed(String key, ObjectRecord rec) {
        state.repairs.forget(key, rec);
        counters.objects.decrement();
        counters.objectBytes.add(-rec.size);
    }

    /** {@link #removed}, then frees the record's space, or parks it while a lease or a cancelled task may still read it. */
    void release(String key, ObjectRecord rec, long now) {
        removed(key, rec);
        // a lease's readers, or the node of a task cancelled here, may still be reading the bytes
        long busy = Math.max(rec.lease, state.offloads.cancel(rec));
        if (busy > now) {
            state.parking.park(rec.allReplicas(), rec.size, busy);
        } else {
            state.segments.free(rec.allReplicas(), rec.size);
        }
    }

    /**
     * RE2 syntax, matched in time linear in the key (RE2/J): any caller may send a pattern, and a backtracking
     * matcher let one pattern hold the master for seconds per key. What RE2 cannot match in linear time
     * (backreferences, lookaround, possessive quantifiers) is refused here.
     */
    static Pattern compile(String regex) {
        if (regex == null || regex.isEmpty() || regex.length() > 4096) {
            throw new StoreException(StoreError.INVALID_PARAMS, "regex must be 1 to 4096 characters");
        }
        try {
            return Pattern.compile(regex);
        } catch (PatternSyntaxException e) {
            throw new StoreException(StoreError.INVALID_PARAMS, "bad regex '" + regex + "' (RE2 syntax; no "
                    + "backreferences or lookaround): " + e.getDescription());
        }
    }

    // ---------------------------------------------------------------- scrub

    MountedSegment ownDisk(String clientId, String segmentId) {
        MountedSegment seg = state.segments.byId(segmentId);
        if (seg == null || !seg.disk) {
            throw new StoreException(StoreError.SEGMENT_NOT_FOUND, "no disk segment " + segmentId + " is mounted");
        }
        if (!seg.owner.equals(clientId)) {
            throw new StoreException(StoreError.ILLEGAL_CLIENT, "disk segment " + segmentId + " belongs to " + seg.owner
                    + ", not " + clientId);
        }
        return seg;
    }

    List<Command.DiskReplica> diskReplicas(String clientId, String segmentId, long from, int limit) {
        MountedSegment seg = ownDisk(clientId, segmentId);
        List<Command.DiskReplica> out = new ArrayList<>();
        long seen = 0;
        for (Shard shard : shards) {
            synchronized (shard) {
                for (Map.Entry<String, ObjectRecord> e : shard.map.entrySet()) {
                    ObjectRecord rec = e.getValue();
                    if (rec.disk != -1 && ObjectRecord.segment(rec.disk) == seg.index && seen++ >= from) {
                        if (out.size() == limit) {
                            return listedWhileMounted(seg, out);
                        }
                        out.add(new Command.DiskReplica(e.getKey(), ObjectRecord.offset(rec.disk), rec.size,
                                Integer.toUnsignedLong(rec.crc)));
                    }
                }
            }
        }
        return listedWhileMounted(seg, out);
    }

    /**
     * {@code listed} if {@code seg} is still mounted after the walk (read off the stream): unmounted meanwhile, its
     * index may have been taken by a newer segment whose replicas the walk listed as its own.
     */
    private static List<Command.DiskReplica> listedWhileMounted(MountedSegment seg, List<Command.DiskReplica> listed) {
        if (!seg.mounted()) {
            throw new StoreException(StoreError.SEGMENT_NOT_FOUND, "disk segment " + seg.spec.id() + " was unmounted");
        }
        return listed;
    }

    int dropDiskReplicas(long now, Command.DropDiskReplicas c) {
        MountedSegment seg = ownDisk(c.clientId(), c.segmentId());
        int dropped = 0;
        for (Command.DiskReplica r : c.replicas()) {
            Shard shard = shard(r.key());
            synchronized (shard) {
                ObjectRecord rec = shard.map.get(r.key());
                if (rec == null || rec.disk != ObjectRecord.pack(seg.index, r.offset())) {
                    continue;
                }
                dropped++;
                counters.scrubDropped.increment();
                state.offloads.cancel(rec); // a promotion from the bad bytes
                long[] bad = {rec.disk};
                rec.disk = -1;
                if (rec.lease > now) {
                    state.parking.park(bad, rec.size, rec.lease);
                } else {
                    state.segments.free(bad, rec.size);
                }
                if (rec.state == ObjectRecord.COMPLETE && !rec.readable()) {
                    shard.map.remove(r.key());
                    removed(r.key(), rec);
                } else {
                    state.repairs.mark(r.key(), rec); // memory replicas fewer than asked count again without the disk one
                }
            }
        }
        return dropped;
    }

    // ---------------------------------------------------------------- sweeps

    /**
     * Drops every replica on the {@code dropped} segments in one pass (objects left with none are erased); adds to
     * {@code writing} each dropped replica a writer may still be writing (a put or an upsert in flight) as {replica, size}.
     */
    void dropReplicasOn(boolean[] dropped, List<long[]> writing) {
        Segments segments = state.segments;
        for (Shard shard : shards) {
            synchronized (shard) {
                for (Iterator<Map.Entry<String, ObjectRecord>> it = shard.map.entrySet().iterator(); it.hasNext(); ) {
                    Map.Entry<String, ObjectRecord> e = it.next();
                    ObjectRecord rec = e.getValue();
                    if (!touches(rec, dropped)) {
                        continue;
                    }
                    long[] before = rec.replicas();
                    if (rec.state == ObjectRecord.PROCESSING) {
                        writing(before, rec.size, dropped, writing);
                    }
                    writing(rec.pending, rec.pendingSize, dropped, writing);
                    rec.setReplicas(segments.liveOnly(before));
                    if (rec.pending != null) {
                        rec.pending = segments.liveOnly(rec.pending);
                    }
                    if (rec.disk != -1 && dropped[ObjectRecord.segment(rec.disk)]) {
                        rec.disk = -1;
                    }
                    if (rec.offloadTask != 0) {
                        // its source or its disk may be what went; offload again later if it still can
                        state.offloads.cancel(rec);
                    }
                    if (rec.state == ObjectRecord.COMPLETE && !rec.readable()) {
                        it.remove();
                        removed(e.getKey(), rec);
                        if (rec.pending != null) {
                            segments.free(rec.pending, rec.pendingSize);
                        }
                    } else {
                        state.repairs.mark(e.getKey(), rec);
                    }
                }
            }
        }
    }

    private static void writing(long[] replicas, long size, boolean[] dropped, List<long[]> writing) {
        if (replicas != null) {
            for (long r : replicas) {
                if (dropped[ObjectRecord.segment(r)]) {
                    writing.add(new long[] {r, size});
                }
            }
        }
    }

    private boolean touches(ObjectRecord rec, boolean[] dropped) {
        if (rec.replica0 != -1 && dropped[ObjectRecord.segment(rec.replica0)]) {
            return true;
        }
        if ((rec.disk != -1 && dropped[ObjectRecord.segment(rec.disk)]) || state.offloads.touches(rec, dropped)) {
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

    int reclaimAbandonedPuts(long now) {
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
                    counters.putsReclaimed.increment();
                    if (rec.state == ObjectRecord.PROCESSING) {
                        it.remove();
                        counters.objects.decrement();
                        state.segments.free(rec.replicas(), rec.size);
                    } else {
                        state.segments.free(rec.pending, rec.pendingSize);
                        rec.pending = null;
                        rec.flags &= ~(ObjectRecord.UPSERTING | ObjectRecord.WRITE_THROUGH);
                    }
                }
            }
        }
        return reclaimed;
    }

    /**
     * One shard's map. Its iteration order is part of the state (eviction samples and walks in it), so a snapshot
     * records the most entries it ever held ({@link #peak}: a {@code HashMap} grows and never shrinks, and its table
     * size orders the walk) and is restored into a map of the same table size, entries inserted in walk order.
     */
    static final class Shard {
        final HashMap<String, ObjectRecord> map;
        int peak;

        Shard() {
            this(16, 0);
        }

        Shard(int capacity, int peak) {
            this.map = new HashMap<>(capacity);
            this.peak = peak;
        }

        void put(String key, ObjectRecord rec) {
            map.put(key, rec);
            peak = Math.max(peak, map.size());
        }

        /** The table size {@code HashMap} grew to for {@link #peak} entries (it resizes past 3/4 full). */
        int capacity() {
            int cap = 16;
            while (peak > (int) (cap * 0.75f)) {
                cap <<= 1;
            }
            return cap;
        }
    }
}
