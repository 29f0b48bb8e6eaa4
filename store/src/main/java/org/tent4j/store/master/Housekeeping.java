package org.tent4j.store.master;

import java.util.List;

import org.tent4j.store.master.Command.TickReport;

/**
 * The master's periodic housekeeping, applied as a {@link Command.Tick} like any other command: offloads that waited
 * too long expire, parked ranges are released, dead clients dropped, idle reservations released, repairs started,
 * abandoned puts reclaimed (every tenth of the put-release timeout, a walk over the objects), and eviction. When the
 * last sweep ran is state: snapshots carry it, so a restored master sweeps when the one it was taken from would have.
 */
final class Housekeeping {
    private final MasterState state;
    private long lastReclaimSweep = Long.MIN_VALUE;

    Housekeeping(MasterState state) {
        this.state = state;
    }

    TickReport tick(long now, boolean evict) {
        state.offloads.expire(now);
        state.parking.releaseParked(now);
        List<String> expired = state.clients.expire(now);
        long putRelease = state.config().putReleaseTimeout().toNanos();
        for (Clients.ClientRecord client : state.clients.all()) {
            // a reservation untouched as long as an abandoned put's space is held: its writer is gone
            state.reservations.releaseAll(client, now - putRelease, Long.MIN_VALUE);
        }
        state.repairs.start(now); // after the expiry above: a dead client's replicas are gone, not copied from
        int reclaimed = 0;
        if (lastReclaimSweep == Long.MIN_VALUE || now - lastReclaimSweep >= putRelease / 10) {
            lastReclaimSweep = now;
            reclaimed = state.objects.reclaimAbandonedPuts(now);
            // indexes of unmounted segments a reservation, parked range or task named at their drop, free once those end
            state.segments.reclaim();
        }
        Command.Evicted evicted = evict ? state.eviction.evict(now) : new Command.Evicted(0, 0);
        return new TickReport(expired, reclaimed, evicted.objects(), evicted.bytes());
    }

    /** When the last sweep for abandoned puts ran ({@link Long#MIN_VALUE}: never), for a snapshot. */
    long lastReclaimSweep() {
        return lastReclaimSweep;
    }

    /** Restores {@link #lastReclaimSweep} from a snapshot. */
    void restore(long lastReclaimSweep) {
        this.lastReclaimSweep = lastReclaimSweep;
    }
}
