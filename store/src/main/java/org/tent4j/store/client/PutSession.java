package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

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
 * Space reserved for several values with one RPC (asked again for values refused for room that frees by itself, as a
 * single put is: {@link RoomWait}); the caller writes their bytes at any offsets, in any order, from
 * registered memory, then {@link #end}s (all become readable) or {@link #revoke}s. If the master's answer to end or
 * revoke is lost, the session stays open so the call can be repeated. Closing an open session revokes it.
 */
public final class PutSession implements AutoCloseable {
    private final ReplicaAccess client;
    private final List<String> keys;
    private final List<Long> sizes;
    private final List<PutStartResponse> tickets;
    private final List<List<ReplicaLocation>> replicas = new ArrayList<>();
    private final boolean[] open;
    /** Replicas each value asked for. */
    private final int asked;

    PutSession(ReplicaAccess client, RoomWait roomWait, List<String> keys, List<Long> sizes, ReplicateConfig config) {
        if (keys.size() != sizes.size()) {
            throw new StoreException(StoreError.INVALID_PARAMS, keys.size() + " keys but " + sizes.size() + " sizes");
        }
        this.client = client;
        this.keys = List.copyOf(keys);
        this.sizes = List.copyOf(sizes);
        this.asked = config.replicas();
        List<PutStartRequest> reqs = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            reqs.add(MasterClient.putStartRequest(client.id(), keys.get(i), sizes.get(i), config, client.host, false));
        }
        this.tickets = roomWait.startAll(reqs, client.master::batchPutStart);
        this.open = new boolean[keys.size()];
        for (int i = 0; i < keys.size(); i++) {
            open[i] = tickets.get(i).getStatus().getCode() == 0;
            replicas.add(Wire.replicas(tickets.get(i).getReplicasList()));
        }
    }

    public int size() {
        return keys.size();
    }

    /** Why key {@code i} got no space (null if it did). */
    public StoreException startError(int i) {
        return ClientErrors.error(tickets.get(i).getStatus());
    }

    /** Writes {@code source} (registered memory) into every replica of value {@code i} at {@code offset}. */
    public void write(int i, long offset, MemorySegment source) {
        if (!open[i]) {
            throw new StoreException(StoreError.INVALID_WRITE, "key '" + keys.get(i) + "' is not open in this session"
                    + (startError(i) != null ? ": " + startError(i).getMessage() : ""));
        }
        if (offset < 0 || offset + source.byteSize() > sizes.get(i)) {
            throw new StoreException(StoreError.INVALID_PARAMS, "write of " + source.byteSize() + " bytes at offset " + offset
                    + " is outside key '" + keys.get(i) + "' (" + sizes.get(i) + " bytes)");
        }
        client.memory.sources(keys.get(i), List.of(source));
        StoreException e = client.writeAt(keys.get(i), replicas.get(i), offset, source);
        if (e != null) {
            throw e;
        }
    }

    /** Makes every open value readable; per key the outcome (a key whose start failed reports that failure). */
    public List<Outcome<PutResult>> end() {
        List<PutEndRequest> reqs = new ArrayList<>();
        List<Integer> idx = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            if (open[i]) {
                reqs.add(MasterClient.endRequest(client.id(), keys.get(i), tickets.get(i).getPutId()));
                idx.add(i);
            }
        }
        List<Status> st = reqs.isEmpty() ? List.of() : client.master.batchPutEnd(reqs);
        List<Outcome<PutResult>> out = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            StoreException e = startError(i);
            out.add(e == null ? Outcome.of(PutResult.stored(asked, replicas.get(i))) : e.error() == StoreError.OBJECT_ALREADY_EXISTS
                    ? Outcome.of(PutResult.alreadyExists(asked)) : Outcome.failed(e));
        }
        for (int j = 0; j < st.size(); j++) {
            int i = idx.get(j);
            open[i] = false;
            if (st.get(j).getCode() != 0) {
                out.set(i, Outcome.failed(ClientErrors.error(st.get(j))));
            }
        }
        return out;
    }

    /** Gives up every open value's space. */
    public void revoke() {
        List<PutEndRequest> reqs = new ArrayList<>();
        List<Integer> idx = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            if (open[i]) {
                reqs.add(MasterClient.endRequest(client.id(), keys.get(i), tickets.get(i).getPutId()));
                idx.add(i);
            }
        }
        if (!reqs.isEmpty()) {
            client.master.batchPutRevoke(reqs);
            idx.forEach(i -> open[i] = false);
        }
    }

    @Override
    public void close() {
        revoke();
    }
}
