package org.tent4j.store.master;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.store.master.Command.OffloadResult;

/**
 * Brings objects back to the number of memory replicas their put asked for ({@link ObjectRecord#asked}) after a
 * node's segments went (its client expired, it unmounted) or a put found room for fewer. An object counts as
 * under-replicated when it is readable, has fewer memory replicas than asked and no disk replica: a disk replica is
 * where eviction chose to keep it, and copying it back into memory would undo that eviction, so the disk tier is not
 * repaired. Every change to the candidates is made by a command under the object's shard lock
 * ({@link #mark}, {@link #forget}), so the count is exact and a replay makes the same one.
 *
 * <p>Each tick ({@link #start}) walks the candidates in key order from where the last walk stopped and starts a
 * repair for each it can, within {@link MasterConfig#repairsInFlight} over the store and
 * {@link MasterConfig#repairsPerNode} per destination node, and never while memory is over its high watermark
 * (room goes to puts first, and eviction would take what a repair adds). A repair is an {@link Offloads} task: a range
 * allocated on a memory segment holding no replica of the object (one of another node first), handed to that
 * segment's node, which reads one live replica into it through its engine and reports; only the report
 * ({@link Command.OffloadDone}) adds the replica. The bytes never pass through the master.
 */
final class Repairs {
    private static final Logger LOG = LoggerFactory.getLogger(Repairs.class);
    /** Candidates looked at per tick: bounds the time a tick spends here when many cannot be placed. */
    static final int VISITS_PER_TICK = 1024;

    private final MasterState state;
    private final MasterCounters counters;
    /**
     * Keys of the objects flagged {@link ObjectRecord#UNDER_REPLICATED}. Sorted, so the walk's order does not depend on
     * the order they were added in: a restore rebuilds this from the flags and walks as the master it came from did.
     */
    private final TreeSet<String> candidates = new TreeSet<>();
    /** The last key the walk looked at; null: start from the first. */
    private String cursor;

    Repairs(MasterState state) {
        this.state = state;
        this.counters = state.counters;
    }

    static boolean under(ObjectRecord rec) {
        return rec.state == ObjectRecord.COMPLETE && rec.disk == -1 && rec.replicaCount() < rec.asked;
    }

    /** Updates whether {@code rec} (its shard lock held) is a candidate, after its replicas changed. */
    void mark(String key, ObjectRecord rec) {
        boolean under = under(rec);
        if (under == ((rec.flags & ObjectRecord.UNDER_REPLICATED) != 0)) {
            return;
        }
        if (under) {
            rec.flags |= ObjectRecord.UNDER_REPLICATED;
        } else {
            rec.flags &= ~ObjectRecord.UNDER_REPLICATED;
        }
        synchronized (this) {
            if (under) {
                candidates.add(key);
            } else {
                candidates.remove(key);
            }
        }
    }

    /** {@code rec} (its shard lock held) leaves the table. */
    void forget(String key, ObjectRecord rec) {
        if ((rec.flags & ObjectRecord.UNDER_REPLICATED) != 0) {
            rec.flags &= ~ObjectRecord.UNDER_REPLICATED;
            synchronized (this) {
                candidates.remove(key);
            }
        }
    }

    synchronized int underReplicated() {
        return candidates.size();
    }

    /** Starts the repairs the limits allow (a tick; the ordering point held). */
    void start(long now) {
        MasterConfig config = state.config();
        int budget = config.repairsInFlight() - state.offloads.repairsInFlight();
        if (budget <= 0 || config.repairsPerNode() == 0 || state.segments.overHighWatermark()) {
            return;
        }
        for (String key : next()) {
            if (budget == 0) {
                return;
            }
            ObjectTable.Shard shard = state.objects.shard(key);
            synchronized (shard) {
                ObjectRecord rec = shard.map.get(key);
                if (rec != null && !under(rec)) {
                    mark(key, rec);
                } else if (rec != null && !rec.inFlight() && rec.offloadTask == 0 && place(now, key, rec)) {
                    budget--;
                }
            }
            synchronized (this) {
                cursor = key;
            }
        }
    }

