package org.tent4j.store.master;

import java.util.ArrayList;
import java.util.List;

import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command.Adopted;

/**
 * A restarted node's disk index, reported after it mounted its disk segment again ({@link Command.AdoptDiskReplicas}).
 * An object is the one the node offloaded when its put id and size match: the key may have kept it (the node came
 * back before the master dropped its old segment, or it is still in memory) or lost it (the old segment went with its
 * client, taking the disk-only objects). Either way the reported range is taken in the new segment and the object gets
 * it as its disk replica. A key now holding another object (removed and put again, upserted), a range not free or not
 * on the segment, or an object still being written is refused: the range stays free and the node forgets it. Only the
 * command and the state decide, so a replay adopts the same.
 */
final class DiskAdoption {
    private final MasterState state;

    DiskAdoption(MasterState state) {
        this.state = state;
    }

    /** The offsets refused, in the order reported. */
    List<Long> adopt(long now, Command.AdoptDiskReplicas c) {
        MountedSegment seg = state.objects.ownDisk(c.clientId(), c.segmentId());
        List<Long> refused = new ArrayList<>();
        for (Adopted r : c.replicas()) {
            if (!adoptOne(now, seg, r)) {
                refused.add(r.offset());
            }
        }
        return refused;
    }

    private boolean adoptOne(long now, MountedSegment seg, Adopted r) {
        if (r.size() <= 0 || r.putId() <= 0 || r.offset() % MountedSegment.DISK_ALIGNMENT != 0) {
            return false;
        }
        try {
            state.objects.checkKey(r.key());
        } catch (StoreException e) {
            return false;
        }
        ObjectTable.Shard shard = state.objects.shard(r.key());
        synchronized (shard) {
            ObjectRecord rec = shard.map.get(r.key());
            boolean same = rec != null && rec.putId == r.putId() && rec.size == r.size()
                    && rec.state == ObjectRecord.COMPLETE && (rec.flags & ObjectRecord.UPSERTING) == 0;
            if (rec != null && !same) {
                return false;
            }
            if (rec != null && rec.disk == ObjectRecord.pack(seg.index, r.offset())) {
                return true; // reported twice
            }
            if (!seg.allocateAt(r.offset(), r.size())) {
                return false;
            }
            long replica = ObjectRecord.pack(seg.index, r.offset());
            if (rec == null) {
                rec = new ObjectRecord();
                rec.state = ObjectRecord.COMPLETE;
                rec.size = r.size();
                rec.putId = r.putId();
                rec.owner = -1;
                rec.setReplicas(new long[0]);
                shard.put(r.key(), rec);
                state.counters.objects.increment();
                state.counters.objectBytes.add(r.size());
                // put ids name objects: one handed out later must not name this one
                state.puts.atLeast(r.putId());
            } else {
                // an offload or promotion in flight, or a disk replica on the old segment: this copy replaces them
                state.offloads.cancel(rec);
                if (rec.disk != -1) {
                    long[] old = {rec.disk};
                    if (rec.lease > now) {
                        state.parking.park(old, rec.size, rec.lease);
                    } else {
                        state.segments.free(old, rec.size);
                    }
                }
                rec.flags &= (byte) ~ObjectRecord.OFFLOAD_FAILED;
            }
            rec.disk = replica;
            rec.crc = (int) r.crc32c();
            rec.hits = 0;
            return true;
        }
    }
}
