package org.tent4j.store.master;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongConsumer;

import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.Tier;
import org.tent4j.store.master.Command.OffloadResult;
import org.tent4j.store.master.Command.OffloadTask;

/**
 * Demotion from memory to disk. Eviction starts an offload instead of dropping a victim when its memory replica's
 * owner has a disk segment with room: a disk range is reserved, the object is marked (one offload per object:
 * {@link ObjectRecord#offloadTask}), and a task waits for the owner to take it ({@link Command.TakeOffloads}). The
 * owner copies the bytes through its engine, makes them durable, and reports the CRC32C ({@link Command.OffloadDone});
 * only then the object switches to its disk replica and its memory is freed. A task that fails, expires or whose
 * object changed meanwhile gives its disk range back; one the node may still be writing (expired, cancelled) is parked
 * until the node can no longer write it. The memory of the offloads in flight is room already being made: eviction
 * rounds count it as freed ({@link #memoryBytesInFlight}) and a put waits for it ({@link ContiguousRoom#beingMade}) rather than
 * start more. Every change here comes from a command and its time, so a replay hands out
 * and completes the same offloads. {@link Repairs} hands tasks out the same way: a repair copies a live memory replica
 * (on any node) into a range of the node that takes the task, and its report adds that range as a replica. A
 * write-through put's offload ({@link #writeThrough}) is an offload started when the put ends instead of at eviction:
 * the object keeps its memory replica and gains the disk one beside it.
 */
final class Offloads {
    private final MasterState state;
    private final MasterCounters counters;
    private final long timeoutNanos;

    /** Offloads in flight by task id, in the order they started (so by deadline: one timeout for all). */
    private final LinkedHashMap<Long, Task> inFlight = new LinkedHashMap<>();
    /** Per client, tasks not yet handed out. */
    private final Map<String, ArrayDeque<Task>> queued = new HashMap<>();
    private long lastTaskId;
    /** Memory bytes of the objects being offloaded: freed when they complete, so eviction counts them as freed. */
    private long memoryBytes;
    /** Repairs in flight, in all and per client copying (the per-node bound). */
    private int repairs;
    private final Map<String, Integer> repairsByClient = new HashMap<>();

    static final byte OFFLOAD = 0;
    /** The source is the object's disk replica and the target a memory range on its node. */
    static final byte PROMOTE = 1;
    /** The source is a live memory replica on any node, the target a memory range of the node taking the task. */
    static final byte REPAIR = 2;
    /** An offload of a write-through put: on completion the object keeps its memory replicas beside the disk one. */
    static final byte WRITE_THROUGH = 3;

    record Task(long id, String key, String client, long source, long target, long size, long memoryBytes, long deadline,
                byte kind) {
        boolean promote() {
            return kind == PROMOTE;
        }

        boolean repair() {
            return kind == REPAIR;
        }

        /** Whether it copies memory to disk (at eviction or for a write-through put). */
        boolean toDisk() {
            return kind == OFFLOAD || kind == WRITE_THROUGH;
        }
    }

    Offloads(MasterState state) {
        this.state = state;
        this.counters = state.counters;
        this.timeoutNanos = state.config().offloadTimeout().toNanos();
    }

    /** Whether eviction offloads: asked for, and some disk segment is mounted. */
    boolean enabled() {
        return state.config().offloadOnEvict() && state.segments.disks().length > 0;
    }

    synchronized long memoryBytesInFlight() {
        return memoryBytes;
    }

    /** The offloads in flight (not promotions, repairs or write-throughs): their objects' memory comes free on completion. */
    synchronized List<Task> offloadsInFlight() {
        return inFlight.values().stream().filter(t -> t.kind == OFFLOAD).toList();
    }

    synchronized int inFlightCount() {
        return inFlight.size();
    }

    /** Whether {@code clientId} has tasks waiting to be taken (read off the stream: a poll with nothing to take is no command). */
    synchronized boolean hasQueued(String clientId) {
        ArrayDeque<Task> q = queued.get(clientId);
        return q != null && !q.isEmpty();
    }

    /** Whether {@code taskId} is in flight and was handed to {@code clientId}. */
    synchronized boolean isInFlight(long taskId, String clientId) {
        Task t = inFlight.get(taskId);
        return t != null && t.client.equals(clientId);
    }

    /**
     * Starts an offload of {@code rec} (an eviction victim, its shard lock held): true if one started, false when none
     * can (no disk segment of a replica's owner with room), so the caller drops it as before.
     */
    boolean start(long now, String key, ObjectRecord rec, long memoryFootprint) {
        return begin(now, key, rec, memoryFootprint, OFFLOAD);
    }

