package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.List;

import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.proto.ReplicaListResponse;
import org.tent4j.store.rpc.MasterClient;
import org.tent4j.store.rpc.SegmentTable;

/**
 * {@code StoreClient.getBatchInto}: many values, each into its registered buffer. Replica lists are fetched in waves,
 * and a wave that ran past leases makes the next one smaller, so a batch of any size completes as long as single reads
 * fit in a lease.
 */
final class BatchReads {
    /** Keys whose replica lists a batch read fetches at once, before it adapts to how fast reads go. */
    static final int FIRST_WAVE = 256;
    private final ReplicaAccess client;
    private final MasterClient master;

    BatchReads(ReplicaAccess client) {
        this.client = client;
        this.master = client.master;
    }

    List<Outcome<Long>> read(List<String> keys, List<MemorySegment> destinations) {
        if (keys.size() != destinations.size()) {
            throw new StoreException(StoreError.INVALID_PARAMS, keys.size() + " keys but " + destinations.size() + " buffers");
        }
        client.memory.batch(keys, destinations, true);
        List<Outcome<Long>> out = new ArrayList<>(Collections.nCopies(keys.size(), null));
        int[] attempts = new int[keys.size()];
        Deque<Integer> todo = new ArrayDeque<>();
        for (int i = 0; i < keys.size(); i++) {
            todo.add(i);
        }
        int wave = FIRST_WAVE;
        while (!todo.isEmpty()) {
            List<Integer> idx = new ArrayList<>(Math.min(wave, todo.size()));
            while (idx.size() < wave && !todo.isEmpty()) {
                idx.add(todo.poll());
            }
            List<String> waveKeys = idx.size() == keys.size() ? keys : idx.stream().map(keys::get).toList();
            long t0 = client.clock.nanoTime();
            SegmentTable.Decoded answer = master.batchGetReplicaList(waveKeys);
            List<ReplicaListResponse> lists = answer.items();
            List<Integer> expired = new ArrayList<>();
            int inTime = 0;
            // every read of the wave in flight at once, each from its nearest replica; the rest only on failure
            List<List<ReplicaLocation>> ranked = new ArrayList<>(idx.size());
            Transfers first = new Transfers(client, idx.size());
            int[] move = new int[idx.size()];
            for (int j = 0; j < idx.size(); j++) {
                int i = idx.get(j);
                ReplicaListResponse l = lists.get(j);
                ranked.add(null);
                move[j] = -1;
                if (l.getStatus().getCode() != 0) {
                    out.set(i, Outcome.failed(ClientErrors.error(l.getStatus())));
                    continue;
                }
                MemorySegment dst = destinations.get(i);
                if (l.getSize() > dst.byteSize()) {
                    out.set(i, Outcome.failed(ClientErrors.bufferTooSmall(keys.get(i), dst.byteSize(), l.getSize())));
                    continue;
                }
                List<ReplicaLocation> rs = client.nearestFirst(answer.replicas().get(j));
                if (rs.isEmpty()) {
                    out.set(i, Outcome.failed(ClientErrors.noReplica(keys.get(i))));
                    continue;
                }
                ranked.set(j, rs);
                move[j] = first.add(true, rs.getFirst(), 0, dst.asSlice(0, l.getSize()));
            }
            first.run();
            for (int j = 0; j < idx.size(); j++) {
                if (move[j] < 0) {
                    continue;
                }
                int i = idx.get(j);
                ReplicaListResponse l = lists.get(j);
                long deadline = t0 + Duration.ofMillis(l.getLeaseTtlMs()).toNanos();
                StoreException e = first.failure(move[j]);
                ReplicaLocation read = ranked.get(j).getFirst();
                if (e == null && read.onDisk()) {
                    e = DiskReads.verify(client, keys.get(i), read, List.of(destinations.get(i).asSlice(0, l.getSize())));
                }
                if (e == null) {
                    if (client.clock.nanoTime() >= deadline) {
                        client.leaseExpiredReads.increment();
                        e = new StoreException(StoreError.LEASE_EXPIRED, "read of key '" + keys.get(i)
                                + "' finished after its lease ended; the bytes were discarded");
                    }
                } else {
                    client.replicaFailovers.increment();
                    List<ReplicaLocation> rest = ranked.get(j).subList(1, ranked.get(j).size());
                    e = rest.isEmpty() ? (e.error() == StoreError.CHECKSUM_MISMATCH ? e
                            : new StoreException(StoreError.TRANSFER_FAIL, "reading key '" + keys.get(i) + "': "
                            + e.getMessage(), e)) : client.readReplicas(keys.get(i), rest, 0, List.of(destinations.get(i).asSlice(0, l.getSize())), deadline);
                }
                if (e == null) {
                    out.set(i, Outcome.of(l.getSize()));
                    if (expired.isEmpty()) {
                        inTime++;
                    }
                } else if (e.error() == StoreError.LEASE_EXPIRED && ++attempts[i] < ReplicaAccess.READ_ATTEMPTS) {
                    expired.add(i);
                } else {
                    out.set(i, Outcome.failed(e));
                }
            }
            if (!expired.isEmpty()) {
                wave = Math.max(1, Math.min(wave / 2, inTime));
                for (int k = expired.size() - 1; k >= 0; k--) {
                    todo.addFirst(expired.get(k));
                }
            }
        }
        return out;
    }
}
