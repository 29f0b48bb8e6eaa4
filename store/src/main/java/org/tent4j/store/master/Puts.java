package org.tent4j.store.master;

import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command.PutTicket;

/**
 * Puts: the two-call write (start, end or revoke), upserts beside a readable version, and taking over a put its writer
 * abandoned. The put ids are handed out here (commits into reservations draw from them too).
 */
final class Puts {
    private final MasterState state;
    private final MasterConfig config;
    private final MasterCounters counters;
    private final AtomicLong putIds = new AtomicLong();

    Puts(MasterState state) {
        this.state = state;
        this.config = state.config();
        this.counters = state.counters;
    }

    long nextPutId() {
        return putIds.incrementAndGet();
    }

    /** The last put id handed out. */
    long lastPutId() {
        return putIds.get();
    }

    /** Keeps later put ids above {@code id} (an adopted disk replica's object). */
    void atLeast(long id) {
        putIds.accumulateAndGet(id, Math::max);
    }

    void restoreLastPutId(long id) {
        putIds.set(id);
    }

    PutTicket start(long now, Command.PutStart c) {
        state.objects.checkKey(c.key());
        ReplicateConfig cfg = c.config();
        if (c.size() <= 0) {
            throw new StoreException(StoreError.INVALID_PARAMS, "size of key '" + c.key() + "' must be > 0: " + c.size());
        }
        if (cfg.replicas() < 1 || cfg.replicas() > config.maxReplicas()) {
            throw new StoreException(StoreError.INVALID_PARAMS, "replica count for key '" + c.key() + "' must be in [1, "
                    + config.maxReplicas() + "]: " + cfg.replicas());
        }
        if (cfg.excludedSegments().size() > 1024 || cfg.preferredSegments().size() > 1024) {
            throw new StoreException(StoreError.INVALID_PARAMS, "at most 1024 preferred and 1024 excluded segments per put");
        }
        if (cfg.softPinTtl() != null && (cfg.softPinTtl().isNegative() || cfg.softPinTtl().compareTo(config.maxSoftPinTtl()) > 0)) {
            throw new StoreException(StoreError.INVALID_PARAMS, "soft pin TTL for key '" + c.key() + "' must be in [0, "
                    + config.maxSoftPinTtl() + "]: " + cfg.softPinTtl());
        }
        Clients.ClientRecord client = state.clients.seen(c.clientId(), now);
        MountedSegment[] candidates = state.segments.active();
        if (candidates.length == 0) {
            counters.allocationFailures.increment();
            throw new StoreException(StoreError.NO_AVAILABLE_HANDLE, "no segment is mounted to hold key '" + c.key() + "'");
        }
        long largest = 0;
        for (MountedSegment s : candidates) {
            largest = Math.max(largest, s.allocator.capacity());
        }
        if (RangeAllocator.aligned(c.size()) > largest) {
            throw new StoreException(StoreError.OBJECT_TOO_LARGE, "key '" + c.key() + "' of " + c.size()
                    + " bytes is larger than the largest mounted segment (" + largest + " bytes)");
        }
        PutTicket ticket = tryStart(now, c, client);
        if (ticket == null) {
            ticket = startAfterEviction(now, c, client);
        }
        return ticket;
    }

    /**
     * No segment has the contiguous bytes the put asks for. When an offload in flight will free a range large enough,
     * the put is refused as transient at once: the client asks again, and room being made is not made twice (each
     * put asking again would otherwise offload others, and a flood would empty memory). Else the cheap step: up to
     * {@link MasterState#MAX_INLINE_EVICTIONS} objects each large enough alone (sampled, bounded; the first offload
     * started ends it); then the cheapest window of free, being-offloaded and evictable bytes on a segment the put may
     * use ({@link ContiguousRoom}, a pass over the objects). Refused only when neither finds room, with where the bytes
     * are.
     */
    private PutTicket startAfterEviction(long now, Command.PutStart c, Clients.ClientRecord client) {
        state.segments.wantEviction();
        long need = RangeAllocator.aligned(c.size());
        boolean[] usable = usableSegments(c);
        ContiguousRoom room = new ContiguousRoom(state);
        Offloads.Task awaited = room.beingMade(need, usable);
        if (awaited != null) {
            throw waitForOffloads(now, c.key(), need, awaited);
        }
        SplittableRandom rnd = new SplittableRandom(c.seed() ^ 0x5DEECE66DL);
        PutTicket ticket = null;
        ContiguousRoom.Outcome made = ContiguousRoom.Outcome.NONE;
        for (int i = 0; i < MasterState.MAX_INLINE_EVICTIONS && ticket == null; i++) {
            made = state.eviction.evictLargeEnough(now, need, usable, rnd);
            if (made != ContiguousRoom.Outcome.FREED) {
                break;
            }
            ticket = tryStart(now, c, client);
        }
        if (made == ContiguousRoom.Outcome.OFFLOADING) {
            throw waitForOffloads(now, c.key(), need, null);
        }
        if (ticket == null) {
            made = room.makeRoom(now, need, usable);
            if (made == ContiguousRoom.Outcome.FREED) {
                ticket = tryStart(now, c, client);
            }
        }
        if (ticket == null) {
            counters.allocationFailures.increment();
            ContiguousRoom.Diagnosis why = room.diagnose(now, usable);
            String retry = made == ContiguousRoom.Outcome.OFFLOADING || why.transientShortage()
                    ? "; " + StoreException.TRANSIENT + " leased, in-flight, offloading and parked bytes free by themselves"
                    : "";
            throw new StoreException(StoreError.NO_AVAILABLE_HANDLE, "no segment has " + need
                    + " contiguous free bytes for key '" + c.key() + "' even after eviction: " + why + retry);
        }
        return ticket;
    }

