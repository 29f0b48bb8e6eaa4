package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;

import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.StoreException;
import org.tent4j.store.proto.OffloadResult;
import org.tent4j.store.proto.OffloadTask;
import org.tent4j.store.rpc.Wire;

/**
 * Offloads to this node's disk of objects held in another node's memory: the master hands them to the disk's node
 * (the engine has no remote flush, so only it can make the bytes durable in its file), which reads each source through
 * its engine (tcp or shm: one batch) into a 4 KiB-aligned slice of its staging memory; the {@link Offloader} then
 * writes the slices to its file as it writes its own memory, CRC32C computed over the bytes written. The master keeps
 * the source's range from reuse while the task is in flight.
 */
final class OffloadPulls implements AutoCloseable {
    private static final long ALIGN = 4096;

    private final ReplicaAccess client;
    private final List<StagingBuffer.Lease> leases = new ArrayList<>();
    /** Task id -> the pulled bytes. */
    private final Map<Long, MemorySegment> pulled = new HashMap<>();

    OffloadPulls(ReplicaAccess client) {
        this.client = client;
    }

    /** Whether {@code t} is an offload whose source lies in memory this node did not contribute. */
    static boolean remote(ReplicaAccess client, OffloadTask t) {
        if (t.getPromote() || t.getRepair()) {
            return false;
        }
        ReplicaLocation src = Wire.replica(t.getSource());
        return !src.onDisk() && !client.contributes(src.segmentId());
    }

    /**
     * Reads every task's source into staging memory (one engine batch); a task whose read failed gets a failed
     * result from {@code failure} in {@code results}, the others' bytes are {@link #bytes}.
     */
    void run(List<OffloadTask> tasks, List<OffloadResult> results, BiFunction<OffloadTask, String, OffloadResult> failure) {
        if (tasks.isEmpty()) {
            return;
        }
        Transfers reads = new Transfers(client, tasks.size());
        List<OffloadTask> reading = new ArrayList<>(tasks.size());
        List<MemorySegment> into = new ArrayList<>(tasks.size());
        for (OffloadTask t : tasks) {
            ReplicaLocation src = Wire.replica(t.getSource());
            if (t.getSize() != src.length() || t.getSize() <= 0) {
                results.add(failure.apply(t, "offload of key '" + t.getKey() + "' names a source of " + src.length()
                        + " bytes for " + t.getSize()));
                continue;
            }
            MemorySegment slice = aligned(t.getSize());
            reads.add(true, src, 0, slice);
            reading.add(t);
            into.add(slice);
        }
        reads.run();
        for (int i = 0; i < reading.size(); i++) {
            OffloadTask t = reading.get(i);
            StoreException e = reads.failure(i);
            if (e == null) {
                pulled.put(t.getTaskId(), into.get(i));
            } else {
                results.add(failure.apply(t, "reading key '" + t.getKey() + "' from segment "
                        + Wire.replica(t.getSource()).segmentId() + " of another node: " + e.getMessage()));
            }
        }
    }

    /** The bytes pulled for {@code t}, or null (not pulled, or its read failed). */
    MemorySegment bytes(OffloadTask t) {
        return pulled.get(t.getTaskId());
    }

    /** A staging slice of {@code size} bytes starting on a 4 KiB boundary, so the write to the file can bypass the page cache. */
    private MemorySegment aligned(long size) {
        StagingBuffer.Lease lease = client.staging().borrow(size + ALIGN - 1);
        leases.add(lease);
        long skip = (ALIGN - lease.segment().address() % ALIGN) % ALIGN;
        return lease.segment().asSlice(skip, size);
    }

    @Override
    public void close() {
        for (StagingBuffer.Lease l : leases) {
            client.staging().release(l);
        }
        leases.clear();
        pulled.clear();
    }
}
