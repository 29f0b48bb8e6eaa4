package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;

import org.tent4j.api.Batch;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferStatus;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.proto.OffloadResult;
import org.tent4j.store.proto.OffloadTask;
import org.tent4j.store.rpc.Wire;

/**
 * The repairs among the master's tasks: each reads a live replica (on any node) through the engine into a range of
 * this node's memory and reports the CRC32C of what it read; the master adds the range as a replica on that report.
 */
final class RepairCopies {
    private RepairCopies() {
    }

    /**
     * Copies each repair's source replica into its target in one engine batch (a source in this process is copied
     * directly); {@code failure} makes (and counts) a failed result.
     */
    static List<OffloadResult> run(ReplicaAccess client, List<OffloadTask> tasks, long received,
                                   BiFunction<OffloadTask, String, OffloadResult> failure) {
        List<OffloadResult> results = new ArrayList<>(tasks.size());
        List<TransferRequest> reads = new ArrayList<>(tasks.size());
        List<OffloadTask> reading = new ArrayList<>(tasks.size());
        List<MemorySegment> landed = new ArrayList<>(tasks.size());
        for (OffloadTask t : tasks) {
            ReplicaLocation src = Wire.replica(t.getSource());
            ReplicaLocation dst = Wire.replica(t.getTarget());
            MemorySegment into;
            MemorySegment local;
            try {
                into = t.getSize() == dst.length() && t.getSize() == src.length() ? client.contributedRange(dst, 0, t.getSize()) : null;
                local = into == null ? null : client.contributedRange(src, 0, t.getSize());
            } catch (IndexOutOfBoundsException e) {
                into = null;
                local = null;
            }
            if (into == null || src.onDisk()) {
                results.add(failure.apply(t, "repair of key '" + t.getKey() + "' names memory " + dst.segmentId() + " at "
                        + dst.address() + " (" + t.getSize() + " bytes) that this node does not hold, or a source on disk"));
                continue;
            }
            if (local != null) {
                MemorySegment.copy(local, 0, into, 0, t.getSize());
                results.add(repaired(t, into, received, failure));
                continue;
            }
            try {
                reads.add(TransferRequest.read(into, client.segment(src), src.address()));
            } catch (RuntimeException e) {
                results.add(failure.apply(t, "repair of key '" + t.getKey() + "': opening segment " + src.engineSegment()
                        + ": " + e.getMessage()));
                continue;
            }
            reading.add(t);
            landed.add(into);
        }
        if (reads.isEmpty()) {
            return results;
        }
        try (Batch b = client.engine.allocateBatch(reads.size())) {
            b.submit(reads);
            b.completion().join();
            for (int i = 0; i < reading.size(); i++) {
                TransferStatus s = b.status(i);
                OffloadTask t = reading.get(i);
                results.add(s.isCompleted() ? repaired(t, landed.get(i), received, failure) : failure.apply(t, "repair of key '"
                        + t.getKey() + "' from " + Wire.replica(t.getSource()).segmentId() + ": " + s.state() + " "
                        + s.error() + (s.message() == null ? "" : ": " + s.message())));
            }
        } catch (RuntimeException e) {
            for (OffloadTask t : reading) {
                results.add(failure.apply(t, "repair of key '" + t.getKey() + "': " + e.getMessage()));
            }
        }
        return results;
    }

    private static OffloadResult repaired(OffloadTask t, MemorySegment bytes, long received,
                                          BiFunction<OffloadTask, String, OffloadResult> failure) {
        if (Offloader.late(t, received)) {
            return failure.apply(t, "repair of key '" + t.getKey() + "' finished after its " + t.getTtlMs() + " ms");
        }
        return OffloadResult.newBuilder().setTaskId(t.getTaskId()).setOk(true).setCrc32C((int) DiskSegment.crc32c(bytes)).build();
    }
}
