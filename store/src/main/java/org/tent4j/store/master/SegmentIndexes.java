package org.tent4j.store.master;

import java.util.Arrays;
import java.util.BitSet;

import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * The segment table: index -> segment, the index every packed reference ({@link ObjectRecord#pack}) names. Indexes
 * are reused, so a master whose nodes mount, unmount and restart for ever never runs out of them; but an index is
 * reused only once nothing can reach the old segment through it, since an old reference reaching the new segment
 * would serve (or free) the new segment's bytes for an object that never lived there. Each slot is
 *
 * <ul>
 *   <li>live: a mounted segment;</li>
 *   <li>retired: an unmounted segment that some packed reference may still name (a reservation, a parked range, a
 *   task in flight); its record stays, unmounted, so such a reference finds nothing to allocate, free or serve;</li>
 *   <li>free: null, its record dropped; set only by {@link IndexSweep}, after a sweep over every holder of
 *   packed references (objects, parked ranges, offload/promotion/repair tasks, reservations) found none naming it.
 *   No new reference to an unmounted segment is ever made (a range is allocated, parked or committed only on a
 *   mounted one), so none can appear after the sweep.</li>
 * </ul>
 *
 * A mount takes the lowest free index, else the next new one below the limit. Which slots are free is the table
 * itself (its null slots), so a snapshot of the table carries the choice the next mount makes. Written on the
 * applying thread; read by anyone (the table is copy-on-write).
 */
final class SegmentIndexes {
    private volatile MountedSegment[] table = new MountedSegment[0];
    /** Guarded by this: the null slots of {@link #table}. */
    private final BitSet free = new BitSet();
    /** Guarded by this: the slots of unmounted segments not yet free. */
    private final BitSet retired = new BitSet();
    /** Indexes handed out at most, in [1, {@link ObjectRecord#MAX_SEGMENTS}]: what the packing holds, or fewer (tests). */
    private int limit;

    SegmentIndexes(int limit) {
        this.limit = checkedLimit(limit);
    }

    private static int checkedLimit(int limit) {
        if (limit < 1 || limit > ObjectRecord.MAX_SEGMENTS) {
            throw new IllegalArgumentException("segment indexes must be in [1, " + ObjectRecord.MAX_SEGMENTS + "]: " + limit);
        }
        return limit;
    }

    /** The slots, by index: live and retired segments, null where free. */
    MountedSegment[] table() {
        return table;
    }

    MountedSegment at(int index) {
        MountedSegment seg = table[index];
        if (seg == null) {
            // the sweep found nothing naming it when it freed it: a reference made since is a bug, never a lookup
            throw new IllegalStateException("segment index " + index + " is free: a packed reference outlived its segment");
        }
        return seg;
    }

    synchronized int limit() {
        return limit;
    }

    /** Unmounted segments whose index is not free yet. */
    synchronized int retiredCount() {
        return retired.cardinality();
    }

    synchronized BitSet retired() {
        return (BitSet) retired.clone();
    }

    /** Refuses, changing nothing, a mount of {@code segmentId} when no index is left; {@code mounted}: segments now. */
    synchronized void checkRoom(String segmentId, int mounted) {
        if (free.isEmpty() && table.length >= limit) {
            throw new StoreException(StoreError.UNAVAILABLE_IN_CURRENT_STATUS, "segment " + segmentId
                    + " is refused: all " + limit + " segment indexes of this master are taken (" + mounted
                    + " segments mounted, " + retired.cardinality() + " unmounted ones still named by a reservation or "
                    + "a task in flight; those indexes come free at the tick's reclaim sweep after these end, at most "
                    + "the put release timeout for an unused reservation)");
        }
    }

    /** The index the next mount takes: the lowest free one, else a new one ({@link #checkRoom} said there is one). */
    synchronized int next() {
        int index = free.nextSetBit(0);
        return index >= 0 ? index : table.length;
    }

    /** Puts a new segment in its slot ({@link #next}). */
    synchronized void install(MountedSegment seg) {
        MountedSegment[] t = seg.index < table.length ? table.clone() : Arrays.copyOf(table, seg.index + 1);
        if (t[seg.index] != null || seg.index >= limit) {
            throw new IllegalStateException("segment index " + seg.index + " is not free");
        }
        t[seg.index] = seg;
        free.clear(seg.index);
        table = t;
    }

    /** An unmounted segment: its index waits for a sweep to find nothing naming it. */
    synchronized void retire(MountedSegment seg) {
        retired.set(seg.index);
    }

    /** Frees the retired indexes in {@code unreferenced} (a sweep found no reference to them), dropping their records. */
    synchronized void free(BitSet unreferenced) {
        if (unreferenced.isEmpty()) {
            return;
        }
        MountedSegment[] t = table.clone();
        for (int i = unreferenced.nextSetBit(0); i >= 0; i = unreferenced.nextSetBit(i + 1)) {
            if (!retired.get(i) || t[i].mounted()) {
                throw new IllegalStateException("segment index " + i + " is not retired");
            }
            t[i] = null;
            retired.clear(i);
            free.set(i);
        }
        table = t;
    }

    /** Installs a restored table (a restore, before the first command): null slots are free, unmounted ones retired. */
    synchronized void restore(MountedSegment[] restored, int restoredLimit) {
        limit = checkedLimit(restoredLimit);
        if (restored.length > limit) {
            throw new IllegalArgumentException("a segment table of " + restored.length + " slots over a limit of " + limit);
        }
        free.clear();
        retired.clear();
        for (int i = 0; i < restored.length; i++) {
            if (restored[i] == null) {
                free.set(i);
            } else if (!restored[i].mounted()) {
                retired.set(i);
            }
        }
        table = restored;
    }
}
