package org.tent4j.store.master;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;

import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command.CommitResult;
import org.tent4j.store.master.Command.Grant;

/**
 * Reservations and commits: space granted to a client not tied to keys, and the one-call commit of values written into
 * it. A reservation's marks are guarded by its owner's {@code reserved} list.
 */
final class Reservations {
    private final MasterState state;
    private final MasterConfig config;
    private final MasterCounters counters;
    /** Reservations by id, of every client: a commit naming another client's id is told whose it is. */
    private final ConcurrentHashMap<Long, Reservation> byId = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();

    Reservations(MasterState state) {
        this.state = state;
        this.config = state.config();
        this.counters = state.counters;
    }

    /** The last reservation id handed out. */
    long lastId() {
        return ids.get();
    }

    /** Puts back a reservation of a snapshot (its owner's list holds it already; null: none), and the id counter. */
    void restore(Reservation r, long lastId) {
        if (r != null) {
            byId.put(r.id, r);
        }
        ids.set(lastId);
    }

    CommitResult commit(long now, Command.Commit c) {
        if (c.items().size() > MasterState.MAX_COMMIT_ITEMS || c.retire().size() > MasterState.MAX_RESERVATIONS_PER_CLIENT) {
            throw new StoreException(StoreError.INVALID_PARAMS, "a commit carries at most " + MasterState.MAX_COMMIT_ITEMS
                    + " items and retires at most " + MasterState.MAX_RESERVATIONS_PER_CLIENT + " reservations: "
                    + c.items().size() + " items, " + c.retire().size() + " retired");
        }
        if (c.clientId() == null || c.clientId().isEmpty()) {
            throw new StoreException(StoreError.INVALID_PARAMS, "client id is empty");
        }
        Clients.ClientRecord client = state.clients.seen(c.clientId(), now);
        StoreException[] failures = new StoreException[c.items().size()];
        for (int i = 0; i < failures.length; i++) {
            try {
                commitItem(now, client, c.items().get(i));
            } catch (StoreException e) {
                failures[i] = e;
            }
        }
        for (long id : c.retire()) {
            Reservation r = byId.get(id);
            if (r != null && r.owner == client) {
                synchronized (client.reserved) {
                    release(r, Long.MIN_VALUE);
                }
            }
        }
        List<Grant> granted = List.of();
        StoreException refillFailure = null;
        if (c.refill() != null) {
            try {
                granted = reserve(now, client, c.refill(), c.seed());
            } catch (StoreException e) {
                // the items are committed whatever happens to the refill: the answer must still say so
                refillFailure = e;
            }
        }
        return new CommitResult(failures, granted, refillFailure);
    }

    /** The bytes an item names in a reservation's segment, for a refusal (built only then: commits are hot). */
    private static String range(Reservation r, long off, long len) {
        return "[" + off + ", " + (off + len) + ") of segment " + r.seg.spec.id();
    }

