package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.proto.ReplicaListResponse;
import org.tent4j.store.rpc.Wire;

/**
 * The get path: a value as a copy (through the staging memory) or into registered buffers, one key or many. Each read
 * asks the master for the replicas and a lease, reads the nearest replica that works, and is retried when its lease
 * ended while bytes moved.
 */
final class GetPath {
    private final ReplicaAccess access;

    GetPath(ReplicaAccess access) {
        this.access = access;
    }

    /** A copy of the value, read through the registered staging buffer. */
    byte[] get(String key) {
        for (int attempt = 1; ; attempt++) {
            long t0 = access.clock.nanoTime();
            ReplicaListResponse list = access.master.getReplicaList(key);
            long size = list.getSize();
            if (size > Integer.MAX_VALUE - 8) {
                throw new StoreException(StoreError.INVALID_PARAMS, "key '" + key + "' of " + size + " bytes does not fit a byte[]; use getInto");
            }
            long deadline = t0 + Duration.ofMillis(list.getLeaseTtlMs()).toNanos();
            StagingBuffer.Lease lease = access.staging().borrow(Math.max(1, size));
            try {
                MemorySegment dst = lease.segment().asSlice(0, size);
                StoreException e = access.readReplicas(key, access.nearestFirst(Wire.replicas(list.getReplicasList())), 0, List.of(dst), deadline);
                if (e == null) {
                    return dst.toArray(ValueLayout.JAVA_BYTE);
                }
                if (e.error() != StoreError.LEASE_EXPIRED || attempt >= ReplicaAccess.READ_ATTEMPTS) {
                    throw e;
                }
            } finally {
                access.staging().release(lease);
            }
        }
    }

    /** Zero-copy read into {@code destination} (registered memory at least as large as the value); returns its size. */
    long getInto(String key, MemorySegment destination) {
        return getIntoParts(key, List.of(destination));
    }

    /** Zero-copy read scattered over several registered buffers, in order; returns the value's size. */
    long getIntoParts(String key, List<MemorySegment> parts) {
        return readInto(key, parts, ReplicaAccess.totalSize(parts));
    }

    private long readInto(String key, List<MemorySegment> parts, long room) {
        access.memory.destinations(key, parts);
        for (int attempt = 1; ; attempt++) {
            long t0 = access.clock.nanoTime();
            ReplicaListResponse list = access.master.getReplicaList(key);
            long deadline = t0 + Duration.ofMillis(list.getLeaseTtlMs()).toNanos();
            if (list.getSize() > room) {
                throw ClientErrors.bufferTooSmall(key, room, list.getSize());
            }
            StoreException e = access.readReplicas(key, access.nearestFirst(Wire.replicas(list.getReplicasList())), 0, parts, deadline);
            if (e == null) {
                return list.getSize();
            }
            if (e.error() != StoreError.LEASE_EXPIRED || attempt >= ReplicaAccess.READ_ATTEMPTS) {
                throw e;
            }
        }
    }


    /** Values as copies; a missing key's outcome carries OBJECT_NOT_FOUND. */
    List<Outcome<byte[]>> getBatch(List<String> keys) {
        List<Outcome<byte[]>> out = new ArrayList<>(keys.size());
        for (String k : keys) {
            try {
                out.add(Outcome.of(get(k)));
            } catch (StoreException e) {
                out.add(Outcome.failed(e));
            }
        }
        return out;
    }

    List<Outcome<Long>> getBatchInto(List<String> keys, List<MemorySegment> destinations) {
        return new BatchReads(access).read(keys, destinations);
    }
}
