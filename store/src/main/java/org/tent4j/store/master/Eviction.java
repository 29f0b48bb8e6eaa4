package org.tent4j.store.master;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * Eviction: the rounds that free space above the high watermark (planned off the ordering point, or replayed under
 * it), and a put's bounded eviction of its own.
 */
final class Eviction {
    private final MasterState state;
    private final MasterConfig config;
    private final MasterCounters counters;

    private final Object lock = new Object();

    Eviction(MasterState state) {
        this.state = state;
        this.config = state.config();
        this.counters = state.counters;
    }

    // ---------------------------------------------------------------- rounds

    /**
     * Above the high watermark, frees space by dropping the least recently leased objects until usage is an eviction
     * ratio under the mark. Leased, in-flight and hard-pinned objects are never taken; soft-pinned ones only when
     * nothing else is left.
     */
    Command.Evicted evict(long now) {
        // the housekeeping round and the evictor may both find usage high: the second then finds it low again
        synchronized (lock) {
            long objs = counters.evictedObjects.sum();
            long bytes = counters.evictedBytes.sum();
            evictLocked(now);
            return new Command.Evicted(counters.evictedObjects.sum() - objs, counters.evictedBytes.sum() - bytes);
        }
    }

    private void evictLocked(long now) {
        // the time seeds the lease samples, so a replayed log evicts the same objects
        SplittableRandom rnd = new SplittableRandom(now);
        // disk first: offloads started below then find room on it. An object whose disk copy that round took is the
        // least recently leased of the disk's: were memory's round to take it too, it is dropped, not written to
        // disk again only for a later disk round to drop it
        Set<ObjectRecord> diskDropped = Collections.newSetFromMap(new IdentityHashMap<>());
        evictTier(now, true, state.segments.disks(), rnd, diskDropped);
        evictTier(now, false, state.segments.active(), rnd, diskDropped);
    }

    /**
     * One tier's round. Memory: victims are offloaded to their owner's disk where offloading is on and it has room
     * (their memory comes free when the offload completes, so it counts as freed now), else dropped. Disk: victims lose
     * their disk replica, by the same least-recently-leased order whether or not they are also in memory; those with
     * no memory replica are gone (a disk full of objects also in memory could otherwise never make room).
     */
    private void evictTier(long now, boolean disk, MountedSegment[] segs, SplittableRandom rnd,
                           Set<ObjectRecord> diskDropped) {
        long goal = goal(disk, segs);
        if (goal == Long.MIN_VALUE) {
            return;
        }
        counters.evictionRounds.increment();
        // a sampled cutoff may fall short, and puts evicting for themselves meanwhile take some of the oldest: a few
        // more passes while usage is above the goal; the soft-pinned only when nothing else is evictable
        for (int pass = 0; pass < 3 && allocated(disk) > goal; pass++) {
            if (evictOlderThanCutoff(now, allocated(disk) - goal, false, disk, rnd, diskDropped) < 0) {
                evictOlderThanCutoff(now, allocated(disk) - goal, true, disk, rnd, diskDropped);
                return;
            }
        }
    }

    /** Bytes of the tier in use less those already on their way out (memory being offloaded). */
    private long allocated(boolean disk) {
        return disk ? state.segments.diskAllocated() : state.segments.allocated() - pending(false);
    }

    private long pending(boolean disk) {
        return disk ? 0 : state.offloads.memoryBytesInFlight();
    }

    /**
     * Most key characters one round's victims name (at most 3 UTF-8 bytes each): the round is one entry of the
     * durable log, which must fit its 16 MiB write buffer.
     */
    static final long VICTIM_KEY_CHARS = 2L << 20;

