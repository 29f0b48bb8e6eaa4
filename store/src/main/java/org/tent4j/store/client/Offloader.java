package org.tent4j.store.client;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.Batch;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferStatus;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.StoreException;
import org.tent4j.store.proto.OffloadResult;
import org.tent4j.store.proto.OffloadTask;
import org.tent4j.store.rpc.MasterClient;
import org.tent4j.store.rpc.Wire;

/**
 * Runs the offloads (and promotions: disk back to memory, each checked against its CRC32C) and the repairs the master
 * hands this node: polls the master ({@code Offloads}: results of the last round in,
 * waiting tasks out), copies each object's bytes from this node's memory segment to its disk segment through the
 * engine (one batch; the engine's nvmeof transport writes the file), makes them durable with one fdatasync for the
 * batch, and reports each task's CRC32C, computed over the memory it copied (which the master keeps from reuse while
 * the offload is in flight). A repair reads a live replica (on any node) through the engine into a range of this
 * node's memory and reports the CRC32C of what it read; the master adds the range as a replica on that report. A node
 * without a disk segment runs repairs only. A task that names memory or disk this node does not hold, or that the
 * engine failed, is reported failed; a task whose time ran out is not started.
 */
final class Offloader implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Offloader.class);
    /** Tasks taken per poll: one engine batch, one fdatasync. */
    static final int TASKS_PER_ROUND = 64;

    private final ReplicaAccess client;
    private final MasterClient master;
    /** Null on a node without a disk segment: it is handed repairs only. */
    private final DiskSegment disk;
    private final ScheduledExecutorService thread;
    final LongAdder completed = new LongAdder();
    final LongAdder failed = new LongAdder();
    /** Repairs this node copied and reported done. */
    final LongAdder repairs = new LongAdder();
    /** Tasks for a key this node was already offloading in the same round: the master must never send them. */
    final LongAdder duplicates = new LongAdder();

    Offloader(ReplicaAccess client, MasterClient master, DiskSegment disk, long pollMillis) {
        this.client = client;
        this.master = master;
        this.disk = disk;
        this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "store-client-offload");
            t.setDaemon(true);
            return t;
        });
        thread.scheduleWithFixedDelay(this::poll, pollMillis, pollMillis, TimeUnit.MILLISECONDS);
    }

    /** Takes and runs tasks until the master has none left, reporting each round's results with the next poll. */
    void poll() {
        List<OffloadResult> results = List.of();
        try {
            while (true) {
                List<OffloadTask> tasks = master.offloads(client.id(), results, TASKS_PER_ROUND);
                if (tasks.isEmpty()) {
                    return;
                }
                results = run(tasks);
            }
        } catch (StoreException e) {
            // results not reported are lost; their tasks expire at the master and their ranges come back
            LOG.warn("offload poll of master {} failed: {}", master.address(), e.getMessage());
        } catch (RuntimeException e) {
            LOG.error("offloads failed", e);
        }
    }

    private List<OffloadResult> run(List<OffloadTask> all) {
        long received = System.nanoTime();
        List<OffloadResult> results = new ArrayList<>(all.size());
        List<OffloadTask> tasks = new ArrayList<>(all.size());
        List<OffloadTask> repairing = new ArrayList<>();
        for (OffloadTask t : all) {
            (t.getRepair() ? repairing : tasks).add(t);
        }
        if (!repairing.isEmpty()) {
            results.addAll(repair(repairing, received));
        }
        List<TransferRequest> moves = new ArrayList<>(tasks.size());
        List<OffloadTask> moving = new ArrayList<>(tasks.size());
        List<MemorySegment> memory = new ArrayList<>(tasks.size());
        List<Long> crcs = new ArrayList<>(tasks.size());
        Set<String> keys = new HashSet<>();
        boolean writes = false;
        for (OffloadTask t : tasks) {
            if (!keys.add(t.getKey())) {
                duplicates.increment();
                results.add(failure(t, "a second task for key '" + t.getKey() + "' in one round"));
                continue;
            }
            // an offload moves memory -> disk, a promotion disk -> memory: either way one side of each is this node's
            ReplicaLocation mem = Wire.replica(t.getPromote() ? t.getTarget() : t.getSource());
            ReplicaLocation disk = Wire.replica(t.getPromote() ? t.getSource() : t.getTarget());
            MemorySegment bytes;
            try {
                bytes = t.getSize() == mem.length() && t.getSize() == disk.length() ? client.contributedRange(mem, 0, t.getSize()) : null;
            } catch (IndexOutOfBoundsException e) {
                bytes = null;
            }
            if (bytes == null || this.disk == null || !disk.segmentId().equals(this.disk.spec.id())
                    || !this.disk.holds(disk.address(), t.getSize())) {
                results.add(failure(t, "task for key '" + t.getKey() + "' names memory " + mem.segmentId() + " at "
                        + mem.address() + " or disk " + disk.segmentId() + " at " + disk.address() + " (" + t.getSize()
                        + " bytes) that this node does not hold"));
                continue;
            }
            if (t.getPromote()) {
                crcs.add(disk.crc32c());
                moves.add(TransferRequest.read(bytes, client.engine.localSegment(), disk.address()));
            } else {
                crcs.add(DiskSegment.crc32c(bytes));
                moves.add(TransferRequest.write(bytes, client.engine.localSegment(), disk.address()));
                writes = true;
            }
            moving.add(t);
            memory.add(bytes);
        }
        if (moves.isEmpty()) {
            return results;
        }
        TransferStatus[] statuses = new TransferStatus[moves.size()];
        try (Batch b = client.engine.allocateBatch(moves.size())) {
            b.submit(moves);
            b.completion().join();
            for (int i = 0; i < statuses.length; i++) {
                statuses[i] = b.status(i);
            }
        } catch (RuntimeException e) {
            for (OffloadTask t : moving) {
                results.add(failure(t, "moving key '" + t.getKey() + "' to or from " + disk.file.path() + ": " + e.getMessage()));
            }
            return results;
        }
        String syncFailed = null;
        if (writes) {
            try {
                disk.sync();
            } catch (IOException e) {
                syncFailed = "fdatasync of " + disk.file.path() + " failed: " + e;
            }
        }
        for (int i = 0; i < moving.size(); i++) {
            OffloadTask t = moving.get(i);
            TransferStatus s = statuses[i];
            if (!s.isCompleted()) {
                results.add(failure(t, "moving key '" + t.getKey() + "' to or from " + disk.file.path() + ": " + s.state()
                        + " " + s.error() + (s.message() == null ? "" : ": " + s.message())));
            } else if (!t.getPromote() && syncFailed != null) {
                results.add(failure(t, syncFailed));
            } else if (t.getPromote() && DiskSegment.crc32c(memory.get(i)) != crcs.get(i)) {
                client.checksumFailures.increment();
                results.add(failure(t, "promotion of key '" + t.getKey() + "': the bytes at offset "
                        + Wire.replica(t.getSource()).fileOffset() + " of " + disk.file.path() + " do not match their CRC32C"));
            } else if (System.nanoTime() - received > t.getTtlMs() * 1_000_000L) {
                // the master gave it up meanwhile: a late report is ignored there, so say what happened
                results.add(failure(t, "task for key '" + t.getKey() + "' finished after its " + t.getTtlMs() + " ms"));
            } else {
                if (!t.getPromote()) {
                    completed.increment();
                }
                results.add(OffloadResult.newBuilder().setTaskId(t.getTaskId()).setOk(true).setCrc32C((int) (long) crcs.get(i)).build());
            }
        }
        return results;
    }

    /**
     * Copies each repair's source replica into its target, a range of this node's memory, in one engine batch (a
     * source in this process is copied directly), and reports the CRC32C of the bytes copied.
     */
    private List<OffloadResult> repair(List<OffloadTask> tasks, long received) {
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
                results.add(failure(t, "repair of key '" + t.getKey() + "' names memory " + dst.segmentId() + " at "
                        + dst.address() + " (" + t.getSize() + " bytes) that this node does not hold, or a source on disk"));
                continue;
            }
            if (local != null) {
                MemorySegment.copy(local, 0, into, 0, t.getSize());
                results.add(repaired(t, into, received));
                continue;
            }
            try {
                reads.add(TransferRequest.read(into, client.segment(src), src.address()));
            } catch (RuntimeException e) {
                results.add(failure(t, "repair of key '" + t.getKey() + "': opening segment " + src.engineSegment() + ": " + e.getMessage()));
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
                results.add(s.isCompleted() ? repaired(t, landed.get(i), received) : failure(t, "repair of key '"
                        + t.getKey() + "' from " + Wire.replica(t.getSource()).segmentId() + ": " + s.state() + " "
                        + s.error() + (s.message() == null ? "" : ": " + s.message())));
            }
        } catch (RuntimeException e) {
            for (OffloadTask t : reading) {
                results.add(failure(t, "repair of key '" + t.getKey() + "': " + e.getMessage()));
            }
        }
        return results;
    }

    private OffloadResult repaired(OffloadTask t, MemorySegment bytes, long received) {
        if (System.nanoTime() - received > t.getTtlMs() * 1_000_000L) {
            return failure(t, "repair of key '" + t.getKey() + "' finished after its " + t.getTtlMs() + " ms");
        }
        repairs.increment();
        return OffloadResult.newBuilder().setTaskId(t.getTaskId()).setOk(true).setCrc32C((int) DiskSegment.crc32c(bytes)).build();
    }

    private OffloadResult failure(OffloadTask t, String why) {
        failed.increment();
        LOG.warn("offload task {} failed: {}", t.getTaskId(), why);
        return OffloadResult.newBuilder().setTaskId(t.getTaskId()).setOk(false).setError(why).build();
    }

    @Override
    public void close() {
        thread.shutdownNow();
        try {
            thread.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