    /**
     * The refusal of a put that waits for offloads in flight to free room: transient, so its client asks again. Names
     * the offload it waits for ({@code awaited}, when one in flight already frees enough): a client that gives up at its
     * bound then says which node's offload did not complete (a stalled node's stays in flight until its deadline).
     */
    private StoreException waitForOffloads(long now, String key, long need, Offloads.Task awaited) {
        counters.allocationFailures.increment();
        String which = awaited == null ? "" : ", the oldest that frees enough runs on node '" + awaited.client()
                + "' and is given up in " + Math.max(0, (awaited.deadline() - now) / 1_000_000) + " ms if not done";
        return new StoreException(StoreError.NO_AVAILABLE_HANDLE, "no segment has " + need + " contiguous free bytes for key '"
                + key + "' yet: offloads in flight (" + ContiguousRoom.mib(state.offloads.memoryBytesInFlight()) + which
                + ") free room when they complete; " + StoreException.TRANSIENT + " ask again");
    }

    /** By segment index: the memory segments this put may be placed on (mounted, not excluded). */
    private boolean[] usableSegments(Command.PutStart c) {
        boolean[] usable = new boolean[state.segments.table().length];
        for (MountedSegment s : state.segments.active()) {
            usable[s.index] = !c.config().excludedSegments().contains(s.spec.id());
        }
        return usable;
    }

    /** The reservation, or null when no segment had room. */
    private PutTicket tryStart(long now, Command.PutStart c, Clients.ClientRecord client) {
        ObjectTable.Shard shard = state.objects.shard(c.key());
        synchronized (shard) {
            ObjectRecord rec = shard.map.get(c.key());
            boolean takeOver = checkWritable(rec, c.key(), now, c.upsert());
            long[] placed = state.segments.place(c);
            if (placed == null) {
                return null;
            }
            if (placed.length < c.config().replicas()) {
                counters.partialAllocations.increment();
            }
            if (takeOver) {
                rec = takeOver(shard, c.key(), rec);
            }
            long putId = putIds.incrementAndGet();
            long pinTtl = c.config().softPin()
                    ? (c.config().softPinTtl() == null ? config.defaultSoftPinTtl() : c.config().softPinTtl()).toNanos() : 0;
            if (rec == null) {
                rec = new ObjectRecord();
                rec.state = ObjectRecord.PROCESSING;
                rec.size = c.size();
                rec.setReplicas(placed);
                rec.asked = (byte) c.config().replicas();
                shard.put(c.key(), rec);
                counters.objects.increment();
            } else {
                // upsert of a readable object: readers keep the old version until the new one is complete
                rec.pending = placed;
                rec.pendingSize = c.size();
                rec.pendingAsked = (byte) c.config().replicas();
                rec.flags |= ObjectRecord.UPSERTING;
            }
            rec.putStart = now;
            rec.putId = putId;
            rec.owner = client.index;
            rec.pin = pinTtl;
            if (c.config().hardPin()) {
                rec.flags |= ObjectRecord.HARD_PIN;
            }
            Boolean wt = c.config().writeThrough();
            if (wt == null ? config.writeThrough() : wt) {
                rec.flags |= ObjectRecord.WRITE_THROUGH;
            } else {
                rec.flags &= ~ObjectRecord.WRITE_THROUGH;
            }
            return new PutTicket(putId, state.segments.locations(placed, c.size()));
        }
    }

    /** Throws unless the key may be written now; true if an abandoned put of it must be taken over first. */
    boolean checkWritable(ObjectRecord rec, String key, long now, boolean upsert) {
        if (rec == null) {
            return false;
        }
        if (rec.inFlight()) {
            long age = now - rec.putStart;
            if (age < config.putDiscardTimeout().toNanos()) {
                throw new StoreException(StoreError.OBJECT_IN_FLIGHT, "key '" + key + "' is being written by client "
                        + state.clients.ownerName(rec.owner) + " (started " + age / 1_000_000 + " ms ago); it is not readable yet");
            }
            if (rec.state == ObjectRecord.PROCESSING) {
                return true;
            }
        }
        if (rec.state == ObjectRecord.COMPLETE && !upsert) {
            throw new StoreException(StoreError.OBJECT_ALREADY_EXISTS, "key '" + key + "' already exists");
        }
        return rec.inFlight();
    }

