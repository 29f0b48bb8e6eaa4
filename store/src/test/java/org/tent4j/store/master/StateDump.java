package org.tent4j.store.master;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Every piece of a {@link MasterState}, written out in a canonical order: two states are the same state when their
 * dumps are equal. Objects (key, size, state, flags, lease, pin, put start, put id, owner, replicas, an upsert's
 * pending replicas, disk replica, CRC, offload and asked replicas), the offloads and repairs in flight, the repair walk's position, the segment table's free slots, every segment's owner, incarnation and allocator (used bytes and free list), clients (index, last heard, segments,
 * reservations with their marks), parked ranges, the id counters, the log position and the counters.
 */
final class StateDump {
    private StateDump() {
    }

    static List<String> of(MasterState s) {
        List<String> out = new ArrayList<>();
        out.add("applied " + s.lastApplied() + " putIds " + s.puts.lastPutId() + " reservationIds " + s.reservations.lastId());
        out.add("segment indexes " + s.segments.indexLimit() + " retired " + s.segments.retiredCount());
        MountedSegment[] table = s.segments.table();
        for (int i = 0; i < table.length; i++) {
            MountedSegment seg = table[i];
            if (seg == null) {
                out.add("segment " + i + " free");
                continue;
            }
            out.add("segment " + seg.index + " " + seg.spec + " owner " + seg.owner + " incarnation " + seg.incarnation
                    + " mounted " + seg.mounted()
                    + " used " + seg.allocator.used() + " free " + seg.allocator.freeRanges() + " freed " + seg.freedSeq() + " "
                    + seg.freedRanges().stream().map(java.util.Arrays::toString).toList());
        }
        TreeMap<String, String> objects = new TreeMap<>();
        for (ObjectTable.Shard shard : s.objects.shards()) {
            synchronized (shard) {
                for (Map.Entry<String, ObjectRecord> e : shard.map.entrySet()) {
                    ObjectRecord r = e.getValue();
                    objects.put(e.getKey(), "size " + r.size + " state " + r.state + " flags " + r.flags + " lease " + r.lease
                            + " pin " + r.pin + " putStart " + r.putStart + " putId " + r.putId + " owner " + r.owner
                            + " replicas " + Arrays.toString(r.replicas()) + " pending " + Arrays.toString(r.pending)
                            + " pendingSize " + r.pendingSize + " disk " + r.disk + " crc " + r.crc
                            + " offloadTask " + r.offloadTask + " hits " + r.hits + " since " + r.hitsSince + " asked " + r.asked + "/" + r.pendingAsked);
                }
            }
        }
        objects.forEach((k, v) -> out.add("object " + k + " " + v));
        out.addAll(s.requestIds.describe());
        TreeMap<String, String> clients = new TreeMap<>();
        for (Clients.ClientRecord c : s.clients.all()) {
            List<String> segs = c.segments.stream().map(m -> m.spec.id()).sorted().toList();
            List<String> res = new ArrayList<>();
            synchronized (c.reserved) {
                for (Reservations.Reservation r : c.reserved) {
                    res.add(r.id + "@" + r.seg.index + "[" + r.start + "," + r.mark + "," + r.end + ") used " + r.lastUsed
                            + (r.released ? " released" : ""));
                }
            }
            clients.put(c.id, "index " + c.index + " lastSeen " + c.lastSeen + " segments " + segs + " reservations " + res);
        }
        clients.forEach((k, v) -> out.add("client " + k + " " + v));
        s.parking.parked().stream()
                .map(p -> "parked " + ObjectRecord.segment(p.replica()) + ":" + ObjectRecord.offset(p.replica()) + " size "
                        + p.size() + " until " + p.releaseAt())
                .sorted().forEach(out::add);
        s.offloads.snapshot().forEach(e -> out.add("offload " + e.getKey() + " waiting " + e.getValue()));
        out.add("offloadIds " + s.offloads.lastTaskId() + " offloading " + s.offloads.memoryBytesInFlight());
        out.add("repairs cursor " + s.repairs.cursor() + " under " + s.repairs.underReplicated() + " in flight "
                + s.offloads.repairsInFlight());
        MasterState.Stats st = s.stats();
        out.add("stats " + st);
        return out;
    }
}