    /**
     * The victims of a round, chosen without the ordering point (shard locks only, a walk over every object), so that
     * calls wait only while {@link #evictVictims} takes them: per tier, what {@link #evictTier}'s first pass would
     * take now. Neither tier over its mark, or nothing evictable: {@link Command.EvictVictims#none}.
     */
    Command.EvictVictims plan(long now) {
        SplittableRandom rnd = new SplittableRandom(now);
        return new Command.EvictVictims(planTier(now, true, state.segments.disks(), rnd),
                planTier(now, false, state.segments.active(), rnd));
    }

    private Command.Victims planTier(long now, boolean disk, MountedSegment[] segs, SplittableRandom rnd) {
        long goal = goal(disk, segs);
        long excess = goal == Long.MIN_VALUE ? 0 : allocated(disk) - goal;
        if (excess <= 0) {
            return Command.Victims.NONE;
        }
        // a large table's leases are sampled from a run of its shards: keys hash evenly over them
        int sampled = state.objectCount() >= PLAN_SAMPLE_FROM ? PLAN_SAMPLE_SHARDS : Integer.MAX_VALUE;
        Command.Victims v = victims(now, excess, false, disk, rnd, sampled);
        if (v == null) {
            v = victims(now, excess, true, disk, rnd, sampled);
        }
        return v == null ? Command.Victims.NONE : v;
    }

    /**
     * Shards the planner's first pass reads in a table of at least {@link #PLAN_SAMPLE_FROM} objects: an eighth of the
     * default 1,024, so 32,768 objects or more feed its {@link MasterState#LEASE_SAMPLES} samples. The pass, one of
     * the round's two walks over every object, was a sixth of a served durable master's time under 4 KiB puts.
     */
    static final int PLAN_SAMPLE_SHARDS = 128;
    static final long PLAN_SAMPLE_FROM = 262_144;

    /**
     * Takes the victims {@link #plan} chose that are still what they were then: present, evictable now and leased no
     * later than the plan's cutoff (a read or a new put since makes an object younger, so it stays), in a tier still
     * over its high watermark. Walks only the victims, under the ordering point.
     */
    Command.Evicted evictVictims(long now, Command.EvictVictims victims) {
        synchronized (lock) {
            long objs = counters.evictedObjects.sum();
            long bytes = counters.evictedBytes.sum();
            Set<ObjectRecord> diskDropped = Collections.newSetFromMap(new IdentityHashMap<>());
            takePlanned(now, true, victims.disk(), state.segments.disks(), diskDropped);
            takePlanned(now, false, victims.memory(), state.segments.active(), diskDropped);
            return new Command.Evicted(counters.evictedObjects.sum() - objs, counters.evictedBytes.sum() - bytes);
        }
    }

    /**
     * One tier's planned victims, counted as a round as {@link #evictTier} counts one: only while the tier is over its
     * mark. A tier brought under it since the plan (a put evicted for itself, an offload started) keeps its victims:
     * they were chosen for room that is no longer wanted.
     */
    private void takePlanned(long now, boolean disk, Command.Victims v, MountedSegment[] segs,
                             Set<ObjectRecord> diskDropped) {
        if (v.keys().isEmpty() || goal(disk, segs) == Long.MIN_VALUE) {
            return;
        }
        counters.evictionRounds.increment();
        take(now, disk, v, diskDropped);
    }

    /**
     * The usage a round of the tier brings it down to (an eviction ratio under the high watermark, or further when
     * usage is further above it); {@link Long#MIN_VALUE} when the tier is at or under its mark.
     */
    private long goal(boolean disk, MountedSegment[] segs) {
        long capacity = 0;
        long used = 0;
        for (MountedSegment s : segs) {
            capacity += s.allocator.capacity();
            used += s.allocator.used();
        }
        if (capacity == 0) {
            return Long.MIN_VALUE;
        }
        used -= pending(disk);
        double ratio = (double) used / capacity;
        if (ratio <= config.highWatermark()) {
            return Long.MIN_VALUE;
        }
        double fraction = Math.max(config.evictionRatio(), ratio - config.highWatermark() + config.evictionRatio());
        return used - (long) (capacity * fraction);
    }

