package org.tent4j.store.client;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.Batch;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferStatus;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.StoreException;
import org.tent4j.store.proto.FreedRange;
import org.tent4j.store.proto.OffloadResult;
import org.tent4j.store.proto.OffloadTask;
import org.tent4j.store.proto.OffloadsResponse;
import org.tent4j.store.rpc.MasterClient;
import org.tent4j.store.rpc.Wire;

/**
 * Runs the offloads (and promotions: disk back to memory, each checked against its CRC32C) and the repairs
 * ({@link RepairCopies}) the master hands this node: polls the master ({@code Offloads}: results of the last round in,
 * waiting tasks out), copies each object's bytes from this node's memory segment to its disk segment through the
 * engine (one batch; the engine's nvmeof transport writes the file), makes them durable with one fdatasync for the
 * batch, records them in the disk index (made durable too: {@link #record}), and reports each task's CRC32C, computed
 * over the memory it copied (which the master keeps from reuse while the offload is in flight). An offload of an
 * object held in another node's memory ({@link OffloadPulls}) is read through the engine into staging memory first and
 * written from there like the others. A node without a disk
 * segment runs repairs only. A task that names memory or disk this node does not hold, or that the engine failed, is
 * reported failed; a task whose time ran out is not started.
 */
final class Offloader implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Offloader.class);
    /** The shortest delay between polls, kept while polls find tasks. */
    static final long BUSY_POLL_MILLIS = 2;
    /** Tasks taken per poll: one engine batch, one fdatasync. */
    static final int TASKS_PER_ROUND = 64;

    private final ReplicaAccess client;
    private final MasterClient master;
    /** Null on a node without a disk segment: it is handed repairs only. */
    private final DiskSegment disk;
    private final ScheduledExecutorService thread;
    private final long pollMillis;
    final LongAdder completed = new LongAdder();
    final LongAdder failed = new LongAdder();
    /** Tasks for a key this node was already offloading in the same round: the master must never send them. */
    final LongAdder duplicates = new LongAdder();
    /** The last freed range recorded as a tombstone, confirmed with each poll. */
    private final AtomicLong freedAck = new AtomicLong();

    Offloader(ReplicaAccess client, MasterClient master, DiskSegment disk, long pollMillis) {
        this.client = client;
        this.master = master;
        this.disk = disk;
        this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "store-client-offload");
            t.setDaemon(true);
            return t;
        });
        this.pollMillis = pollMillis;
        schedule(pollMillis);
    }

    /**
     * The delay before the next poll: {@link #BUSY_POLL_MILLIS} after a poll that found work, doubling after each that
     * found none, up to the configured interval. A put into full memory waits for the offloads in flight (the master
     * starts no more for it), so the delay between polls sets the flood's pace: at a fixed 100 ms the overflow bench's
     * puts into a full tier (256 KiB values, two threads) ran at about 40/s. An idle node polls at the configured
     * interval as before.
     */
    static long nextDelay(boolean busy, long previous, long pollMillis) {
        return busy ? Math.min(BUSY_POLL_MILLIS, pollMillis) : Math.min(pollMillis, Math.max(BUSY_POLL_MILLIS, previous * 2));
    }

    private void schedule(long delayMillis) {
        try {
            thread.schedule(() -> {
                boolean busy = poll();
                schedule(nextDelay(busy, delayMillis, pollMillis));
            }, delayMillis, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException closed) {
            // closed: no more polls
        }
    }

    /**
     * Takes and runs tasks until the master has none left, reporting each round's results with the next poll. The
     * ranges the master freed on this disk come first: recorded as tombstones (durably) before the round's tasks run,
     * and confirmed with the next poll.
     */
    boolean poll() {
        List<OffloadResult> results = List.of();
        boolean busy = false;
        try {
            while (true) {
                OffloadsResponse r = master.offloads(client.id(), results, TASKS_PER_ROUND, freedAck.get());
                if (r.getFreedCount() > 0 && !forget(r.getFreedList())) {
                    // not recorded, so not confirmed (sent again next poll); the tasks must not run before they are
                    master.offloads(client.id(), fail(r.getTasksList(), "the disk index of " + disk.file.path()
                            + " could not be written"), 0, freedAck.get());
                    return false;
                }
                if (r.getTasksCount() == 0 && r.getFreedCount() == 0) {
                    return busy;
                }
                busy |= r.getTasksCount() > 0;
                results = run(r.getTasksList());
            }
        } catch (StoreException e) {
            // results not reported are lost; their tasks expire at the master and their ranges come back
            LOG.warn("offload poll of master {} failed: {}", master.address(), e.getMessage());
        } catch (RuntimeException e) {
            LOG.error("offloads failed", e);
        }
        return false;
    }

    private boolean forget(List<FreedRange> freed) {
        if (disk == null) {
            LOG.warn("master {} sent {} freed disk ranges to client {}, which has no disk segment", master.address(),
                    freed.size(), client.id());
            return true;
        }
        Map<Long, Long> gone = new TreeMap<>();
        long last = freedAck.get();
        for (FreedRange f : freed) {
            gone.put(f.getOffset(), f.getLength());
            last = Math.max(last, f.getSeq());
        }
        try {
            disk.index.append(List.of(), gone);
        } catch (IOException | RuntimeException e) {
            LOG.warn("recording {} freed ranges in the disk index of {} failed: {}", freed.size(), disk.file.path(), e.toString());
            return false;
        }
        freedAck.set(last);
        return true;
    }

    private List<OffloadResult> fail(List<OffloadTask> tasks, String why) {
        List<OffloadResult> out = new ArrayList<>(tasks.size());
        for (OffloadTask t : tasks) {
            out.add(failure(t, why));
        }
        return out;
    }

    /** The master forgot this node and it mounted its disk again: a new segment there, whose freed ranges count from 0. */
    void remounted() {
        freedAck.set(0);
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
            results.addAll(RepairCopies.run(client, repairing, received, this::failure));
        }
        try (OffloadPulls pulls = new OffloadPulls(client)) {
            List<OffloadTask> remote = new ArrayList<>();
            List<OffloadTask> rest = new ArrayList<>(tasks.size());
            for (OffloadTask t : tasks) {
                (disk != null && OffloadPulls.remote(client, t) ? remote : rest).add(t);
            }
            pulls.run(remote, results, this::failure);
            for (OffloadTask t : remote) {
                if (pulls.bytes(t) != null) {
                    rest.add(t);
                }
            }
            return move(rest, pulls, results, received);
        }
    }

    /**
     * Moves each task's bytes between memory (this node's, or {@code pulls}' copy of another node's) and this node's
     * disk in one engine batch, makes the writes durable and records them; adds each task's result.
     */
    private List<OffloadResult> move(List<OffloadTask> tasks, OffloadPulls pulls, List<OffloadResult> results, long received) {
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
            MemorySegment bytes = null;
            try {
                if (t.getSize() == mem.length() && t.getSize() == disk.length()) {
                    MemorySegment pulled = pulls.bytes(t);
                    bytes = pulled != null ? pulled : client.contributedRange(mem, 0, t.getSize());
                }
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
        Set<Long> recorded = new HashSet<>();
        if (writes) {
            try {
                disk.sync();
            } catch (IOException e) {
                syncFailed = "fdatasync of " + disk.file.path() + " failed: " + e;
            }
            syncFailed = record(moving, statuses, crcs, received, syncFailed, recorded);
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
            } else if (t.getPromote() ? late(t, received) : !recorded.contains(t.getTaskId())) {
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
     * Records the round's durable offloads in the disk index and makes it durable before any is reported, so the
     * master never switches an object to a disk replica this node could forget; a range written but not reported ok
     * gets a tombstone (the master gives it to another object). Why the offloads fail if the index could not be
     * written (null: recorded, or {@code syncFailed} already failed them).
     */
    private String record(List<OffloadTask> moving, TransferStatus[] statuses, List<Long> crcs, long received,
                          String syncFailed, Set<Long> recorded) {
        List<DiskIndex.Entry> done = new ArrayList<>();
        List<Long> ids = new ArrayList<>();
        Map<Long, Long> gone = new TreeMap<>();
        for (int i = 0; i < moving.size(); i++) {
            OffloadTask t = moving.get(i);
            if (t.getPromote()) {
                continue;
            }
            long offset = Wire.replica(t.getTarget()).fileOffset();
            if (syncFailed == null && statuses[i].isCompleted() && !late(t, received)) {
                done.add(new DiskIndex.Entry(t.getKey(), offset, t.getSize(), t.getPutId(), (int) (long) crcs.get(i)));
                ids.add(t.getTaskId());
            } else {
                gone.put(offset, t.getSize());
            }
        }
        try {
            disk.index.append(done, gone);
            recorded.addAll(ids);
            return syncFailed;
        } catch (IOException | RuntimeException e) {
            return syncFailed != null ? syncFailed : "recording the offloads in the disk index of " + disk.file.path()
                    + " failed: " + e;
        }
    }

    static boolean late(OffloadTask t, long received) {
        return System.nanoTime() - received > t.getTtlMs() * 1_000_000L;
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
