package org.tent4j.store.master;

import java.util.BitSet;
import java.util.function.LongConsumer;

/**
 * Frees segment indexes ({@link SegmentIndexes}): the index of an unmounted segment goes back to the table once no
 * packed reference names it. The holders of packed references, all of them, each walked here:
 *
 * <ul>
 *   <li>objects: memory replicas (a put in flight's included), an upsert's pending replicas, the disk replica;</li>
 *   <li>parked ranges ({@link Eviction#references});</li>
 *   <li>offload, promotion and repair tasks in flight: source and target ({@link Offloads#references});</li>
 *   <li>reservations, by their segment ({@link Reservations#references}).</li>
 * </ul>
 *
 * Everything else names a segment by its id or holds the {@link MountedSegment} itself (a client's segments, the
 * mounted ones by id), and lets go of it when it is dropped. A drop erases the replicas on the segment and forgets
 * its parked ranges, so after a drop only a reservation (until released) or a task (until it ends) still names it;
 * {@link Segments#drop} sweeps at once and the tick's reclaim sweep again for those. O(objects) a sweep, as a drop's
 * own pass over the objects is; on the applying thread, so a replay frees the same indexes at the same entry.
 */
final class IndexSweep {
    private IndexSweep() {
    }

    static void reclaim(MasterState state, SegmentIndexes indexes) {
        BitSet retired = indexes.retired();
        if (retired.isEmpty()) {
            return;
        }
        BitSet named = new BitSet();
        LongConsumer name = r -> {
            int i = ObjectRecord.segment(r);
            if (retired.get(i)) {
                named.set(i);
            }
        };
        objects(state, name);
        state.parking.references(name);
        state.offloads.references(name);
        state.reservations.references(name);
        retired.andNot(named);
        indexes.free(retired);
    }

    private static void objects(MasterState state, LongConsumer name) {
        for (ObjectTable.Shard shard : state.objects.shards()) {
            synchronized (shard) {
                for (ObjectRecord rec : shard.map.values()) {
                    if (rec.replica0 != -1) {
                        name.accept(rec.replica0);
                    }
                    names(rec.more, name);
                    names(rec.pending, name);
                    if (rec.disk != -1) {
                        name.accept(rec.disk);
                    }
                }
            }
        }
    }

    private static void names(long[] replicas, LongConsumer name) {
        if (replicas != null) {
            for (long r : replicas) {
                name.accept(r);
            }
        }
    }
}