    /**
     * Starts the offload of a write-through put that just ended ({@code rec}, its shard lock held), if a memory
     * replica's owner has a disk segment with room: the object stays readable from memory meanwhile and afterwards.
     * Its memory is not counted as coming free (it stays).
     */
    void writeThrough(long now, String key, ObjectRecord rec) {
        if (begin(now, key, rec, 0, WRITE_THROUGH)) {
            counters.writeThroughStarted.increment();
        }
    }

    private boolean begin(long now, String key, ObjectRecord rec, long memoryFootprint, byte kind) {
        if (rec.offloadTask != 0 || rec.disk != -1) {
            // eviction never picks such an object; if it ever did, this is where a second copy would have started
            counters.offloadsDuplicate.increment();
            return false;
        }
        long source = -1;
        for (long r : rec.replicas()) {
            MountedSegment mem = state.segments.at(ObjectRecord.segment(r));
            if (!mem.mounted()) {
                continue;
            }
            source = source == -1 ? r : source;
            MountedSegment disk = state.segments.diskOf(mem.owner);
            long off = disk == null ? -1 : disk.allocate(rec.size);
            if (off >= 0) {
                queue(now, key, rec, r, disk, off, memoryFootprint, kind);
                return true;
            }
        }
        // no owner of a memory replica has a disk with room: another node's disk, whose node pulls the bytes
        MountedSegment[] disks = source == -1 ? new MountedSegment[0] : state.segments.disksByRoom();
        for (MountedSegment disk : disks) {
            long off = disk.allocate(rec.size);
            if (off >= 0) {
                queue(now, key, rec, source, disk, off, memoryFootprint, kind);
                counters.offloadsRemote.increment();
                return true;
            }
        }
        if (kind == OFFLOAD && disks.length > 0) {
            counters.offloadsNoSpace.increment(); // a victim about to be dropped; a write-through put stays
        }
        return false;
    }

    /**
     * Queues the offload of {@code rec} from memory replica {@code source} into the range at {@code off} of {@code disk}
     * (allocated) for the disk's owner, which writes its own file (the engine has no remote flush, so only the disk's
     * node can make the bytes durable); it reads a source on another node through its engine.
     */
    private void queue(long now, String key, ObjectRecord rec, long source, MountedSegment disk, long off,
                       long memoryFootprint, byte kind) {
        synchronized (this) {
            rec.offloadTask = add(new Task(++lastTaskId, key, disk.owner, source, ObjectRecord.pack(disk.index, off),
                    rec.size, memoryFootprint, now + timeoutNanos, kind));
        }
        counters.offloadsStarted.increment();
    }

    /**
     * Starts copying a disk-only object (its shard lock held) back into memory on its disk's node, if that node has a
     * memory segment with room: the read that asked goes on from disk meanwhile, and later ones find memory first.
     */
    void promote(long now, String key, ObjectRecord rec) {
        MountedSegment disk = state.segments.at(ObjectRecord.segment(rec.disk));
        MountedSegment mem = disk.mounted() ? state.segments.memoryOf(disk.owner) : null;
        long off = mem == null ? -1 : mem.allocate(rec.size);
        if (off < 0) {
            return; // no room now: a later read tries again
        }
        synchronized (this) {
            rec.offloadTask = add(new Task(++lastTaskId, key, disk.owner, rec.disk, ObjectRecord.pack(mem.index, off),
                    rec.size, 0, now + timeoutNanos, PROMOTE));
        }
        counters.promotionsStarted.increment();
        if (state.segments.overHighWatermark()) {
            state.segments.wantEviction(); // as a put's placement would
        }
    }

    /**
     * Starts a repair of {@code rec} (its shard lock held): {@code target} (a range allocated on a memory segment of
     * {@code client}) is filled from {@code source}, one of its live memory replicas.
     */
    void repair(long now, String key, ObjectRecord rec, String client, long source, long target) {
        synchronized (this) {
            rec.offloadTask = add(new Task(++lastTaskId, key, client, source, target, rec.size, 0, now + timeoutNanos, REPAIR));
        }
        counters.repairsStarted.increment();
    }

    synchronized int repairsInFlight() {
        return repairs;
    }

    synchronized int repairsInFlight(String client) {
        return repairsByClient.getOrDefault(client, 0);
    }

    private long add(Task t) {
        inFlight.put(t.id, t);
        queued.computeIfAbsent(t.client, c -> new ArrayDeque<>()).add(t);
        memoryBytes += t.memoryBytes;
        if (t.repair()) {
            repairs++;
            repairsByClient.merge(t.client, 1, Integer::sum);
        }
        return t.id;
    }

    /** Accounts for {@code t} leaving {@link #inFlight} (this part's lock held). */
    private void left(Task t) {
        memoryBytes -= t.memoryBytes;
        if (t.repair()) {
            repairs--;
            repairsByClient.merge(t.client, -1, (a, b) -> a + b == 0 ? null : a + b);
        }
    }

