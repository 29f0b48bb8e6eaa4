package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.proto.PutEndRequest;
import org.tent4j.store.proto.PutStartRequest;
import org.tent4j.store.proto.PutStartResponse;
import org.tent4j.store.proto.Status;
import org.tent4j.store.rpc.MasterClient;
import org.tent4j.store.rpc.Wire;

/**
 * The put path: copying puts through the staging memory, zero-copy puts (one value, gathered parts, upserts) and batch
 * puts. Small values with a plain replica count go through {@link ReservedPuts} (one round trip); the rest, and what
 * finds no reservation, take two (put start, writes, put end), placing again without segments a write failed on.
 */
final class PutPath {
    private static final Logger LOG = LoggerFactory.getLogger(PutPath.class);
    /** Waits out a refusal for room that frees by itself (leases ending, puts in flight). */
    private final RoomWait roomWait;
    private final ReplicaAccess access;
    private final ReservedPuts reserved;

    PutPath(ReplicaAccess access, ReservedPuts reserved, RoomWait roomWait) {
        this.roomWait = roomWait;
        this.access = access;
        this.reserved = reserved;
    }

    /** Stores a copy of {@code value} (any memory, heap included) through the registered staging buffer. */
    PutResult put(String key, MemorySegment value, ReplicateConfig config) {
        StagingBuffer.Lease lease = access.staging().borrow(Math.max(1, value.byteSize()));
        try {
            MemorySegment s = lease.segment().asSlice(0, value.byteSize());
            MemorySegment.copy(value, 0, s, 0, value.byteSize());
            return putParts(key, List.of(s), config, false);
        } finally {
            access.staging().release(lease);
        }
    }

    void upsert(String key, byte[] value, ReplicateConfig config) {
        StagingBuffer.Lease lease = access.staging().borrow(Math.max(1, value.length));
        try {
            MemorySegment s = lease.segment().asSlice(0, value.length);
            MemorySegment.copy(MemorySegment.ofArray(value), 0, s, 0, value.length);
            putParts(key, List.of(s), config, true);
        } finally {
            access.staging().release(lease);
        }
    }

    PutResult putParts(String key, List<MemorySegment> parts, ReplicateConfig config, boolean upsert) {
        access.memory.sources(key, parts);
        if (!upsert && parts.size() == 1 && reserved.reservable(parts, config)) {
            // one round trip, as a batch of one: the write into this client's reservation, then the commit
            List<Outcome<PutResult>> out = reserved.put(List.of(key), parts, config);
            if (out != null) {
                Outcome<PutResult> o = out.getFirst();
                if (o.ok()) {
                    return o.value();
                }
                // a write failed (its segment's owner may be dead) or the commit was refused: the two-call path places
                // it again without the failed segments, or reports why the key cannot be put
                LOG.debug("put of '{}' into a reservation failed ({}); placing it the two-call way", key, o.error().getMessage());
            }
        }
        long size = ReplicaAccess.totalSize(parts);
        PutStartResponse ticket;
        try {
            ticket = roomWait.call(key, () -> access.master.putStart(MasterClient.putStartRequest(access.id(), key, size,
                    config, access.host, upsert)));
        } catch (StoreException e) {
            if (e.error() == StoreError.OBJECT_ALREADY_EXISTS && !upsert) {
                return PutResult.alreadyExists(config.replicas());
            }
            throw e;
        }
        List<ReplicaLocation> replicas = Wire.replicas(ticket.getReplicasList());
        Transfers writes = new Transfers(access, replicas.size() * parts.size());
        writes.addWrites(replicas, parts);
        StoreException failure = writes.run().firstFailure(key, "writing", 0, writes.size());
        if (failure == null) {
            access.master.putEnd(access.id(), key, ticket.getPutId());
            return PutResult.stored(config.replicas(), replicas);
        }
        revokeQuietly(key, ticket.getPutId());
        access.memory.afterFailedWrite(key, parts, failure);
        // a segment whose owner died stays mounted until the master's client TTL runs out: place again without it
        List<String> failed = writes.failedSegments(replicas, parts);
        if (failed.isEmpty() || !config.excludedSegments().isEmpty()) {
            throw failure;
        }
        LOG.warn("put of '{}' could not write to segments {} ({}); placing it again without them", key, failed, failure.getMessage());
        return putParts(key, parts, config.withExcludedSegments(failed), upsert);
    }

