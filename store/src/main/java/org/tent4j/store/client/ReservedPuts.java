package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreException;
import org.tent4j.store.StoreError;
import org.tent4j.store.master.MasterState;
import org.tent4j.store.master.RangeAllocator;
import org.tent4j.store.proto.CommitItem;
import org.tent4j.store.proto.CommitRequest;
import org.tent4j.store.proto.CommitResponse;
import org.tent4j.store.proto.ReserveRequest;
import org.tent4j.store.proto.Status;
import org.tent4j.store.rpc.Wire;

/**
 * Puts into space the master reserved for this client earlier: one round trip per batch (the commit, which also hands
 * out the next reservation). Holds the reservations not in use, and retires them when they may have been released.
 */
final class ReservedPuts {
    private static final Logger LOG = LoggerFactory.getLogger(ReservedPuts.class);
    /** Largest value put into a reservation (a reservation holds at least four); larger ones take two round trips. */
    static final long MAX_RESERVED_VALUE = MasterState.MAX_RESERVATION_BYTES / 4;
    /** A reservation is asked for this many times a call's bytes (at least the builder's size): few refills, one call each. */
    static final int RESERVATION_CALLS = 8;
    static final long DEFAULT_RESERVATION_BYTES = 1 << 20;
    /**
     * A reservation is written into only while the master was heard from this recently: the master releases a
     * client's reservations when it expires (10 s of silence by default), and a client cut off from it must stop
     * writing into space that may be handed to others.
     */
    static final long RESERVATION_FRESH_NANOS = 3_000_000_000L;
    /**
     * A reservation left unused this long is retired, not written into: the master releases one unused for its put
     * release timeout (600 s by default) even while its client lives, and bytes written after that could land in space
     * handed to another object. A tenth of the default leaves the margin on this side.
     */
    static final long RESERVATION_IDLE_NANOS = 60_000_000_000L;

    private final ReplicaAccess access;
    private final long reservationBytes;
    /** Reservations not in use by a batch, by replica count; a batch takes one, carves it, and puts it back. */
    private final Map<Integer, ConcurrentLinkedQueue<Reserved>> reserved = new ConcurrentHashMap<>();
    /** When a reservation was last refused (no room): the next ask waits a second, so full stores cost no extra call. */
    private volatile long reserveRefusedAt = Long.MIN_VALUE;
    /** When the master last answered a ping or a commit. */
    private volatile long lastMasterContact = Long.MIN_VALUE;

    /** A reservation per replica, carved front to back by one batch at a time. */
    private static final class Reserved {
        final long[] ids;
        final ReplicaLocation[] ranges;
        long carved;
        /** When the master last answered a call that used this reservation (this client's clock, so never early). */
        long usedAt;

        Reserved(long[] ids, ReplicaLocation[] ranges, long usedAt) {
            this.ids = ids;
            this.ranges = ranges;
            this.usedAt = usedAt;
        }

        long room() {
            return ranges[0].length() - carved;
        }
    }

    ReservedPuts(ReplicaAccess access, long reservationBytes) {
        this.access = access;
        this.reservationBytes = reservationBytes;
    }

    /** The master answered a ping sent at {@code askedAt}: reservations are still this client's. */
    void masterHeard(long askedAt) {
        lastMasterContact = askedAt;
    }

    /** The master dropped this client, and its reservations with it. */
    void forgetAll() {
        reserved.clear();
    }