    /** Parks an abandoned put's space; the record left, null if the object was only that put. */
    ObjectRecord takeOver(ObjectTable.Shard shard, String key, ObjectRecord rec) {
        counters.putsTakenOver.increment();
        // the abandoned writer may still be moving bytes: its space waits out the release timeout
        long releaseAt = rec.putStart + config.putReleaseTimeout().toNanos();
        if (rec.state == ObjectRecord.PROCESSING) {
            state.parking.park(rec.replicas(), rec.size, releaseAt);
            shard.map.remove(key);
            counters.objects.decrement();
            return null;
        }
        state.parking.park(rec.pending, rec.pendingSize, releaseAt);
        rec.pending = null;
        rec.flags &= ~(ObjectRecord.UPSERTING | ObjectRecord.WRITE_THROUGH);
        return rec;
    }

    void end(long now, Command.PutEnd c) {
        ObjectTable.Shard shard = state.objects.shard(c.key());
        synchronized (shard) {
            ObjectRecord rec = writeInProgress(shard, c.clientId(), c.key(), c.putId());
            if (rec == null) {
                return;
            }
            if (rec.state == ObjectRecord.PROCESSING) {
                if (!rec.hasReplicas()) {
                    shard.map.remove(c.key());
                    counters.objects.decrement();
                    throw new StoreException(StoreError.SEGMENT_NOT_FOUND, "every segment written for key '" + c.key()
                            + "' was unmounted before the put ended");
                }
                rec.state = ObjectRecord.COMPLETE;
                counters.objectBytes.add(rec.size);
            } else {
                if (rec.pending.length == 0) {
                    rec.pending = null;
                    rec.flags &= ~(ObjectRecord.UPSERTING | ObjectRecord.WRITE_THROUGH);
                    throw new StoreException(StoreError.SEGMENT_NOT_FOUND, "every segment written for the upsert of key '"
                            + c.key() + "' was unmounted before it ended");
                }
                // readers holding a lease, or a cancelled task's node, may still be copying the old version
                long busy = state.offloads.cancel(rec);
                state.parking.park(rec.allReplicas(), rec.size, Math.max(Math.max(now, rec.lease), busy));
                rec.disk = -1;
                rec.hits = 0; // a new version: the old one's reads from disk do not count towards its promotion
                rec.flags &= ~ObjectRecord.OFFLOAD_FAILED;
                counters.objectBytes.add(rec.pendingSize - rec.size);
                rec.size = rec.pendingSize;
                rec.setReplicas(rec.pending);
                rec.asked = rec.pendingAsked;
                rec.pending = null;
                rec.flags &= ~ObjectRecord.UPSERTING;
            }
            // a put placed where it found room: fewer replicas than asked are repaired once room is found
            state.repairs.mark(c.key(), rec);
            rec.lease = now;
            if (rec.pin > 0) {
                rec.flags |= ObjectRecord.SOFT_PIN;
                rec.pin = now + rec.pin;
            }
            if ((rec.flags & ObjectRecord.WRITE_THROUGH) != 0) {
                rec.flags &= ~ObjectRecord.WRITE_THROUGH;
                state.offloads.writeThrough(now, c.key(), rec);
            }
        }
    }

    void revoke(Command.PutRevoke c) {
        ObjectTable.Shard shard = state.objects.shard(c.key());
        synchronized (shard) {
            ObjectRecord rec = writeInProgress(shard, c.clientId(), c.key(), c.putId());
            if (rec == null) {
                throw new StoreException(StoreError.INVALID_WRITE, "put " + c.putId() + " of key '" + c.key()
                        + "' already ended; it cannot be revoked");
            }
            if (rec.state == ObjectRecord.PROCESSING) {
                state.segments.free(rec.replicas(), rec.size);
                shard.map.remove(c.key());
                counters.objects.decrement();
            } else {
                state.segments.free(rec.pending, rec.pendingSize);
                rec.pending = null;
                rec.flags &= ~(ObjectRecord.UPSERTING | ObjectRecord.WRITE_THROUGH);
            }
        }
    }

    /** The record whose put {@code putId} is in flight; null if that put already ended (an idempotent repeat). */
    private ObjectRecord writeInProgress(ObjectTable.Shard shard, String clientId, String key, long putId) {
        ObjectRecord rec = shard.map.get(key);
        if (rec == null) {
            throw new StoreException(StoreError.OBJECT_NOT_FOUND, "no put of key '" + key + "' is known (reclaimed or removed?)");
        }
        if (rec.putId != putId) {
            throw new StoreException(StoreError.INVALID_WRITE, "put " + putId + " of key '" + key
                    + "' was taken over by a later put (" + rec.putId + ")");
        }
        Clients.ClientRecord client = state.clients.get(clientId);
        if (client == null || client.index != rec.owner) {
            throw new StoreException(StoreError.ILLEGAL_CLIENT, "client " + clientId + " did not start put " + putId
                    + " of key '" + key + "' (" + state.clients.ownerName(rec.owner) + " did)");
        }
        return rec.inFlight() ? rec : null;
    }
}