    /**
     * Puts copies of many values (heap memory included), as {@link #putBatchFrom}, staged through the client's
     * registered staging memory: values are copied in groups that fit it, each group put as one batch, so a batch larger
     * than the staging memory registers nothing new (a single value larger than it gets memory of its own, as a single
     * copying put does).
     */
    List<Outcome<PutResult>> putBatchCopies(List<String> keys, List<MemorySegment> values, ReplicateConfig config) {
        if (keys.size() != values.size()) {
            throw new StoreException(StoreError.INVALID_PARAMS, keys.size() + " keys but " + values.size() + " values");
        }
        for (int i = 0; i < values.size(); i++) {
            if (values.get(i) == null) {
                throw new StoreException(StoreError.INVALID_PARAMS, "value " + i + " (key '" + keys.get(i) + "') is null");
            }
        }
        List<Outcome<PutResult>> out = new ArrayList<>(keys.size());
        long room = access.stagingBytes();
        for (int from = 0, to; from < keys.size(); from = to) {
            long total = values.get(from).byteSize();
            for (to = from + 1; to < keys.size() && total + values.get(to).byteSize() <= room; to++) {
                total += values.get(to).byteSize();
            }
            out.addAll(putStaged(keys.subList(from, to), values.subList(from, to), total, config));
        }
        return out;
    }

    private List<Outcome<PutResult>> putStaged(List<String> keys, List<MemorySegment> values, long total, ReplicateConfig config) {
        StagingBuffer.Lease lease = access.staging().borrow(Math.max(1, total));
        try {
            List<MemorySegment> copies = new ArrayList<>(values.size());
            long off = 0;
            for (MemorySegment v : values) {
                copies.add(lease.segment().asSlice(off, v.byteSize()).copyFrom(v));
                off += v.byteSize();
            }
            return putBatchFrom(keys, copies, config);
        } finally {
            access.staging().release(lease);
        }
    }

    /**
     * Puts many values; each key succeeds or fails on its own. Small values with a plain replica count go into space
     * the master reserved for this client earlier: one round trip (the commit, which also hands out the next
     * reservation). The rest, and a batch that finds no reservation, take two (reserve per key, then end).
     */
    List<Outcome<PutResult>> putBatchFrom(List<String> keys, List<MemorySegment> sources, ReplicateConfig config) {
        if (keys.size() != sources.size()) {
            throw new StoreException(StoreError.INVALID_PARAMS, keys.size() + " keys but " + sources.size() + " values");
        }
        access.memory.batch(keys, sources, false);
        if (reserved.reservable(sources, config)) {
            List<Outcome<PutResult>> out = reserved.put(keys, sources, config);
            if (out != null) {
                return out;
            }
        }
        List<PutStartRequest> reqs = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            reqs.add(MasterClient.putStartRequest(access.id(), keys.get(i), sources.get(i).byteSize(), config, access.host, false));
        }
        List<PutStartResponse> tickets = roomWait.startAll(reqs, access.master::batchPutStart);
        List<Outcome<PutResult>> out = new ArrayList<>(Collections.nCopies(keys.size(), null));
        // every value's writes in one engine batch; key i's moves are [firstMove[i], firstMove[i + 1])
        Transfers writes = new Transfers(access, keys.size());
        int[] firstMove = new int[keys.size() + 1];
        for (int i = 0; i < keys.size(); i++) {
            firstMove[i] = writes.size();
            PutStartResponse t = tickets.get(i);
            if (t.getStatus().getCode() != 0) {
                out.set(i, ReservedPuts.refused(t.getStatus(), config.replicas()));
            } else {
                writes.addWrites(Wire.replicas(t.getReplicasList()), List.of(sources.get(i)));
            }
        }
        firstMove[keys.size()] = writes.size();
        writes.run();
        List<PutEndRequest> ends = new ArrayList<>();
        List<Integer> endIdx = new ArrayList<>();
        List<PutEndRequest> revokes = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            if (out.get(i) != null) {
                continue;
            }
            StoreException failure = writes.firstFailure(keys.get(i), "writing", firstMove[i], firstMove[i + 1]);
            PutEndRequest req = MasterClient.endRequest(access.id(), keys.get(i), tickets.get(i).getPutId());
            if (failure == null) {
                ends.add(req);
                endIdx.add(i);
            } else {
                revokes.add(req);
                out.set(i, Outcome.failed(failure));
            }
        }
        if (!revokes.isEmpty()) {
            try {
                access.master.batchPutRevoke(revokes);
            } catch (StoreException e) {
                LOG.warn("revoking {} failed puts: {} (the master reclaims them after its release timeout)", revokes.size(), e.getMessage());
            }
        }
        if (!ends.isEmpty()) {
            List<Status> st = access.master.batchPutEnd(ends);
            for (int j = 0; j < st.size(); j++) {
                int i = endIdx.get(j);
                out.set(i, st.get(j).getCode() == 0 ? Outcome.of(PutResult.stored(config.replicas(),
                        Wire.replicas(tickets.get(i).getReplicasList()))) : Outcome.failed(ClientErrors.error(st.get(j))));
            }
        }
        return out;
    }

    /** A put session: its puts start as a batch's, waiting out refusals for room that frees by itself. */
    PutSession session(List<String> keys, List<Long> sizes, ReplicateConfig config) {
        return new PutSession(access, roomWait, keys, sizes, config);
    }

    private void revokeQuietly(String key, long putId) {
        try {
            access.master.putRevoke(access.id(), key, putId);
        } catch (StoreException e) {
            LOG.warn("revoking put of '{}' failed: {} (the master reclaims it after its release timeout)", key, e.getMessage());
        }
    }
}