    /** Evicts from the tier what {@link #victims} chooses for {@code target} bytes; as {@link #victims} returns. */
    private long evictOlderThanCutoff(long now, long target, boolean softPinned, boolean disk, SplittableRandom rnd,
                                      Set<ObjectRecord> diskDropped) {
        // a replayed round walks every shard, as the log that recorded it did
        Command.Victims v = victims(now, target, softPinned, disk, rnd, Integer.MAX_VALUE);
        return v == null ? -1 : take(now, disk, v, diskDropped);
    }

    /**
     * Two passes over the shards: the first samples the leases of the evictable objects (a reservoir of
     * {@link MasterState#LEASE_SAMPLES}, no allocation per object) and sums their bytes; the lease below which
     * {@code target} bytes lie is read off the sample; the second names the objects leased before it (everything
     * older goes, even past the target: the sample's error is small, and objects written together are evicted
     * together, so their ranges coalesce into runs a reservation fits in; those leased exactly at the cutoff, a burst
     * within one clock tick, only while the target is not reached), up to {@link #VICTIM_KEY_CHARS} characters of
     * keys. Null if no object was evictable or about to be (leased); no keys if only leased ones were. With fewer than
     * all shards to {@code sample}, the first pass reads that many from a random one on and scales their bytes up,
     * unless it found nothing evictable there (then it reads them all).
     */
    private Command.Victims victims(long now, long target, boolean softPinned, boolean disk, SplittableRandom rnd,
                                    int sample) {
        ObjectTable.Shard[] shards = state.objects.shards();
        int walked = Math.min(sample, shards.length);
        int first = walked < shards.length ? rnd.nextInt(shards.length) : 0;
        long[] leases = new long[MasterState.LEASE_SAMPLES];
        long seen = 0;
        long evictableBytes = 0;
        boolean leased = false;
        for (int i = 0; i < walked; i++) {
            ObjectTable.Shard shard = shards[(first + i) % shards.length];
            synchronized (shard) {
                for (ObjectRecord rec : shard.map.values()) {
                    if (!evictable(rec, now, softPinned, disk)) {
                        leased |= !softPinned && rec.lease > now && evictable(rec, rec.lease, false, disk);
                        continue;
                    }
                    evictableBytes += footprint(rec, disk);
                    if (seen < MasterState.LEASE_SAMPLES) {
                        leases[(int) seen] = rec.lease;
                    } else {
                        long j = rnd.nextLong(seen + 1);
                        if (j < MasterState.LEASE_SAMPLES) {
                            leases[(int) j] = rec.lease;
                        }
                    }
                    seen++;
                }
            }
        }
        if (walked < shards.length) {
            if (seen == 0) {
                return victims(now, target, softPinned, disk, rnd, Integer.MAX_VALUE);
            }
            evictableBytes = (long) ((double) evictableBytes * shards.length / walked);
        }
        if (seen == 0) {
            // unpinned objects only leased (or written after `now`) are no reason to take the soft-pinned: they become
            // evictable soon
            return leased ? new Command.Victims(Long.MIN_VALUE, 0, softPinned, List.of()) : null;
        }
        int k = (int) Math.min(seen, MasterState.LEASE_SAMPLES);
        Arrays.sort(leases, 0, k);
        double q = Math.min(1.0, (double) target / evictableBytes);
        long cutoff = leases[Math.min(k - 1, Math.max(0, (int) Math.ceil(q * k) - 1))];
        List<String> keys = new ArrayList<>();
        long named = 0;
        long keyChars = 0;
        for (ObjectTable.Shard shard : shards) {
            synchronized (shard) {
                for (Map.Entry<String, ObjectRecord> e : shard.map.entrySet()) {
                    ObjectRecord rec = e.getValue();
                    if (rec.lease > cutoff || (rec.lease == cutoff && named >= target)
                            || !evictable(rec, now, softPinned, disk)) {
                        continue;
                    }
                    named += footprint(rec, disk);
                    keys.add(e.getKey());
                    keyChars += e.getKey().length();
                    if (keyChars >= VICTIM_KEY_CHARS) {
                        return new Command.Victims(cutoff, target, softPinned, keys);
                    }
                }
            }
        }
        return new Command.Victims(cutoff, target, softPinned, keys);
    }