    boolean reservable(List<MemorySegment> sources, ReplicateConfig c) {
        if (reservationBytes == 0 || sources.isEmpty() || sources.size() > MasterState.MAX_COMMIT_ITEMS
                || !c.preferredSegments().isEmpty() || c.preferLocalHost() || c.softPin() || c.hardPin()
                || !c.excludedSegments().isEmpty() || c.replicas() < 1
                // a commit carries no write-through choice: it follows the master's default, so a put naming one
                // takes the two-call path, whose put start carries it
                || c.writeThrough() != null) {
            return false;
        }
        for (MemorySegment s : sources) {
            if (s.byteSize() == 0 || s.byteSize() > MAX_RESERVED_VALUE) {
                return false;
            }
        }
        return true;
    }
    /** The batch put through a reservation, or null when none could be had (the caller takes the two-call path). */
    List<Outcome<PutResult>> put(List<String> keys, List<MemorySegment> sources, ReplicateConfig config) {
        int n = keys.size();
        long need = 0;
        for (MemorySegment s : sources) {
            need += RangeAllocator.aligned(s.byteSize());
        }
        long ask = Math.min(MasterState.MAX_RESERVATION_BYTES, Math.max(reservationBytes, RESERVATION_CALLS * need));
        if (need > ask) {
            return null;
        }
        var pool = reserved.computeIfAbsent(config.replicas(), r -> new ConcurrentLinkedQueue<>());
        long now = access.clock.nanoTime();
        List<Reserved> retire = new ArrayList<>();
        if (lastMasterContact == Long.MIN_VALUE || now - lastMasterContact > RESERVATION_FRESH_NANOS) {
            // what this client holds may have been released meanwhile: retire it and ask afresh
            for (Reserved stale; (stale = pool.poll()) != null; ) {
                retire.add(stale);
            }
        }
        Reserved res = pool.poll();
        if (res != null && now - res.usedAt > RESERVATION_IDLE_NANOS) {
            retire.add(res);
            res = null;
        }
        if (res == null || res.room() < need) {
            if (access.clock.nanoTime() - reserveRefusedAt < 1_000_000_000L && reserveRefusedAt != Long.MIN_VALUE) {
                if (res != null) {
                    pool.add(res);
                }
                return null;
            }
            // the first batch (or one larger than what is left) asks first: two round trips, as without reservations
            if (res != null) {
                retire.add(res);
            }
            CommitResponse r = access.master.commit(commitRequest(List.of(), retire, ask, config.replicas()));
            lastMasterContact = now;
            res = granted(r, config.replicas(), now);
            if (res == null) {
                reserveRefusedAt = access.clock.nanoTime();
                return null;
            }
        }
        long[] offset = new long[n];
        Transfers writes = new Transfers(access, n * config.replicas());
        int[] firstMove = new int[n + 1];
        for (int i = 0; i < n; i++) {
            offset[i] = res.carved;
            res.carved += RangeAllocator.aligned(sources.get(i).byteSize());
            firstMove[i] = writes.size();
            for (ReplicaLocation range : res.ranges) {
                writes.add(false, range, offset[i], sources.get(i));
            }
        }
        firstMove[n] = writes.size();
        writes.run();
        List<Outcome<PutResult>> out = new ArrayList<>(Collections.nCopies(n, null));
        List<CommitItem> items = new ArrayList<>(n);
        List<Integer> itemIdx = new ArrayList<>(n);
        boolean writeFailed = false;
        for (int i = 0; i < n; i++) {
            StoreException failure = writes.firstFailure(keys.get(i), "writing", firstMove[i], firstMove[i + 1]);
            if (failure != null) {
                // never committed: the master gives the bytes back as the mark passes them
                out.set(i, Outcome.failed(failure));
                writeFailed = true;
                continue;
            }
            var item = CommitItem.newBuilder().setKey(keys.get(i)).setSize(sources.get(i).byteSize());
            for (int j = 0; j < res.ranges.length; j++) {
                item.addReservation(res.ids[j]).addAddress(res.ranges[j].address() + offset[i]);
            }
            items.add(item.build());
            itemIdx.add(i);
        }
        // a segment that failed a write may be gone: stop using this reservation
        boolean done = writeFailed || res.room() < need;
        long asked = access.clock.nanoTime();
        CommitResponse r = access.master.commit(commitRequest(items, done ? List.of(res) : List.of(), done ? ask : 0, config.replicas()));
        lastMasterContact = asked;
        if (r.getItemsCount() != items.size()) {
            // refused as a whole: nothing was committed, and what this reservation holds is unknown
            StoreException e = ClientErrors.error(r.getRefillStatus());
            for (int i : itemIdx) {
                out.set(i, Outcome.failed(e));
            }
            return out;
        }
        for (int j = 0; j < items.size(); j++) {
            Status st = r.getItems(j);
            int i = itemIdx.get(j);
            if (st.getCode() == 0) {
                out.set(i, Outcome.of(PutResult.stored(config.replicas(), List.of(res.ranges))));
            } else {
                out.set(i, refused(st, config.replicas()));
            }
        }
        Reserved next = done ? granted(r, config.replicas(), asked) : res;
        if (next != null) {
            // asked, not now: the master touched the reservation after this call was sent, never before
            next.usedAt = asked;
            pool.add(next);
        }
        return out;
    }

    private CommitRequest commitRequest(List<CommitItem> items, List<Reserved> retire,
                                                              long refillBytes, int replicas) {
        var b = CommitRequest.newBuilder().setClientId(access.id()).addAllItems(items);
        for (Reserved r : retire) {
            for (long id : r.ids) {
                b.addRetire(id);
            }
        }
        if (refillBytes > 0) {
            b.setRefill(ReserveRequest.newBuilder().setBytes(refillBytes).setReplicas(replicas).setWriterHost(access.host));
        }
        return b.build();
    }

    /** A batch item the master refused: the key being there already is an answer, anything else a failure. */
    static Outcome<PutResult> refused(Status st, int asked) {
        StoreException e = ClientErrors.error(st);
        return e.error() == StoreError.OBJECT_ALREADY_EXISTS ? Outcome.of(PutResult.alreadyExists(asked)) : Outcome.failed(e);
    }

    private static Reserved granted(CommitResponse r, int replicas, long askedAt) {
        if (r.getGrantedCount() != replicas) {
            if (r.getRefillStatus().getCode() != 0) {
                LOG.debug("no reservation: {}", r.getRefillStatus().getMessage());
            }
            return null;
        }
        long[] ids = new long[replicas];
        ReplicaLocation[] ranges = new ReplicaLocation[replicas];
        for (int j = 0; j < replicas; j++) {
            ids[j] = r.getGranted(j).getId();
            ranges[j] = Wire.replica(r.getGranted(j).getRange());
        }
        return new Reserved(ids, ranges, askedAt);
    }

    /** Gives every reservation not in use back to the master, logging (not throwing) a failure: for close. */
    void retireAll() {
        List<Reserved> held = new ArrayList<>();
        reserved.values().forEach(pool -> {
            for (Reserved r; (r = pool.poll()) != null; ) {
                held.add(r);
            }
        });
        if (!held.isEmpty()) {
            try {
                access.master.commit(commitRequest(List.of(), held, 0, 1));
            } catch (StoreException e) {
                LOG.warn("retiring {} reservations on close failed: {} (the master releases them when this client expires)",
                        held.size(), e.getMessage());
            }
        }
    }
}
