package org.tent4j.store.master;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.tent4j.store.SegmentSpec;
import org.tent4j.store.Tier;

/**
 * The master's state as bytes, at one point of the command stream, and back: restoring it and applying the entries
 * after that point gives the state the master had after them. Written under the ordering point. Carries what
 * applying later entries reads: the segment table (its free slots and number of indexes) with each allocator's free list and owner's incarnation, clients with their reservations
 * and marks, every shard's objects in walk order with the table size its map grew to, parked ranges, the id counters,
 * the last index and time, the last reclaim sweep, the offloads and repairs in flight, the repair walk's position, the counters, each client's recent request ids with their answers, and the group's client-credential key. Hot-key samples are a metric and are not kept.
 */
final class MasterSnapshot {
    private static final int MAGIC = 0x5434_4D53; // "T4MS"
    /**
     * 3: segments' tiers, disk replicas, offloads in flight and request-id windows ({@link RequestIds}); 4: a window
     * may hold a count (the answer of a removal by regex or of all), which a version 3 reader cannot read; 5: each
     * object's asked replica count, repair tasks among the offloads (a task's kind), the repair walk's position, and
     * the repair counters; 6: each disk segment's freed ranges its node has not yet confirmed (docs/STORE.md, "Disk
     * tier": restart); 7: each segment's owner incarnation, and the count of segments replaced by a restarted node's
     * mount; 8: free slots in the segment table (an index is reused) and the number of segment indexes; 9: the group's
     * client-credential key (a master that caught up from a snapshot lacked it); 10: each object's promotion window
     * start ({@code hitsSince}) and the count of write-through offloads (a write-through put in flight is a flag, and
     * its offload a task kind). Version 9 is still read: its objects' hits count as made at the snapshot's time, its
     * write-through count is zero; 11: the count of offloads to another node's disk (versions 9 and 10 are still
     * read, that count zero). No other version is read as another.
     */
    private static final int VERSION = 11;
    private static final int OLDEST_READ = 9;

    private MasterSnapshot() {
    }

    record Position(long lastIndex, long lastNow, long lastReclaimSweep) {
    }

