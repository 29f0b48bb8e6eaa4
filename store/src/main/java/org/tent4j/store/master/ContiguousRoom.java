package org.tent4j.store.master;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * A put's last resort when no memory segment has the contiguous bytes it asks for and no single evictable object is
 * large enough ({@link Eviction#evictLargeEnough}): finds, over every segment the put may use, the cheapest window of
 * at least that many bytes made only of free ranges, objects being offloaded (their memory comes free when the offload
 * completes) and evictable objects (not leased, pinned or in flight; anything else in between, a reservation or a
 * parked range included, ends a window), and evicts the evictable objects in it. Cheapest: the fewest soft-pinned
 * bytes, then the fewest bytes evicted, then the fewest being offloaded, then the lowest segment index and offset: so
 * a window that offloads in flight already make needs no new one, and the put waits for them. Victims are chosen from
 * state only (no randomness, no clock), so a replay evicts the same.
 *
 * <p>Cost, for N objects, E of them evictable in memory and F free ranges: one pass over the shards (O(N)), a sort of
 * the evictable replicas (O(E log E), 16 bytes each, transient), one scan per segment merging them with its free
 * ranges (O(E + F), two pointers), and one more pass over the shards to evict the window's objects (O(N)). It holds
 * the ordering point meanwhile, so it runs only when the cheap step found nothing: a store whose evictor keeps up
 * never gets here. When even this finds no room, {@link #diagnose} (one more O(N) pass) says why.
 */
final class ContiguousRoom {
    private static final long SOFT = Long.MIN_VALUE;
    /** A replica being offloaded: it comes free by itself, so a window counts it as free to be, evicting nothing. */
    private static final long PENDING = 1L << 62;

    private final MasterState state;

    ContiguousRoom(MasterState state) {
        this.state = state;
    }

    /** What the search did: whether room is free now, or will be once the offloads it started complete. */
    enum Outcome { NONE, FREED, OFFLOADING }

    /**
     * The oldest offload in flight that will, once it completes, free a memory range of at least {@code need} bytes
     * (aligned) on a usable segment, or null: a put that finds no room then waits for it rather than start offloads of
     * others (O(offloads in flight), no pass over the objects).
     */
    Offloads.Task beingMade(long need, boolean[] usable) {
        for (Offloads.Task t : state.offloads.offloadsInFlight()) {
            int seg = ObjectRecord.segment(t.source());
            if (RangeAllocator.aligned(t.size()) >= need && seg < usable.length && usable[seg]) {
                return t;
            }
        }
        return null;
    }

    /** Evicts the cheapest window of at least {@code need} bytes (aligned) on a usable segment, if one exists. */
    Outcome makeRoom(long now, long need, boolean[] usable) {
        // the evictable and the being-offloaded memory replicas on usable segments: packed (segment, offset), and their
        // aligned lengths with the soft-pinned and the being-offloaded ones flagged
        Set<Long> offloads = new HashSet<>();
        for (Offloads.Task t : state.offloads.offloadsInFlight()) {
            offloads.add(t.id());
        }
        long[] at = new long[64];
        long[] len = new long[64];
        int n = 0;
        for (ObjectTable.Shard shard : state.objects.shards()) {
            synchronized (shard) {
                for (ObjectRecord rec : shard.map.values()) {
                    boolean pending = rec.offloadTask != 0 && offloads.contains(rec.offloadTask);
                    if (!pending && !Eviction.evictable(rec, now, true, false)) {
                        continue;
                    }
                    boolean soft = !pending && (rec.flags & ObjectRecord.SOFT_PIN) != 0 && rec.pin > now;
                    long l = RangeAllocator.aligned(rec.size) | (soft ? SOFT : 0) | (pending ? PENDING : 0);
                    for (long r : rec.replicas()) {
                        int seg = ObjectRecord.segment(r);
                        if (seg < usable.length && usable[seg]) {
                            if (n == at.length) {
                                at = Arrays.copyOf(at, 2 * n);
                                len = Arrays.copyOf(len, 2 * n);
                            }
                            at[n] = r;
                            len[n++] = l;
                        }
                    }
                }
            }
        }
        long[] sorted = Arrays.copyOf(at, n);
        Arrays.sort(sorted);
        long[] sortedLen = new long[n];
        for (int i = 0; i < n; i++) {
            // a live replica's start is unique, so its place in the sorted copy is too
            sortedLen[Arrays.binarySearch(sorted, at[i])] = len[i];
        }
        Window best = null;
        int i = 0;
        for (MountedSegment seg : state.segments.active()) {
            if (seg.index >= usable.length || !usable[seg.index]) {
                continue;
            }
            while (i < n && ObjectRecord.segment(sorted[i]) < seg.index) {
                i++;
            }
            int j = i;
            while (j < n && ObjectRecord.segment(sorted[j]) == seg.index) {
                j++;
            }
            Window w = cheapest(seg, need, sorted, sortedLen, i, j);
            if (w != null && (best == null || w.cheaperThan(best))) {
                best = w;
            }
            i = j;
        }
        return best == null ? Outcome.NONE : evict(now, best);
    }

    /** The cheapest window on one segment: its free ranges and its evictable replicas {@code [from, to)}, merged. */
    private static Window cheapest(MountedSegment seg, long need, long[] sorted, long[] sortedLen, int from, int to) {
        Map<Long, Long> free = seg.allocator.freeRanges();
        int k = free.size() + (to - from);
        long[] start = new long[k];
        long[] end = new long[k];
        long[] evicted = new long[k];
        long[] soft = new long[k];
        long[] pending = new long[k];
        int m = 0;
        var fr = free.entrySet().iterator();
        Map.Entry<Long, Long> f = fr.hasNext() ? fr.next() : null;
        int o = from;
        while (f != null || o < to) {
            if (o >= to || (f != null && f.getKey() < ObjectRecord.offset(sorted[o]))) {
                start[m] = f.getKey();
                end[m++] = f.getKey() + f.getValue();
                f = fr.hasNext() ? fr.next() : null;
            } else {
                long l = sortedLen[o] & ~(SOFT | PENDING);
                boolean offloading = (sortedLen[o] & PENDING) != 0;
                start[m] = ObjectRecord.offset(sorted[o]);
                end[m] = start[m] + l;
                evicted[m] = offloading ? 0 : l;
                pending[m] = offloading ? l : 0;
                soft[m++] = sortedLen[o] < 0 ? l : 0;
                o++;
            }
        }
        Window best = null;
        int left = 0;
        long winEvicted = 0;
        long winSoft = 0;
        long winPending = 0;
        for (int r = 0; r < m; r++) {
            if (r > 0 && start[r] != end[r - 1]) {
                // something neither free nor evictable lies in between: a window cannot span it
                left = r;
                winEvicted = 0;
                winSoft = 0;
                winPending = 0;
            }
            winEvicted += evicted[r];
            winSoft += soft[r];
            winPending += pending[r];
            // the shortest window ending at r that is still large enough
            while (left < r && end[r] - start[left + 1] >= need) {
                winEvicted -= evicted[left];
                winSoft -= soft[left];
                winPending -= pending[left];
                left++;
            }
            if (end[r] - start[left] >= need) {
                Window w = new Window(seg.index, start[left], end[r], winSoft, winEvicted, winPending);
                if (best == null || w.cheaperThan(best)) {
                    best = w;
                }
            }
        }
        return best;
    }

    private Outcome evict(long now, Window w) {
        List<ObjectTable.Shard> shards = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        for (ObjectTable.Shard shard : state.objects.shards()) {
            synchronized (shard) {
                for (Map.Entry<String, ObjectRecord> e : shard.map.entrySet()) {
                    ObjectRecord rec = e.getValue();
                    if (Eviction.evictable(rec, now, true, false) && inWindow(rec, w)) {
                        shards.add(shard);
                        keys.add(e.getKey());
                    }
                }
            }
        }
        boolean offloading = false;
        for (int i = 0; i < keys.size(); i++) {
            ObjectTable.Shard shard = shards.get(i);
            synchronized (shard) {
                offloading |= state.eviction.evictRecord(now, shard, keys.get(i), shard.map.get(keys.get(i)));
            }
        }
        return offloading || w.pendingBytes > 0 ? Outcome.OFFLOADING : Outcome.FREED;
    }

    private static boolean inWindow(ObjectRecord rec, Window w) {
        for (long r : rec.replicas()) {
            if (ObjectRecord.segment(r) == w.segment && ObjectRecord.offset(r) >= w.start && ObjectRecord.offset(r) < w.end) {
                return true;
            }
        }
        return false;
    }

    private record Window(int segment, long start, long end, long softBytes, long evictedBytes, long pendingBytes) {
        boolean cheaperThan(Window o) {
            if (softBytes != o.softBytes) {
                return softBytes < o.softBytes;
            }
            if (evictedBytes != o.evictedBytes) {
                return evictedBytes < o.evictedBytes;
            }
            if (pendingBytes != o.pendingBytes) {
                return pendingBytes < o.pendingBytes;
            }
            return segment != o.segment ? segment < o.segment : start < o.start;
        }
    }

    // ---------------------------------------------------------------- why a put is refused

    /** Where the memory of the segments a put may use went, for the refusal's message. */
    record Diagnosis(int segments, long capacity, long free, long largestFree, long leased, long pinned, long inFlight,
                     long offloading, long parked, long evictable) {
        /** Whether bytes will free by themselves (leases end, puts finish or are revoked, offloads complete). */
        boolean transientShortage() {
            return leased + inFlight + offloading + parked > 0;
        }

        @Override
        public String toString() {
            long held = capacity - free - leased - pinned - inFlight - offloading - parked - evictable;
            return segments + " segments, " + mib(capacity) + " total, " + mib(free) + " free (largest run "
                    + mib(largestFree) + "), " + mib(leased) + " leased, " + mib(pinned) + " pinned, " + mib(inFlight)
                    + " in flight, " + mib(offloading) + " being offloaded, " + mib(parked) + " parked, "
                    + mib(Math.max(0, held)) + " reserved, " + mib(evictable) + " evictable but fragmented";
        }
    }

    /** Bytes for a person: B under 1 KiB, then KiB, MiB, GiB with one decimal. */
    static String mib(long bytes) {
        if (bytes < 1024) {
            return bytes + " B";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double v = bytes / 1024.0;
        int u = 0;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
    }

    /**
     * One pass over the objects (O(N)) sorting the bytes of the usable segments by why they are held: in flight (an
     * upsert's both versions), being offloaded, hard-pinned, leased, evictable (soft-pinned included); parked ranges
     * counted apart; the rest of what is allocated is reservations.
     */
    Diagnosis diagnose(long now, boolean[] usable) {
        int segments = 0;
        long capacity = 0;
        long free = 0;
        long largest = 0;
        for (MountedSegment seg : state.segments.active()) {
            if (seg.index < usable.length && usable[seg.index]) {
                segments++;
                capacity += seg.allocator.capacity();
                free += seg.allocator.capacity() - seg.allocator.used();
                largest = Math.max(largest, seg.allocator.largestFree());
            }
        }
        long leased = 0;
        long pinned = 0;
        long inFlight = 0;
        long offloading = 0;
        long evictable = 0;
        for (ObjectTable.Shard shard : state.objects.shards()) {
            synchronized (shard) {
                for (ObjectRecord rec : shard.map.values()) {
                    long bytes = RangeAllocator.aligned(rec.size) * count(rec.replicas(), usable);
                    if (rec.inFlight()) {
                        // an upsert in flight keeps its readable version from eviction too
                        inFlight += bytes;
                        if (rec.pending != null) {
                            inFlight += RangeAllocator.aligned(rec.pendingSize) * count(rec.pending, usable);
                        }
                    } else if (rec.offloadTask != 0) {
                        offloading += bytes;
                    } else if ((rec.flags & ObjectRecord.HARD_PIN) != 0) {
                        pinned += bytes;
                    } else if (rec.lease > now) {
                        leased += bytes;
                    } else {
                        evictable += bytes;
                    }
                }
            }
        }
        long parked = 0;
        for (Parking.Parked p : state.parking.parked()) {
            int seg = ObjectRecord.segment(p.replica());
            if (seg < usable.length && usable[seg]) {
                parked += RangeAllocator.aligned(p.size());
            }
        }
        return new Diagnosis(segments, capacity, free, largest, leased, pinned, inFlight, offloading, parked, evictable);
    }

    private static int count(long[] replicas, boolean[] usable) {
        int c = 0;
        for (long r : replicas) {
            int seg = ObjectRecord.segment(r);
            c += seg < usable.length && usable[seg] ? 1 : 0;
        }
        return c;
    }
}
