package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import org.tent4j.api.Batch;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferStatus;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * The byte moves one store call makes, started together: a replica in memory this client contributed is copied at
 * once, the rest go to the engine as one {@link Batch}, so a call of 32 values waits for one completion instead of
 * 32 futures each handed over between threads (the cost that dominated small batches).
 */
final class Transfers {
    /** Moves per engine batch: well under any sane {@code batch.max_capacity}. */
    static final int CHUNK = 1024;
    private final ReplicaAccess client;
    private final List<TransferRequest> requests;
    /** Per move: its task's position in {@link #requests}, or -1 when it was settled when added. */
    private int[] task;
    private StoreException[] failures;
    private int size;
    private boolean ran;

    Transfers(ReplicaAccess client, int expected) {
        this.client = client;
        this.requests = new ArrayList<>(expected);
        this.task = new int[Math.max(1, expected)];
        this.failures = new StoreException[Math.max(1, expected)];
    }

    /** Adds a move of {@code local} from ({@code read}) or to a replica at {@code offset}; returns its index. */
    int add(boolean read, ReplicaLocation r, long offset, MemorySegment local) {
        if (ran) {
            throw new IllegalStateException("transfers already ran");
        }
        if (size == task.length) {
            task = java.util.Arrays.copyOf(task, size * 2);
            failures = java.util.Arrays.copyOf(failures, size * 2);
        }
        int i = size++;
        task[i] = -1;
        MemorySegment mine = client.contributedRange(r, offset, local.byteSize());
        if (mine != null) {
            if (read) {
                MemorySegment.copy(mine, 0, local, 0, local.byteSize());
            } else {
                MemorySegment.copy(local, 0, mine, 0, local.byteSize());
            }
            return i;
        }
        try {
            var target = client.segment(r);
            requests.add(read ? TransferRequest.read(local, target, r.address() + offset)
                    : TransferRequest.write(local, target, r.address() + offset));
            task[i] = requests.size() - 1;
        } catch (RuntimeException e) {
            client.forgetSegment(r);
            failures[i] = new StoreException(StoreError.TRANSFER_FAIL, "segment " + r.engineSegment() + " ("
                    + r.segmentId() + ") unreachable: " + e.getMessage(), e);
        }
        return i;
    }

    /** Adds writes of every part into every replica (consecutively within each replica). */
    void addWrites(List<ReplicaLocation> replicas, List<MemorySegment> parts) {
        for (ReplicaLocation r : replicas) {
            long off = 0;
            for (MemorySegment part : parts) {
                if (part.byteSize() > 0) {
                    add(false, r, off, part);
                }
                off += part.byteSize();
            }
        }
    }

    /** Ids of the segments some write to which failed (writes added by {@link #addWrites} alone). */
    List<String> failedSegments(List<ReplicaLocation> replicas, List<MemorySegment> parts) {
        List<String> failed = new ArrayList<>();
        int w = 0;
        for (ReplicaLocation r : replicas) {
            for (MemorySegment part : parts) {
                if (part.byteSize() > 0 && failure(w++) != null && !failed.contains(r.segmentId())) {
                    failed.add(r.segmentId());
                }
            }
        }
        return failed;
    }

    /**
     * Submits the engine's share (as one batch per {@link #CHUNK} moves) and waits for all of it; then
     * {@link #failure} answers per move.
     */
    Transfers run() {
        ran = true;
        int n = requests.size();
        List<Batch> batches = new ArrayList<>((n + CHUNK - 1) / CHUNK);
        TransferStatus[] statuses = new TransferStatus[n];
        try {
            for (int from = 0; from < n; from += CHUNK) {
                int to = Math.min(n, from + CHUNK);
                Batch b = client.engine.allocateBatch(to - from);
                batches.add(b);
                b.submit(requests.subList(from, to));
            }
            for (int k = 0; k < batches.size(); k++) {
                Batch b = batches.get(k);
                b.completion().join();
                for (int t = 0; t < b.size(); t++) {
                    statuses[k * CHUNK + t] = b.status(t);
                }
            }
        } catch (TransferException e) {
            for (int i = 0; i < size; i++) {
                if (task[i] >= 0) {
                    failures[i] = new StoreException(StoreError.TRANSFER_FAIL, e.getMessage(), e);
                }
            }
            return this;
        } finally {
            batches.forEach(Batch::close);
        }
        for (int i = 0; i < size; i++) {
            if (task[i] >= 0) {
                failures[i] = failure(statuses[task[i]]);
            }
        }
        return this;
    }

    /** Null if move {@code i} succeeded, else why not (valid after {@link #run}). */
    StoreException failure(int i) {
        return failures[i];
    }

    /** The first failure of moves {@code [from, to)}, wrapped to name the key; null if all succeeded. */
    StoreException firstFailure(String key, String what, int from, int to) {
        for (int i = from; i < to; i++) {
            if (failures[i] != null) {
                return new StoreException(StoreError.TRANSFER_FAIL, what + " key '" + key + "': " + failures[i].getMessage(), failures[i]);
            }
        }
        return null;
    }

    int size() {
        return size;
    }

    private static StoreException failure(TransferStatus s) {
        return s.isCompleted() ? null : new StoreException(StoreError.TRANSFER_FAIL, s.state() + " " + s.error()
                + (s.message() == null ? "" : ": " + s.message()));
    }
}