    /** Hands out up to {@code max} of the client's waiting tasks, each with the time left to do it. */
    List<OffloadTask> take(long now, String clientId, int max) {
        List<Task> taken = new ArrayList<>();
        synchronized (this) {
            ArrayDeque<Task> q = queued.get(clientId);
            while (q != null && !q.isEmpty() && taken.size() < max) {
                Task t = q.poll();
                if (inFlight.get(t.id) == t && t.deadline > now) {
                    taken.add(t); // else cancelled or expired meanwhile
                }
            }
            if (q != null && q.isEmpty()) {
                queued.remove(clientId);
            }
        }
        // outside this part's lock: a promotion's CRC is read under the object's shard lock
        List<OffloadTask> out = new ArrayList<>(taken.size());
        for (Task t : taken) {
            ReplicaLocation src = location(t.source, t.size, t);
            ReplicaLocation dst = location(t.target, t.size, t);
            if (src != null && dst != null) { // else its segment went: the sweep cancels it
                out.add(new OffloadTask(t.id, t.key, t.size, src, dst, t.deadline - now, t.promote(), t.repair(),
                        putId(t.key)));
            }
        }
        return out;
    }

    /** The put id of the object {@code key}: what its node records beside the disk replica, to name it after a restart. */
    private long putId(String key) {
        ObjectTable.Shard shard = state.objects.shard(key);
        synchronized (shard) {
            ObjectRecord rec = shard.map.get(key);
            return rec == null ? 0 : rec.putId;
        }
    }

    /** Where {@code replica} lies (a disk one with the object's CRC32C, for a promotion to check); null if unmounted. */
    private ReplicaLocation location(long replica, long size, Task t) {
        MountedSegment seg = state.segments.at(ObjectRecord.segment(replica));
        if (!seg.mounted()) {
            return null;
        }
        long off = ObjectRecord.offset(replica);
        if (!seg.disk) {
            return new ReplicaLocation(seg.spec.id(), seg.spec.engineSegment(), seg.spec.host(), seg.spec.base() + off, size);
        }
        long crc = -1;
        if (t.promote()) {
            ObjectTable.Shard shard = state.objects.shard(t.key);
            synchronized (shard) {
                ObjectRecord rec = shard.map.get(t.key);
                crc = rec == null ? -1 : Integer.toUnsignedLong(rec.crc);
            }
        }
        return new ReplicaLocation(seg.spec.id(), seg.spec.engineSegment(), seg.spec.host(), seg.spec.base() + off, size,
                Tier.DISK, crc, seg.spec.file(), off);
    }

    /** The node's reports: a durable copy switches the object to its disk replica; a failure gives the range back. */
    void done(long now, String clientId, List<OffloadResult> results) {
        for (OffloadResult r : results) {
            Task t;
            synchronized (this) {
                t = inFlight.get(r.taskId());
                if (t == null || !t.client.equals(clientId)) {
                    continue; // expired or cancelled before the report, or not this client's: its range is handled
                }
                inFlight.remove(t.id);
                left(t);
            }
            MountedSegment target = state.segments.at(ObjectRecord.segment(t.target));
            ObjectTable.Shard shard = state.objects.shard(t.key);
            synchronized (shard) {
                ObjectRecord rec = shard.map.get(t.key);
                boolean current = rec != null && rec.offloadTask == t.id;
                if (current) {
                    rec.offloadTask = 0;
                }
                if (t.repair()) {
                    state.repairs.done(now, t, rec, current, r);
                    continue;
                }
                if (!current || !r.ok()) {
                    // the node stopped writing (it reported): the range can go back now
                    target.free(ObjectRecord.offset(t.target), t.size);
                    if (current && t.toDisk()) {
                        failed(rec, t);
                    }
                    continue;
                }
                if (t.promote()) {
                    // in memory again beside its disk replica: eviction later only drops the memory copy
                    rec.setReplicas(new long[]{t.target});
                    rec.hits = 0;
                    counters.promotionsCompleted.increment();
                    continue;
                }
                rec.disk = t.target;
                rec.crc = (int) r.crc32c();
                if (t.kind == WRITE_THROUGH) {
                    // on disk beside its memory replicas (as a promoted object): a later eviction only drops memory
                    state.repairs.mark(t.key, rec);
                    counters.offloadsCompleted.increment();
                    continue;
                }
                long[] memory = rec.replicas();
                rec.setReplicas(new long[0]);
                state.repairs.mark(t.key, rec); // its disk replica stands for the memory ones now
                if (rec.lease > now) {
                    // readers holding a lease may still be copying from memory
                    state.parking.park(memory, rec.size, rec.lease);
                } else {
                    state.segments.free(memory, rec.size);
                }
                // it left memory: counted as evicted, as a victim dropped is (completed last: a reader of the
                // counters that sees it completed sees its memory freed)
                counters.offloadsCompleted.increment();
                counters.evictedObjects.increment();
                counters.evictedBytes.add(t.memoryBytes);
            }
        }
    }

