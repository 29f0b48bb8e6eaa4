package org.tent4j.runtime;

import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.metrics.EngineMetrics;
import org.tent4j.spi.TimeSource;

/**
 * Finds or starts the path group of (segment, transport). Never blocks: a new group is installed with a
 * compare-and-set (no lock around connecting) and connects on a connector thread while slices queue in it. A group whose
 * connection closed or failed is replaced; slices still queued in a closed one move to its replacement.
 */
final class PathGroups {
    private final FailoverController failover;
    private final Executor connector;
    private final EngineMetrics metrics;
    private final TimeSource clock;
    private final PathLimits limits;

    PathGroups(FailoverController failover, Executor connector, EngineMetrics metrics, TimeSource clock, PathLimits limits) {
        this.failover = failover;
        this.connector = connector;
        this.metrics = metrics;
        this.clock = clock;
        this.limits = limits;
    }

    PathGroup groupFor(RemoteSegment seg, TransportSlot slot) {
        for (;;) {
            PathGroup g = seg.groups.get(slot.index());
            if (g != null && g.usable()) {
                return g;
            }
            PathGroup fresh = new PathGroup(this, failover, seg, slot, clock, metrics, limits);
            if (!seg.groups.compareAndSet(slot.index(), g, fresh)) {
                continue;
            }
            try {
                connector.execute(() -> fresh.connect(seg.descriptor));
            } catch (RejectedExecutionException e) {
                fresh.connectFailed(new TransferException(ErrorCode.ENGINE_CLOSED, "engine closed while connecting to segment '"
                        + seg.name() + "' over " + slot.id()));
            }
            if (g != null) {
                g.close();
                // Slices still waiting on the dead connection move to the new one.
                for (RuntimeSlice s : g.takeAll()) {
                    s.group = fresh;
                    fresh.enqueue(s, true);
                }
            }
            return fresh;
        }
    }
}