    static byte[] write(MasterState s, Position at) {
        try {
            CodecStreams.Out bytes = new CodecStreams.Out(1 << 16);
            DataOutputStream out = new DataOutputStream(bytes);
            out.writeInt(MAGIC);
            out.writeInt(VERSION);
            out.writeLong(at.lastIndex());
            out.writeLong(at.lastNow());
            out.writeLong(at.lastReclaimSweep());
            out.writeLong(s.puts.lastPutId());
            out.writeLong(s.reservations.lastId());
            out.writeLong(s.clients.lastIndex());
            longs(out, s.counters.sums());
            out.writeInt(s.segments.indexLimit());
            MountedSegment[] table = s.segments.table();
            out.writeInt(table.length);
            for (MountedSegment seg : table) {
                // a free slot: the lowest is the index the next mount takes
                out.writeBoolean(seg != null);
                if (seg == null) {
                    continue;
                }
                out.writeUTF(seg.spec.id());
                out.writeUTF(seg.spec.engineSegment());
                out.writeUTF(seg.spec.host());
                out.writeLong(seg.spec.base());
                out.writeLong(seg.spec.size());
                out.writeByte(seg.spec.tier().ordinal());
                out.writeUTF(seg.spec.file());
                out.writeUTF(seg.owner);
                out.writeLong(seg.incarnation);
                out.writeBoolean(seg.mounted());
                TreeMap<Long, Long> free = seg.allocator.freeRanges();
                out.writeInt(free.size());
                for (Map.Entry<Long, Long> e : free.entrySet()) {
                    out.writeLong(e.getKey());
                    out.writeLong(e.getValue());
                }
                List<long[]> freed = seg.freedRanges();
                out.writeLong(seg.freedSeq());
                out.writeInt(freed.size());
                for (long[] f : freed) {
                    longs(out, f);
                }
            }
            List<Clients.ClientRecord> clients = new ArrayList<>(s.clients.all());
            out.writeInt(clients.size());
            for (Clients.ClientRecord c : clients) {
                out.writeUTF(c.id);
                out.writeInt(c.index);
                out.writeLong(c.lastSeen);
                List<MountedSegment> segs = new ArrayList<>(c.segments);
                out.writeInt(segs.size());
                for (MountedSegment seg : segs) {
                    out.writeInt(seg.index);
                }
                out.writeInt(c.reserved.size());
                for (Reservations.Reservation r : c.reserved) {
                    out.writeLong(r.id);
                    out.writeInt(r.seg.index);
                    out.writeLong(r.start);
                    out.writeLong(r.end);
                    out.writeLong(r.mark);
                    out.writeLong(r.lastUsed);
                }
            }
            ObjectTable.Shard[] shards = s.objects.shards();
            out.writeInt(shards.length);
            for (ObjectTable.Shard shard : shards) {
                out.writeInt(shard.peak);
                out.writeInt(shard.map.size());
                for (Map.Entry<String, ObjectRecord> e : shard.map.entrySet()) {
                    out.writeUTF(e.getKey());
                    object(out, e.getValue());
                }
            }
            List<Parking.Parked> parked = s.parking.parked();
            out.writeInt(parked.size());
            for (Parking.Parked p : parked) {
                out.writeLong(p.replica());
                out.writeLong(p.size());
                out.writeLong(p.releaseAt());
            }
            List<Map.Entry<Offloads.Task, Boolean>> offloads = s.offloads.snapshot();
            out.writeLong(s.offloads.lastTaskId());
            out.writeInt(offloads.size());
            for (Map.Entry<Offloads.Task, Boolean> e : offloads) {
                Offloads.Task t = e.getKey();
                out.writeLong(t.id());
                out.writeUTF(t.key());
                out.writeUTF(t.client());
                out.writeLong(t.source());
                out.writeLong(t.target());
                out.writeLong(t.size());
                out.writeLong(t.memoryBytes());
                out.writeLong(t.deadline());
                out.writeByte(t.kind());
                out.writeBoolean(e.getValue());
            }
            String cursor = s.repairs.cursor();
            out.writeBoolean(cursor != null);
            if (cursor != null) {
                out.writeUTF(cursor);
            }
            s.requestIds.write(out);
            byte[] key = s.credentialKey();
            out.writeBoolean(key != null);
            if (key != null) {
                out.write(key);
            }
            out.flush();
            return bytes.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Fills {@code s}, fresh from its constructor, from a snapshot; where the stream goes on from. */
    static Position read(MasterState s, byte[] snapshot) {
        try {
            DataInputStream in = new DataInputStream(new CodecStreams.In(snapshot));
            if (in.readInt() != MAGIC) {
                throw new IllegalArgumentException("not a master snapshot (bad magic)");
            }
            int version = in.readInt();
            if (version < OLDEST_READ || version > VERSION) {
                // each version added what an older one lacks (see VERSION): none is read as another
                throw new IllegalArgumentException("master snapshot version " + version + ", this master reads only "
                        + "versions " + OLDEST_READ + " to " + VERSION + " (a snapshot of " + (version < VERSION ? "an older" : "a newer")
                        + " release: start the master of that release, or remove the data dir to start empty)");
            }
            Position at = new Position(in.readLong(), in.readLong(), in.readLong());
            s.puts.restoreLastPutId(in.readLong());
            long lastReservation = in.readLong();
            long lastClient = in.readLong();
            long[] counters = longs(in);
            // versions 9 and 10 lack the counters appended since (MasterCounters): they start at zero
            s.counters.restore(version < VERSION && counters != null
                    ? Arrays.copyOf(counters, counters.length + VERSION - version) : counters);
            int oldHitsSince = (int) Math.floorDiv(at.lastNow(), 1_000_000L);
            int indexLimit = in.readInt();
            int slots = in.readInt();
            if (indexLimit < 1 || indexLimit > ObjectRecord.MAX_SEGMENTS || slots < 0 || slots > indexLimit) {
                throw new IllegalArgumentException("a segment table of " + slots + " slots over " + indexLimit
                        + " indexes (at most " + ObjectRecord.MAX_SEGMENTS + ")");
            }
            MountedSegment[] table = new MountedSegment[slots];
            for (int i = 0; i < table.length; i++) {
                if (!in.readBoolean()) {
                    continue;
                }
                String id = in.readUTF();
                String engine = in.readUTF();
                String host = in.readUTF();
                long base = in.readLong();
                long size = in.readLong();
                int tier = in.readUnsignedByte();
                if (tier >= Tier.values().length) {
                    throw new IllegalArgumentException("segment " + id + " of tier " + tier);
                }
                SegmentSpec spec = new SegmentSpec(id, engine, host, base, size, Tier.values()[tier], in.readUTF());
                String owner = in.readUTF();
                long incarnation = in.readLong();
                boolean mounted = in.readBoolean();
                TreeMap<Long, Long> free = new TreeMap<>();
                for (int n = in.readInt(); n > 0; n--) {
                    free.put(in.readLong(), in.readLong());
                }
                long freedSeq = in.readLong();
                List<long[]> freed = new ArrayList<>();
                for (int n = in.readInt(); n > 0; n--) {
                    freed.add(longs(in));
                }
                boolean disk = spec.tier() == Tier.DISK;
                MountedSegment seg = new MountedSegment(i, spec, owner, incarnation, s.segments.allocatedCounter(disk));
                seg.allocator.restore(free);
                seg.restoreFreed(freedSeq, freed);
                // counted as allocated like a fresh segment's allocations; an unmounted one takes its count back
                s.segments.allocatedCounter(disk).addAndGet(seg.allocator.used());
                if (!mounted) {
                    seg.markUnmounted();
                }
                table[i] = seg;
            }
            s.segments.restore(table, indexLimit);
            for (int n = in.readInt(); n > 0; n--) {
                Clients.ClientRecord c = new Clients.ClientRecord(in.readUTF(), in.readInt(), in.readLong());
                for (int k = in.readInt(); k > 0; k--) {
                    c.segments.add(slot(table, in.readInt()));
                }
                for (int k = in.readInt(); k > 0; k--) {
                    Reservations.Reservation r = new Reservations.Reservation(in.readLong(), c, slot(table, in.readInt()),
                            in.readLong(), in.readLong(), 0);
                    r.mark = in.readLong();
                    r.lastUsed = in.readLong();
                    c.reserved.add(r);
                    s.reservations.restore(r, lastReservation);
                }
                s.clients.restore(c, lastClient);
            }
            s.reservations.restore(null, lastReservation);
            s.clients.restore(null, lastClient);
            int shards = in.readInt();
            List<String> flagged = new ArrayList<>();
            if (shards != s.objects.shards().length) {
                throw new IllegalArgumentException("snapshot of a master with " + shards + " shards, this one has "
                        + s.objects.shards().length);
            }
            for (int i = 0; i < shards; i++) {
                int peak = in.readInt();
                ObjectTable.Shard shard = new ObjectTable.Shard(16, peak);
                shard = new ObjectTable.Shard(shard.capacity(), peak);
                for (int n = in.readInt(); n > 0; n--) {
                    String key = in.readUTF();
                    ObjectRecord rec = object(in, version, oldHitsSince);
                    shard.map.put(key, rec);
                    if ((rec.flags & ObjectRecord.UNDER_REPLICATED) != 0) {
                        flagged.add(key);
                    }
                }
                s.objects.restoreShard(i, shard);
            }
            for (int n = in.readInt(); n > 0; n--) {
                // not park(): that tells a disk segment's node to forget the range, which the snapshot's freed ranges hold
                s.parking.restoreParked(in.readLong(), in.readLong(), in.readLong());
            }
            long lastTask = in.readLong();
            for (int n = in.readInt(); n > 0; n--) {
                s.offloads.restore(new Offloads.Task(in.readLong(), in.readUTF(), in.readUTF(), in.readLong(), in.readLong(),
                        in.readLong(), in.readLong(), in.readLong(), kind(in)), in.readBoolean(), lastTask);
            }
            s.offloads.restore(null, false, lastTask);
            s.repairs.restore(in.readBoolean() ? in.readUTF() : null, flagged);
            s.requestIds.read(in);
            if (in.readBoolean()) {
                byte[] key = new byte[MasterState.CREDENTIAL_KEY_BYTES];
                in.readFully(key);
                s.adoptCredentialKey(key);
            }
            if (in.available() != 0) {
                throw new IllegalArgumentException(in.available() + " bytes after the end of the master snapshot");
            }
            return at;
        } catch (IOException e) {
            throw new IllegalArgumentException("master snapshot cut short or corrupt: " + e, e);
        }
    }

    /** The segment in slot {@code index} of a table being restored; a free or absent slot is a corrupt snapshot. */
    private static MountedSegment slot(MountedSegment[] table, int index) throws IOException {
        if (index < 0 || index >= table.length || table[index] == null) {
            throw new IOException("a reference to segment slot " + index + ", free or outside the table of " + table.length);
        }
        return table[index];
    }

    private static void object(DataOutputStream out, ObjectRecord r) throws IOException {
        out.writeLong(r.size);
        out.writeLong(r.pendingSize);
        out.writeLong(r.lease);
        out.writeLong(r.putStart);
        out.writeLong(r.pin);
        out.writeLong(r.putId);
        out.writeLong(r.replica0);
        longs(out, r.more);
        longs(out, r.pending);
        out.writeInt(r.owner);
        out.writeByte(r.state);
        out.writeByte(r.flags);
        out.writeLong(r.disk);
        out.writeLong(r.offloadTask);
        out.writeInt(r.crc);
        out.writeByte(r.hits);
        out.writeInt(r.hitsSince);
        out.writeByte(r.asked);
        out.writeByte(r.pendingAsked);
    }

    /** A record as written; a version 9 one has no window start ({@code hitsSince}): {@code oldHitsSince} stands in. */
    private static ObjectRecord object(DataInputStream in, int version, int oldHitsSince) throws IOException {
        ObjectRecord r = new ObjectRecord();
        r.size = in.readLong();
        r.pendingSize = in.readLong();
        r.lease = in.readLong();
        r.putStart = in.readLong();
        r.pin = in.readLong();
        r.putId = in.readLong();
        r.replica0 = in.readLong();
        r.more = longs(in);
        r.pending = longs(in);
        r.owner = in.readInt();
        r.state = in.readByte();
        r.flags = in.readByte();
        r.disk = in.readLong();
        r.offloadTask = in.readLong();
        r.crc = in.readInt();
        r.hits = in.readByte();
        r.hitsSince = version == 9 ? oldHitsSince : in.readInt();
        r.asked = in.readByte();
        r.pendingAsked = in.readByte();
        return r;
    }

    private static byte kind(DataInputStream in) throws IOException {
        byte kind = in.readByte();
        if (kind != Offloads.OFFLOAD && kind != Offloads.PROMOTE && kind != Offloads.REPAIR && kind != Offloads.WRITE_THROUGH) {
            throw new IOException("offload task of kind " + kind);
        }
        return kind;
    }

    /** An array as its length (-1: null) and values. */
    private static void longs(DataOutputStream out, long[] values) throws IOException {
        out.writeInt(values == null ? -1 : values.length);
        if (values != null) {
            for (long v : values) {
                out.writeLong(v);
            }
        }
    }

    private static long[] longs(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < -1 || n > 1 << 20) {
            throw new IOException("array of " + n + " longs");
        }
        if (n == -1) {
            return null;
        }
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            out[i] = in.readLong();
        }
        return out;
    }
}