    /**
     * Gives up offloads past their deadline: the object stays in memory (the next eviction drops it), the range is
     * parked for another timeout, since the node may still be writing it.
     */
    void expire(long now) {
        List<Task> due = new ArrayList<>();
        synchronized (this) {
            for (Iterator<Task> it = inFlight.values().iterator(); it.hasNext(); ) {
                Task t = it.next();
                if (t.deadline > now) {
                    break;
                }
                it.remove();
                left(t);
                due.add(t);
            }
        }
        for (Task t : due) {
            state.parking.park(new long[]{t.target}, t.size, now + timeoutNanos);
            ObjectTable.Shard shard = state.objects.shard(t.key);
            synchronized (shard) {
                ObjectRecord rec = shard.map.get(t.key);
                if (rec != null && rec.offloadTask == t.id) {
                    rec.offloadTask = 0;
                    if (t.toDisk()) {
                        failed(rec, t);
                    }
                }
                if (t.repair()) {
                    counters.repairsExpired.increment(); // the object stays a candidate: a later tick tries again
                }
            }
        }
    }

    /**
     * An offload of {@code rec} failed or expired: an eviction victim is flagged so the next eviction drops it rather
     * than trying again; a write-through put stays in memory as any put, so its eviction may still offload it.
     */
    private void failed(ObjectRecord rec, Task t) {
        if (t.kind == OFFLOAD) {
            rec.flags |= ObjectRecord.OFFLOAD_FAILED;
        }
        counters.offloadsFailed.increment();
    }

    /** Whether the offload in flight of {@code rec} (if any) writes to a segment marked in {@code dropped}. */
    synchronized boolean touches(ObjectRecord rec, boolean[] dropped) {
        Task t = rec.offloadTask == 0 ? null : inFlight.get(rec.offloadTask);
        return t != null && dropped[ObjectRecord.segment(t.target)];
    }

    /**
     * The object changed (removed, upserted, a segment of it gone) while an offload of it was in flight (its shard lock
     * held): the offload is dropped and its range parked until the node can no longer write it. Returns until when the
     * node may still read the task's source (its deadline; 0 when none was in flight): the caller keeps the object's
     * old ranges from reuse until then, since that node may be another than the source's (it pulls them through its
     * engine) and no reuse may feed it someone else's bytes.
     */
    long cancel(ObjectRecord rec) {
        if (rec.offloadTask == 0) {
            return 0;
        }
        Task t;
        synchronized (this) {
            t = inFlight.remove(rec.offloadTask);
            if (t != null) {
                left(t);
            }
        }
        rec.offloadTask = 0;
        if (t != null) {
            state.parking.park(new long[]{t.target}, t.size, t.deadline + timeoutNanos);
            if (t.repair()) {
                counters.repairsCancelled.increment();
            } else if (!t.promote()) {
                counters.offloadsCancelled.increment();
            }
        }
        return t == null ? 0 : t.deadline;
    }

    /**
     * Hands each task in flight's source and target to {@code packed} ({@link IndexSweep}: the segment indexes still
     * named). A task no longer in flight is never looked at again ({@link #take} skips it), so what it names does not
     * count.
     */
    synchronized void references(LongConsumer packed) {
        for (Task t : inFlight.values()) {
            packed.accept(t.source);
            packed.accept(t.target);
        }
    }

    /** Every task in flight, for a snapshot, in start order, with whether it is still waiting to be taken. */
    synchronized List<Map.Entry<Task, Boolean>> snapshot() {
        List<Map.Entry<Task, Boolean>> out = new ArrayList<>();
        for (Task t : inFlight.values()) {
            ArrayDeque<Task> q = queued.get(t.client);
            out.add(Map.entry(t, q != null && q.contains(t)));
        }
        return out;
    }

    synchronized long lastTaskId() {
        return lastTaskId;
    }

    /** Puts back a snapshot's task (a restore, before the first command). */
    synchronized void restore(Task t, boolean waiting, long lastId) {
        if (t != null) {
            inFlight.put(t.id, t);
            memoryBytes += t.memoryBytes;
            if (t.repair()) {
                repairs++;
                repairsByClient.merge(t.client, 1, Integer::sum);
            }
            if (waiting) {
                queued.computeIfAbsent(t.client, c -> new ArrayDeque<>()).add(t);
            }
        }
        lastTaskId = lastId;
    }
}
