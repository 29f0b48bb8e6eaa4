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
 * Runs the offloads the master hands this node: polls the master ({@code Offloads}: results of the last round in,
 * waiting tasks out), copies each object's bytes from this node's memory segment to its disk segment through the
 * engine (one batch; the engine's nvmeof transport writes the file), makes them durable with one fdatasync for the
 * batch, and reports each task's CRC32C, computed over the memory it copied (which the master keeps from reuse while
 * the offload is in flight). A task that names memory or disk this node does not hold, or that the engine failed,
 * is reported failed; a task whose time ran out is not started.
 */
final class Offloader implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Offloader.class);
    /** Tasks taken per poll: one engine batch, one fdatasync. */
    static final int TASKS_PER_ROUND = 64;

    private final StoreClient client;
    private final MasterClient master;
    private final DiskSegment disk;
    private final ScheduledExecutorService thread;
    final LongAdder completed = new LongAdder();
    final LongAdder failed = new LongAdder();
    /** Tasks for a key this node was already offloading in the same round: the master must never send them. */
    final LongAdder duplicates = new LongAdder();

    Offloader(StoreClient client, MasterClient master, DiskSegment disk, long pollMillis) {
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

    private List<OffloadResult> run(List<OffloadTask> tasks) {
        long received = System.nanoTime();
        List<OffloadResult> results = new ArrayList<>(tasks.size());
        List<TransferRequest> writes = new ArrayList<>(tasks.size());
        List<OffloadTask> writing = new ArrayList<>(tasks.size());
        List<Long> crcs = new ArrayList<>(tasks.size());
        Set<String> keys = new HashSet<>();
        for (OffloadTask t : tasks) {
            if (!keys.add(t.getKey())) {
                duplicates.increment();
                results.add(failure(t, "a second offload of key '" + t.getKey() + "' in one round"));
                continue;
            }
            ReplicaLocation src = Wire.replica(t.getSource());
            ReplicaLocation dst = Wire.replica(t.getTarget());
            MemorySegment bytes;
            try {
                bytes = t.getSize() == src.length() && t.getSize() == dst.length() ? client.contributedRange(src, 0, t.getSize()) : null;
            } catch (IndexOutOfBoundsException e) {
                bytes = null;
            }
            if (bytes == null || !dst.segmentId().equals(disk.spec.id()) || !disk.holds(dst.address(), t.getSize())) {
                results.add(failure(t, "offload of key '" + t.getKey() + "' names memory " + src.segmentId() + " at "
                        + src.address() + " or disk " + dst.segmentId() + " at " + dst.address() + " (" + t.getSize()
                        + " bytes) that this node does not hold"));
                continue;
            }
            crcs.add(DiskSegment.crc32c(bytes));
            writes.add(TransferRequest.write(bytes, client.engine().localSegment(), dst.address()));
            writing.add(t);
        }
        if (writes.isEmpty()) {
            return results;
        }
        TransferStatus[] statuses = new TransferStatus[writes.size()];
        try (Batch b = client.engine().allocateBatch(writes.size())) {
            b.submit(writes);
            b.completion().join();
            for (int i = 0; i < statuses.length; i++) {
                statuses[i] = b.status(i);
            }
        } catch (RuntimeException e) {
            for (OffloadTask t : writing) {
                results.add(failure(t, "writing key '" + t.getKey() + "' to " + disk.file.path() + ": " + e.getMessage()));
            }
            return results;
        }
        String syncFailed = null;
        try {
            disk.sync();
        } catch (IOException e) {
            syncFailed = "fdatasync of " + disk.file.path() + " failed: " + e;
        }
        for (int i = 0; i < writing.size(); i++) {
            OffloadTask t = writing.get(i);
            TransferStatus s = statuses[i];
            if (syncFailed != null || !s.isCompleted()) {
                results.add(failure(t, syncFailed != null ? syncFailed : "writing key '" + t.getKey() + "' to "
                        + disk.file.path() + ": " + s.state() + " " + s.error() + (s.message() == null ? "" : ": " + s.message())));
            } else if (System.nanoTime() - received > t.getTtlMs() * 1_000_000L) {
                // the master gave it up meanwhile: a late report is ignored there, so say what happened
                results.add(failure(t, "offload of key '" + t.getKey() + "' finished after its " + t.getTtlMs() + " ms"));
            } else {
                completed.increment();
                results.add(OffloadResult.newBuilder().setTaskId(t.getTaskId()).setOk(true).setCrc32C((int) (long) crcs.get(i)).build());
            }
        }
        return results;
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