    private void commitItem(long now, Clients.ClientRecord client, Command.CommitItem item) {
        String key = item.key();
        state.objects.checkKey(key);
        if (item.size() <= 0 || item.size() > MasterState.MAX_RESERVATION_BYTES) {
            throw new StoreException(StoreError.INVALID_PARAMS, "size of key '" + key + "' must be in [1, "
                    + MasterState.MAX_RESERVATION_BYTES + "] to commit into a reservation: " + item.size());
        }
        int n = item.reservations().length;
        if (n == 0 || n != item.addresses().length || n > config.maxReplicas()) {
            throw new StoreException(StoreError.INVALID_PARAMS, "key '" + key + "' names " + n + " reservations and "
                    + item.addresses().length + " addresses; both must be the replica count, in [1, " + config.maxReplicas() + "]");
        }
        long len = RangeAllocator.aligned(item.size());
        Reservation[] rs = new Reservation[n];
        for (int j = 0; j < n; j++) {
            Reservation r = byId.get(item.reservations()[j]);
            if (r == null) {
                throw new StoreException(StoreError.INVALID_WRITE, "key '" + key + "': reservation " + item.reservations()[j]
                        + " (address " + item.addresses()[j] + ") is not held by client " + client.id
                        + " (released, expired or never granted)");
            }
            if (r.owner != client) {
                throw new StoreException(StoreError.ILLEGAL_CLIENT, "key '" + key + "': reservation " + r.id + " on segment "
                        + r.seg.spec.id() + " (offset " + (item.addresses()[j] - r.seg.spec.base()) + ") belongs to client "
                        + r.owner.id + ", not " + client.id);
            }
            for (int k = 0; k < j; k++) {
                if (rs[k].seg == r.seg) {
                    throw new StoreException(StoreError.INVALID_PARAMS, "key '" + key + "': two replicas on segment " + r.seg.spec.id());
                }
            }
            rs[j] = r;
        }
        ObjectTable.Shard shard = state.objects.shard(key);
        synchronized (shard) {
            ObjectRecord rec = shard.map.get(key);
            boolean takeOver = state.puts.checkWritable(rec, key, now, false);
            long[] placed = new long[n];
            synchronized (client.reserved) {
                for (int j = 0; j < n; j++) {
                    Reservation r = rs[j];
                    long off = item.addresses()[j] - r.seg.spec.base();
                    if (r.released) {
                        throw new StoreException(StoreError.INVALID_WRITE, "key '" + key + "': reservation " + r.id
                                + " on segment " + r.seg.spec.id() + " (offset " + off + ") was released");
                    }
                    if ((off & (RangeAllocator.ALIGNMENT - 1)) != 0 || off < r.start || off + len > r.end || off + len < off) {
                        throw new StoreException(StoreError.INVALID_WRITE, "key '" + key + "': " + range(r, off, len) + " (offset " + off
                                + ") is not a " + RangeAllocator.ALIGNMENT + "-byte aligned range inside client " + client.id
                                + "'s reservation " + r.id + " [" + r.start + ", " + r.end + ")");
                    }
                    if (off < r.mark) {
                        throw new StoreException(StoreError.INVALID_WRITE, "key '" + key + "': " + range(r, off, len) + " (offset " + off
                                + ") overlaps bytes committed earlier (reservation " + r.id + " is committed up to " + r.mark + ")");
                    }
                    if (!r.seg.mounted()) {
                        throw new StoreException(StoreError.SEGMENT_NOT_FOUND, "key '" + key + "': segment " + r.seg.spec.id()
                                + " (offset " + off + ") was unmounted");
                    }
                    placed[j] = ObjectRecord.pack(r.seg.index, off);
                }
                for (int j = 0; j < n; j++) {
                    Reservation r = rs[j];
                    long off = ObjectRecord.offset(placed[j]);
                    // bytes skipped over (an item refused earlier) go back now: the writer never commits below its mark
                    if (off > r.mark) {
                        r.seg.free(r.mark, off - r.mark);
                    }
                    r.mark = off + len;
                    r.lastUsed = now;
                }
            }
            if (takeOver) {
                state.puts.takeOver(shard, key, rec);
            }
            rec = new ObjectRecord();
            rec.state = ObjectRecord.COMPLETE;
            rec.size = item.size();
            rec.setReplicas(placed);
            rec.asked = (byte) n; // every replica was written: a commit is never short of what it asked
            rec.putStart = now;
            rec.putId = state.puts.nextPutId();
            rec.owner = client.index;
            rec.lease = now;
            shard.put(key, rec);
            counters.objects.increment();
            counters.objectBytes.add(item.size());
            counters.objectsCommitted.increment();
            if (config.writeThrough()) {
                // a commit carries no choice of its own (a put naming one takes the two-call path): the master's default
                state.offloads.writeThrough(now, key, rec);
            }
        }
    }