    /**
     * Takes the tier's victims that are still evictable and no younger than the cutoff (at the cutoff itself only
     * until the target is freed), in the order named; returns the bytes freed (offloads count: their memory comes free
     * when they complete).
     */
    private long take(long now, boolean disk, Command.Victims v, Set<ObjectRecord> diskDropped) {
        boolean offload = !disk && state.offloads.enabled();
        long freed = 0;
        long[] replicas = new long[Math.max(16, v.keys().size())];
        long[] lengths = new long[replicas.length];
        int n = 0;
        for (String key : v.keys()) {
            ObjectTable.Shard shard = state.objects.shard(key);
            synchronized (shard) {
                ObjectRecord rec = shard.map.get(key);
                if (rec == null || rec.lease > v.cutoff() || (rec.lease == v.cutoff() && freed >= v.target())
                        || !evictable(rec, now, v.softPinned(), disk)) {
                    continue;
                }
                long bytes = footprint(rec, disk);
                freed += bytes;
                long[] gone;
                if (disk) {
                    gone = new long[]{rec.disk};
                    rec.disk = -1;
                    counters.diskEvictedObjects.increment();
                    if (rec.hasReplicas()) {
                        // only its disk copy goes: it stays readable from memory (and is offloaded again when a
                        // later round of memory evicts it); without a disk copy, fewer memory replicas than asked
                        // are repaired
                        diskDropped.add(rec);
                        state.repairs.mark(key, rec);
                    } else {
                        shard.map.remove(key);
                        state.objects.removed(key, rec);
                    }
                } else if (offload && rec.disk == -1 && (rec.flags & ObjectRecord.OFFLOAD_FAILED) == 0
                        && !diskDropped.contains(rec) && state.offloads.start(now, key, rec, bytes)) {
                    continue; // its memory comes free when the offload completes
                } else {
                    gone = rec.replicas();
                    counters.evictedObjects.increment();
                    counters.evictedBytes.add(bytes);
                    if (rec.disk != -1) {
                        rec.setReplicas(new long[0]); // demoted: its disk replica stays readable
                    } else {
                        shard.map.remove(key);
                        state.objects.removed(key, rec);
                    }
                }
                for (long r : gone) {
                    if (n == replicas.length) {
                        replicas = Arrays.copyOf(replicas, 2 * n);
                        lengths = Arrays.copyOf(lengths, 2 * n);
                    }
                    replicas[n] = r;
                    lengths[n++] = rec.size;
                }
            }
        }
        freeInAddressOrder(replicas, lengths, n);
        return freed;
    }

