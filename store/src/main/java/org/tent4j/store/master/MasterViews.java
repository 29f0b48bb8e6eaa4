package org.tent4j.store.master;

import java.util.ArrayList;
import java.util.List;

import org.tent4j.store.master.MasterState.ClientView;
import org.tent4j.store.master.MasterState.KeyView;
import org.tent4j.store.master.MasterState.SegmentView;
import org.tent4j.store.master.MasterState.Stats;

/**
 * Read-only views for the admin page and metrics. They change nothing, so they are served off the command stream:
 * each takes the lock of what it reads (a shard, an allocator, a client's reservations) and sees a command either
 * before or after it touched that piece, never half-way.
 */
final class MasterViews {
    private final MasterState state;

    MasterViews(MasterState state) {
        this.state = state;
    }

    List<SegmentView> segments() {
        List<SegmentView> out = new ArrayList<>();
        for (MountedSegment[] tier : List.of(state.segments.active(), state.segments.disks())) {
            for (MountedSegment s : tier) {
                out.add(new SegmentView(s.spec.id(), s.spec.engineSegment(), s.spec.host(), s.owner, s.allocator.capacity(),
                        s.allocator.used(), s.allocator.largestFree(), s.spec.tier()));
            }
        }
        return out;
    }

    List<ClientView> clients(long now) {
        List<ClientView> out = new ArrayList<>();
        for (Clients.ClientRecord c : state.clients.all()) {
            out.add(new ClientView(c.id, c.segments.size(), now - c.lastSeen, c.reservedBytes()));
        }
        return out;
    }

    KeyView describe(long now, String key) {
        state.objects.checkKey(key);
        ObjectTable.Shard shard = state.objects.shard(key);
        synchronized (shard) {
            ObjectRecord rec = shard.map.get(key);
            if (rec == null) {
                return null;
            }
            return new KeyView(key, rec.size, rec.state == ObjectRecord.COMPLETE ? "COMPLETE" : "PROCESSING",
                    Math.max(0, rec.lease - now), (rec.flags & ObjectRecord.HARD_PIN) != 0,
                    (rec.flags & ObjectRecord.SOFT_PIN) != 0 && rec.pin > now,
                    state.segments.locations(rec), rec.asked);
        }
    }

    List<String> keys(int limit) {
        List<String> out = new ArrayList<>();
        for (ObjectTable.Shard shard : state.objects.shards()) {
            synchronized (shard) {
                for (String k : shard.map.keySet()) {
                    if (out.size() >= limit) {
                        return out;
                    }
                    out.add(k);
                }
            }
        }
        return out;
    }

    long reservedBytes() {
        long sum = 0;
        for (Clients.ClientRecord c : state.clients.all()) {
            sum += c.reservedBytes();
        }
        return sum;
    }

    Stats stats() {
        MasterCounters c = state.counters;
        return new Stats(c.objects.sum(), c.objectBytes.sum(), c.evictedObjects.sum(), c.evictedBytes.sum(),
                c.evictionRounds.sum(), c.leasesGranted.sum(), c.removalsBlockedByLease.sum(), c.putsTakenOver.sum(),
                c.putsReclaimed.sum(), c.partialAllocations.sum(), c.allocationFailures.sum(), c.clientsExpired.sum(),
                c.segmentsReplaced.sum(), state.clients.count(), c.objectsCommitted.sum(), c.reservationsGranted.sum(), c.reservationsReleased.sum(),
                reservedBytes(), new MasterState.Tiering(c.offloadsStarted.sum(), c.offloadsCompleted.sum(),
                c.offloadsFailed.sum(), c.offloadsCancelled.sum(), c.offloadsDuplicate.sum(), c.offloadsNoSpace.sum(),
                c.diskReads.sum(), c.diskEvictedObjects.sum(),
                state.offloads.inFlightCount() - state.offloads.repairsInFlight(), c.promotionsStarted.sum(),
                c.promotionsCompleted.sum(), c.scrubDropped.sum(), c.writeThroughStarted.sum(),
                c.offloadsRemote.sum()),
                new MasterState.Repair(state.repairs.underReplicated(), state.offloads.repairsInFlight(),
                        c.repairsStarted.sum(), c.repairsCompleted.sum(), c.repairsFailed.sum(), c.repairsExpired.sum(),
                        c.repairsCancelled.sum()));
    }
}
