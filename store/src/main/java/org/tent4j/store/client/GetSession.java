package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.Tier;
import org.tent4j.store.proto.ReplicaListResponse;
import org.tent4j.store.rpc.SegmentTable;

/**
 * Replica lists of several keys fetched with one RPC, then read (whole, in ranges, or many at once) without asking
 * the master again, while the lease lasts: Mooncake's get sessions. A read that would start after the lease is refused
 * and one that finishes after it is discarded, both with LEASE_EXPIRED: {@link #renew} the session (one more fetch).
 * The master keeps no session state (its leases end on their own); {@link #close} makes every later read fail at once.
 */
public final class GetSession implements AutoCloseable {
    private final ReplicaAccess client;
    private final List<String> keys;
    private final List<ReplicaListResponse> lists;
    /** Per key, its replicas nearest first (ranked once, at the fetch). */
    private final List<List<ReplicaLocation>> replicas;
    private final long[] deadlines;
    private final long earliestDeadline;
    private volatile boolean closed;

    /** One replica-list fetch for {@code keys}; the leases count from before the master was asked. */
    static GetSession open(ReplicaAccess client, List<String> keys) {
        long t0 = client.clock.nanoTime();
        return new GetSession(client, keys, client.master.batchGetReplicaList(keys), t0);
    }

    private GetSession(ReplicaAccess client, List<String> keys, SegmentTable.Decoded answer, long t0) {
        this.client = client;
        this.keys = List.copyOf(keys);
        this.lists = answer.items();
        this.replicas = new ArrayList<>(keys.size());
        this.deadlines = new long[keys.size()];
        long earliest = Long.MAX_VALUE;
        for (int i = 0; i < keys.size(); i++) {
            replicas.add(client.nearestFirst(answer.replicas().get(i)));
            deadlines[i] = t0 + Duration.ofMillis(lists.get(i).getLeaseTtlMs()).toNanos();
            if (lists.get(i).getStatus().getCode() == 0) {
                earliest = Math.min(earliest, deadlines[i]);
            }
        }
        this.earliestDeadline = earliest;
    }

    public int size() {
        return keys.size();
    }

    /** Whether some key's lease has ended (its reads are refused): time to {@link #renew}. */
    public boolean leaseEnded() {
        return client.clock.nanoTime() >= earliestDeadline;
    }

    /** A new session over the same keys: one more replica-list fetch, fresh leases. */
    public GetSession renew() {
        return open(client, keys);
    }

    /** Value {@code i}'s size; throws the error the master gave for it (e.g. OBJECT_NOT_FOUND). */
    public long valueSize(int i) {
        open();
        check(i);
        return lists.get(i).getSize();
    }

    /**
     * The tier of the replica a read of value {@code i} tries first (memory when it has one), as the master listed it
     * at the fetch; throws the error the master gave for it.
     */
    public Tier tier(int i) {
        open();
        check(i);
        return replicas.get(i).getFirst().tier();
    }

    /** Reads value {@code i} into registered {@code destination}; returns its size. */
    public long read(int i, MemorySegment destination) {
        long n = valueSize(i);
        if (destination.byteSize() < n) {
            throw ClientErrors.bufferTooSmall(keys.get(i), destination.byteSize(), n);
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
        if (client.clock.nanoTime() >= deadlines[i]) {
            throw ended(i);
        }
        client.memory.destinations(keys.get(i), List.of(destination));
        StoreException e = client.readReplicas(keys.get(i), replicas.get(i), offset, List.of(destination), deadlines[i]);
        if (e != null) {
            throw e;
        }
    }

    /**
     * Reads values {@code first, first + 1, ...}, one into each registered destination, with every byte move in
     * flight at once (one engine batch, as {@code StoreClient.getBatchInto}); per value its size or its error. A value
     * whose lease has ended, or ended while its bytes moved, fails with LEASE_EXPIRED (bytes discarded).
     */
    public List<Outcome<Long>> readBatch(int first, List<MemorySegment> destinations) {
        open();
        int n = destinations.size();
        if (first < 0 || first + n > keys.size()) {
            throw new StoreException(StoreError.INVALID_PARAMS, "values [" + first + ", " + ((long) first + n)
                    + ") are outside a session of " + keys.size() + " keys");
        }
        client.memory.batch(keys.subList(first, first + n), destinations, true);
        List<Outcome<Long>> out = new ArrayList<>(n);
        Transfers moves = new Transfers(client, n);
        int[] move = new int[n];
        long now = client.clock.nanoTime();
        for (int j = 0; j < n; j++) {
            int i = first + j;
            move[j] = -1;
            out.add(null);
            ReplicaListResponse l = lists.get(i);
            MemorySegment dst = destinations.get(j);
            if (l.getStatus().getCode() != 0) {
                out.set(j, Outcome.failed(ClientErrors.error(l.getStatus())));
            } else if (l.getSize() > dst.byteSize()) {
                out.set(j, Outcome.failed(ClientErrors.bufferTooSmall(keys.get(i), dst.byteSize(), l.getSize())));
            } else if (replicas.get(i).isEmpty()) {
                out.set(j, Outcome.failed(ClientErrors.noReplica(keys.get(i))));
            } else if (now >= deadlines[i]) {
                out.set(j, Outcome.failed(ended(i)));
            } else {
                move[j] = moves.add(true, replicas.get(i).getFirst(), 0, dst.asSlice(0, l.getSize()));
            }
        }
        moves.run();
        long done = client.clock.nanoTime();
        for (int j = 0; j < n; j++) {
            if (move[j] < 0) {
                continue;
            }
            int i = first + j;
            long size = lists.get(i).getSize();
            StoreException e = moves.failure(move[j]);
            List<ReplicaLocation> rs = replicas.get(i);
            if (e == null && rs.getFirst().onDisk()) {
                e = DiskReads.verify(client, keys.get(i), rs.getFirst(), List.of(destinations.get(j).asSlice(0, size)));
            }
            if (e != null) {
                client.replicaFailovers.increment();
                e = rs.size() == 1 ? (e.error() == StoreError.CHECKSUM_MISMATCH ? e
                        : new StoreException(StoreError.TRANSFER_FAIL, "reading key '" + keys.get(i) + "': " + e.getMessage(), e))
                        : client.readReplicas(keys.get(i), rs.subList(1, rs.size()), 0, List.of(destinations.get(j).asSlice(0, size)), deadlines[i]);
            } else if (done >= deadlines[i]) {
                client.leaseExpiredReads.increment();
                e = new StoreException(StoreError.LEASE_EXPIRED, "read of key '" + keys.get(i)
                        + "' finished after its session's lease ended; the bytes were discarded");
            }
            out.set(j, e == null ? Outcome.of(size) : Outcome.failed(e));
        }
        return out;
    }

    private StoreException ended(int i) {
        return new StoreException(StoreError.LEASE_EXPIRED, "the session's lease on key '" + keys.get(i)
                + "' has ended; renew the session");
    }


    /** Ends the session: later reads are refused (UNAVAILABLE_IN_CURRENT_STATUS). */
    @Override
    public void close() {
        closed = true;
    }

    private void open() {
        if (closed) {
            throw new StoreException(StoreError.UNAVAILABLE_IN_CURRENT_STATUS, "the get session over " + keys.size()
                    + " keys (first '" + (keys.isEmpty() ? "" : keys.getFirst()) + "') is closed");
        }
    }

    private void check(int i) {
        StoreException e = ClientErrors.error(lists.get(i).getStatus());
        if (e != null) {
            throw e;
        }
    }
}