    /** Up to {@link #VISITS_PER_TICK} candidates after the cursor, wrapping around once. */
    private synchronized List<String> next() {
        List<String> out = new ArrayList<>(Math.min(VISITS_PER_TICK, candidates.size()));
        Iterable<String> after = cursor == null ? candidates : candidates.tailSet(cursor, false);
        for (String k : after) {
            if (out.size() == VISITS_PER_TICK) {
                return out;
            }
            out.add(k);
        }
        if (cursor != null) {
            for (String k : candidates.headSet(cursor, true)) {
                if (out.size() == VISITS_PER_TICK) {
                    break;
                }
                out.add(k);
            }
        }
        return out;
    }

    /**
     * Allocates the new replica's range and starts the task: on a memory segment holding no replica of the object, of
     * another node than those holding one if any has room, from a segment chosen by the key (spreading a dead node's
     * objects over the survivors without a random draw a replay could not repeat).
     */
    private boolean place(long now, String key, ObjectRecord rec) {
        long[] replicas = rec.replicas();
        long source = -1;
        for (long r : replicas) {
            if (state.segments.at(ObjectRecord.segment(r)).mounted()) {
                source = r;
                break;
            }
        }
        MountedSegment[] active = state.segments.active();
        if (source == -1 || active.length == 0) {
            return false;
        }
        int from = Math.floorMod(key.hashCode(), active.length);
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < active.length; i++) {
                MountedSegment seg = active[(from + i) % active.length];
                if (holds(replicas, seg, pass == 0)
                        || state.offloads.repairsInFlight(seg.owner) >= state.config().repairsPerNode()) {
                    continue;
                }
                long off = seg.allocate(rec.size);
                if (off >= 0) {
                    state.offloads.repair(now, key, rec, seg.owner, source, ObjectRecord.pack(seg.index, off));
                    return true;
                }
            }
        }
        return false;
    }

    /** Whether a replica lies on {@code seg} (or, with {@code sameNode}, on any segment of its owner). */
    private boolean holds(long[] replicas, MountedSegment seg, boolean sameNode) {
        for (long r : replicas) {
            MountedSegment on = state.segments.at(ObjectRecord.segment(r));
            if (on == seg || (sameNode && on.owner.equals(seg.owner))) {
                return true;
            }
        }
        return false;
    }

    /**
     * A repair's report ({@link Offloads#done}, the object's shard lock held; {@code current}: the task is still the
     * object's). Done: the range becomes a replica. Failed, or no longer wanted: the node has stopped writing it (it
     * reported), so the range goes back at once.
     */
    void done(long now, Offloads.Task t, ObjectRecord rec, boolean current, OffloadResult r) {
        MountedSegment target = state.segments.at(ObjectRecord.segment(t.target()));
        if (current) {
            rec.offloadTask = 0;
        }
        if (!current || !r.ok() || !target.mounted() || !under(rec)) {
            target.free(ObjectRecord.offset(t.target()), t.size());
            if (current && !r.ok()) {
                counters.repairsFailed.increment();
                LOG.warn("repair of key '{}' onto segment {} failed: {}", t.key(), target.spec.id(), r.error());
            } else {
                counters.repairsCancelled.increment();
            }
            return;
        }
        long[] before = rec.replicas();
        long[] after = java.util.Arrays.copyOf(before, before.length + 1);
        after[before.length] = t.target();
        rec.setReplicas(after);
        counters.repairsCompleted.increment();
        // memory replicas carry no CRC at the master (a put's bytes are never seen here): the node's is for diagnosis
        LOG.debug("repaired key '{}' onto segment {} (CRC32C {})", t.key(), target.spec.id(), Long.toHexString(r.crc32c()));
        mark(t.key(), rec);
    }

    synchronized String cursor() {
        return cursor;
    }

    /** A restore, before the first command: the walk's position, and each flagged object's key. */
    synchronized void restore(String cursor, List<String> flagged) {
        this.cursor = cursor;
        candidates.addAll(flagged);
    }
}
