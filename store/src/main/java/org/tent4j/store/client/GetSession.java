package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;

import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.proto.ReplicaListResponse;
import org.tent4j.store.rpc.Wire;

/**
 * Replica lists of several keys fetched with one RPC, then read (whole or in ranges) without asking the master
 * again, while the lease lasts. A read that would start or end after the lease is refused with LEASE_EXPIRED: open a
 * new session.
 */
public final class GetSession {
    private final StoreClient client;
    private final List<String> keys;
    private final List<ReplicaListResponse> lists;
    private final long[] deadlines;

    GetSession(StoreClient client, List<String> keys, List<ReplicaListResponse> lists, long t0) {
        this.client = client;
        this.keys = List.copyOf(keys);
        this.lists = lists;
        this.deadlines = new long[keys.size()];
        for (int i = 0; i < keys.size(); i++) {
            deadlines[i] = t0 + Duration.ofMillis(lists.get(i).getLeaseTtlMs()).toNanos();
        }
    }

    public int size() {
        return keys.size();
    }

    /** Value {@code i}'s size; throws the error the master gave for it (e.g. OBJECT_NOT_FOUND). */
    public long valueSize(int i) {
        check(i);
        return lists.get(i).getSize();
    }

    /** Reads value {@code i} into registered {@code destination}; returns its size. */
    public long read(int i, MemorySegment destination) {
        long n = valueSize(i);
        if (destination.byteSize() < n) {
            throw new StoreException(StoreError.INVALID_PARAMS, "buffer of " + destination.byteSize()
                    + " bytes is too small for key '" + keys.get(i) + "' (" + n + " bytes)");
        }
        read(i, 0, destination.asSlice(0, n));
        return n;
    }

    /** Reads {@code destination.byteSize()} bytes of value {@code i} from {@code offset}. */
    public void read(int i, long offset, MemorySegment destination) {
        long n = valueSize(i);
        if (offset < 0 || offset + destination.byteSize() > n) {
            throw new StoreException(StoreError.INVALID_PARAMS, "range [" + offset + ", " + (offset + destination.byteSize())
                    + ") is outside key '" + keys.get(i) + "' (" + n + " bytes)");
        }
        if (client.clock().nanoTime() >= deadlines[i]) {
            throw new StoreException(StoreError.LEASE_EXPIRED, "the session's lease on key '" + keys.get(i)
                    + "' has ended; open a new session");
        }
        StoreException e = client.readFrom(keys.get(i), Wire.replicas(lists.get(i).getReplicasList()), offset, destination, deadlines[i]);
        if (e != null) {
            throw e;
        }
    }

    private void check(int i) {
        StoreException e = StoreClient.error(lists.get(i).getStatus());
        if (e != null) {
            throw e;
        }
    }
}
