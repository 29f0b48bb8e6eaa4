package org.tent4j.store.master;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A restarted node's new memory where old writers may still land: when a mount drops the segments of a process that is
 * gone ({@link Segments#mount}), the ranges of the new segment that a writer unaware of the restart may still write
 * are kept from new objects for the put release timeout.
 */
final class Quarantine {
    private Quarantine() {
    }

    /**
     * Parks, in {@code seg}'s new memory, every range of the {@code gone} segments it overlaps that a live writer may
     * still write into: a put in flight ({@code writing}) and the uncommitted rest of any client's reservation. A
     * writer that has not heard of the restart writes its old addresses, which are now the new process's memory; parked
     * for the put release timeout, as an abandoned put's space is, no new object is placed where such a write lands.
     */
    static void park(MasterState state, long now, MountedSegment seg, List<MountedSegment> gone, List<long[]> writing) {
        List<long[]> ranges = new ArrayList<>(writing); // {address, length} in the engine segment's address space
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
        long releaseAt = now + state.config().putReleaseTimeout().toNanos();
        long start = -1;
        long end = -1;
        for (Map.Entry<Long, Long> run : runs.entrySet()) {
            if (run.getKey() > end) {
                take(state, seg, start, end, releaseAt);
                start = run.getKey();
            }
            end = Math.max(end, run.getValue());
        }
        take(state, seg, start, end, releaseAt);
    }

    private static void take(MasterState state, MountedSegment seg, long start, long end, long releaseAt) {
        if (start >= 0 && start < end) {
            seg.take(start, end - start);
            state.parking.park(new long[] {ObjectRecord.pack(seg.index, start)}, end - start, releaseAt);
        }
    }
}