    /**
     * A put's cheap first step when no segment has {@code need} contiguous bytes: evicts the least recently leased of
     * up to {@link MasterState#EVICTION_SAMPLES} unpinned evictable objects whose own range is large enough for the
     * put ({@code need}, aligned, or more) and lies on a segment it may use ({@code usable}, by segment index), found
     * walking the shards from a random one (at most 64 records looked at per sample). Freeing such a range makes room
     * by itself, so a small object never dies for nothing here. NONE if none was found within reach; FREED when one was
     * evicted; OFFLOADING when its offload started (its memory comes free when the offload completes, so the put waits
     * for that rather than take another).
     */
    ContiguousRoom.Outcome evictLargeEnough(long now, long need, boolean[] usable, SplittableRandom rnd) {
        ObjectTable.Shard[] shards = state.objects.shards();
        int samples = MasterState.EVICTION_SAMPLES;
        int start = rnd.nextInt(shards.length);
        int sampled = 0;
        int looked = 0;
        ObjectTable.Shard bestShard = null;
        String bestKey = null;
        long bestLease = Long.MAX_VALUE;
        for (int i = 0; i < shards.length && sampled < samples && looked < 64 * samples; i++) {
            ObjectTable.Shard shard = shards[(start + i) & (shards.length - 1)];
            synchronized (shard) {
                for (Map.Entry<String, ObjectRecord> e : shard.map.entrySet()) {
                    if (sampled >= samples || ++looked > 64 * samples) {
                        break;
                    }
                    ObjectRecord rec = e.getValue();
                    if (RangeAllocator.aligned(rec.size) >= need && evictable(rec, now, false, false) && onUsable(rec, usable)) {
                        sampled++;
                        if (rec.lease < bestLease) {
                            bestLease = rec.lease;
                            bestShard = shard;
                            bestKey = e.getKey();
                        }
                    }
                }
            }
        }
        if (bestShard == null) {
            return ContiguousRoom.Outcome.NONE;
        }
        // every change is applied under the ordering point, so the victim is as it was when sampled
        synchronized (bestShard) {
            return evictRecord(now, bestShard, bestKey, bestShard.map.get(bestKey))
                    ? ContiguousRoom.Outcome.OFFLOADING : ContiguousRoom.Outcome.FREED;
        }
    }

    private static boolean onUsable(ObjectRecord rec, boolean[] usable) {
        for (long r : rec.replicas()) {
            int seg = ObjectRecord.segment(r);
            if (seg < usable.length && usable[seg]) {
                return true;
            }
        }
        return false;
    }

    /**
     * Evicts one evictable object from memory, its shard's lock held: offloaded where offloading is on and it can be
     * (true: its memory comes free when the offload completes), else demoted to its disk replica or dropped (false:
     * its memory is free now).
     */
    boolean evictRecord(long now, ObjectTable.Shard shard, String key, ObjectRecord rec) {
        long bytes = footprint(rec, false);
        if (state.offloads.enabled() && rec.disk == -1 && (rec.flags & ObjectRecord.OFFLOAD_FAILED) == 0
                && state.offloads.start(now, key, rec, bytes)) {
            return true;
        }
        counters.evictedObjects.increment();
        counters.evictedBytes.add(bytes);
        if (rec.disk != -1) {
            state.segments.free(rec.replicas(), rec.size);
            rec.setReplicas(new long[0]);
        } else {
            shard.map.remove(key);
            state.objects.release(key, rec, now);
        }
        return false;
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
            state.segments.at(seg).free(start, end - start);
        }
    }

    /** Bytes of the tier the object holds: its memory replicas, or its disk replica. */
    long footprint(ObjectRecord rec, boolean disk) {
        if (disk) {
            return rec.disk == -1 ? 0 : RangeAllocator.aligned(state.segments.at(ObjectRecord.segment(rec.disk)).footprint(rec.size));
        }
        return rec.hasReplicas() ? RangeAllocator.aligned(rec.size) * (rec.more == null ? 1 : rec.more.length + 1) : 0;
    }

    /**
     * Whether eviction from memory ({@code disk} false: it has a memory replica) or from disk (it has a disk replica)
     * may take it now: neither while it is being written, leased, hard-pinned or has an offload or promotion in flight.
     */
    static boolean evictable(ObjectRecord rec, long now, boolean softPinnedToo, boolean disk) {
        if (rec.inFlight() || rec.lease > now || (rec.flags & ObjectRecord.HARD_PIN) != 0 || rec.offloadTask != 0) {
            return false;
        }
        if (disk ? rec.disk == -1 : !rec.hasReplicas()) {
            return false;
        }
        boolean pinned = (rec.flags & ObjectRecord.SOFT_PIN) != 0 && rec.pin > now;
        return softPinnedToo || !pinned;
    }
}