    /** Grants {@code r.bytes()} on each of {@code r.replicas()} distinct segments, or nothing if not all have room. */
    private List<Grant> reserve(long now, Clients.ClientRecord client, Command.Reserve r, long seed) {
        if (r.bytes() <= 0 || r.bytes() > MasterState.MAX_RESERVATION_BYTES || r.replicas() < 1 || r.replicas() > config.maxReplicas()) {
            throw new StoreException(StoreError.INVALID_PARAMS, "a reservation is [1, " + MasterState.MAX_RESERVATION_BYTES
                    + "] bytes on [1, " + config.maxReplicas() + "] segments: " + r.bytes() + " bytes on " + r.replicas());
        }
        checkCount(client, r.replicas());
        Command.PutStart shape = new Command.PutStart(client.id, "", r.bytes(), ReplicateConfig.replicas(r.replicas()),
                r.writerHost(), false, seed);
        // no eviction here when it does not fit: this runs on an event loop, so the evictor is woken instead (it frees
        // runs of neighbours a later reservation fits in) and the client takes the two-call path meanwhile
        long[] placed = state.segments.placeAll(shape);
        if (placed == null) {
            state.segments.wantEviction();
            return List.of();
        }
        long len = RangeAllocator.aligned(r.bytes());
        synchronized (client.reserved) {
            try {
                checkCount(client, r.replicas());
            } catch (StoreException e) {
                state.segments.free(placed, r.bytes());
                throw e;
            }
            List<Grant> out = new ArrayList<>(placed.length);
            for (long p : placed) {
                MountedSegment seg = state.segments.at(ObjectRecord.segment(p));
                long off = ObjectRecord.offset(p);
                Reservation res = new Reservation(ids.incrementAndGet(), client, seg, off, off + len, now);
                byId.put(res.id, res);
                client.reserved.add(res);
                counters.reservationsGranted.increment();
                out.add(new Grant(res.id, new ReplicaLocation(seg.spec.id(), seg.spec.engineSegment(), seg.spec.host(),
                        seg.spec.base() + off, len)));
            }
            return out;
        }
    }

    private static void checkCount(Clients.ClientRecord client, int more) {
        synchronized (client.reserved) {
            if (client.reserved.size() + more > MasterState.MAX_RESERVATIONS_PER_CLIENT) {
                throw new StoreException(StoreError.INVALID_PARAMS, "client " + client.id + " holds " + client.reserved.size()
                        + " reservations; at most " + MasterState.MAX_RESERVATIONS_PER_CLIENT);
            }
        }
    }

    /**
     * Gives back what was never committed; the uncommitted rest waits until {@code parkUntil} before it can be handed
     * out again (unless that is {@code Long.MIN_VALUE}): a client that went silent may still be writing into it. The
     * caller holds {@code r.owner.reserved}.
     */
    private void release(Reservation r, long parkUntil) {
        if (r.released) {
            return;
        }
        r.released = true;
        if (r.end > r.mark && parkUntil != Long.MIN_VALUE) {
            state.parking.park(new long[] {ObjectRecord.pack(r.seg.index, r.mark)}, r.end - r.mark, parkUntil);
        } else if (r.end > r.mark) {
            r.seg.free(r.mark, r.end - r.mark);
        }
        r.mark = r.end;
        byId.remove(r.id);
        r.owner.reserved.remove(r);
        counters.reservationsReleased.increment();
    }

    /** Releases the client's reservations unused since {@code unusedSince}, their rest parked until {@code parkUntil}. */
    void releaseAll(Clients.ClientRecord client, long unusedSince, long parkUntil) {
        synchronized (client.reserved) {
            for (Reservation r : new ArrayList<>(client.reserved)) {
                if (r.lastUsed <= unusedSince) {
                    release(r, parkUntil);
                }
            }
        }
    }

    /**
     * Hands each live reservation's segment to {@code packed} ({@link IndexSweep}: the segment indexes still named): a
     * reservation on an unmounted segment keeps its index until it is released, since its commit and release pack that
     * index (both find the segment unmounted: the commit is refused, the release parks nothing).
     */
    void references(LongConsumer packed) {
        for (Reservation r : byId.values()) {
            packed.accept(ObjectRecord.pack(r.seg.index, 0));
        }
    }

    /** Space granted to a client; {@code [start, mark)} is committed or given back, {@code [mark, end)} still held. */
    static final class Reservation {
        final long id;
        final Clients.ClientRecord owner;
        final MountedSegment seg;
        final long start;
        final long end;
        /** The rest guarded by {@code owner.reserved}. */
        long mark;
        long lastUsed;
        boolean released;

        Reservation(long id, Clients.ClientRecord owner, MountedSegment seg, long start, long end, long now) {
            this.id = id;
            this.owner = owner;
            this.seg = seg;
            this.start = start;
            this.end = end;
            this.mark = start;
            this.lastUsed = now;
        }
    }
}
