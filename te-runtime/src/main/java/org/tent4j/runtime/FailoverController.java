package org.tent4j.runtime;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.metrics.EngineMetrics;
import org.tent4j.spi.TimeSource;

/**
 * Where a failed slice goes next: another path of the same connection while one is eligible, else the next
 * transport of the task's order; nowhere when the error says a retry cannot help or the task's failover budget
 * ({@code failover.max_attempts} per slice) is spent. Also the periodic sweep that revives groups whose cooldowns
 * ended and moves queues off groups whose paths are all paused or whose connection closed.
 */
final class FailoverController {
    private static final Logger log = LoggerFactory.getLogger(FailoverController.class);

    private final EngineState state;
    private final TransportSelector selector;
    private final Executor workers;
    private final EngineMetrics metrics;
    private final TimeSource clock;
    private final int maxAttempts;
    private final Map<String, long[]> failoverLog = new ConcurrentHashMap<>();

    FailoverController(EngineState state, TransportSelector selector, Executor workers, EngineMetrics metrics, TimeSource clock,
                       int maxAttempts) {
        this.state = state;
        this.selector = selector;
        this.workers = workers;
        this.metrics = metrics;
        this.clock = clock;
        this.maxAttempts = maxAttempts;
    }

    /**
     * A slice failed on {@code fromPath} of {@code from} (-1: it never left the queue, so it spent no attempt):
     * retry it on another path of the same connection while one is eligible, else move it to the next transport.
     */
    void reroute(RuntimeSlice s, PathGroup from, int fromPath, ErrorCode code, String message) {
        Task t = s.task();
        if (t.isTerminal()) {
            s.discard();
            return;
        }
        boolean retry = !state.isClosed() && code.retryable() && !(code == ErrorCode.TIMEOUT && t.explicitDeadline)
                && (fromPath < 0 || ++s.retries <= maxAttempts);
        if (!retry) {
            s.giveUp(code, message);
            return;
        }
        if (from.isOpen() && !from.allPathsPaused(clock.nanoTime())) {
            s.avoidPath = fromPath;
            if (from.paths.length > 1) {
                logFailover(from.segment, from.describe(fromPath), from.transport.id() + "/another path", message);
            }
            from.enqueue(s, true);
            return;
        }
        try {
            workers.execute(() -> moveToAnotherTransport(s, from, fromPath, code, message, true));
        } catch (RejectedExecutionException e) {
            s.giveUp(ErrorCode.ENGINE_CLOSED, "engine '" + state.segmentName() + "' closed while rerouting: " + message);
        }
    }

    /** Connecting {@code g} failed: every slice waiting in it moves to the next transport of its task. */
    void connectFailed(PathGroup g, TransferException e) {
        for (RuntimeSlice s : g.takeAll()) {
            if (s.task().isTerminal()) {
                s.discard();
                continue;
            }
            s.task().exclude(g.transport.index());
            moveToAnotherTransport(s, g, -1, e.code(), e.getMessage(), false);
        }
    }

    /** The same transport if it reconnects (when {@code reconnect}), else the next one. May run on any thread. */
    private void moveToAnotherTransport(RuntimeSlice s, PathGroup from, int fromPath, ErrorCode code, String message,
                                        boolean reconnect) {
        Task t = s.task();
        if (t.isTerminal()) {
            s.discard();
            return;
        }
        TransportSlot slot = from.transport;
        if (reconnect && !from.usable() && from.connectError() == null) {
            PathGroup again = from.owner.groupFor(t.segment(), slot);
            if (again != from) {
                s.group = again;
                again.enqueue(s, true);
                return;
            }
        }
        t.exclude(slot.index());
        Selection next = selector.select(t.resolved, t.policy, t.excluded(), s.length(), true, false);
        if (next.transport() == null) {
            s.giveUp(code, message + "; failover found no other transport: " + next.rejection().getMessage());
            return;
        }
        PathGroup g = from.owner.groupFor(t.segment(), next.transport());
        logFailover(t.segment(), from.describe(fromPath), next.transport().id(), message);
        metrics.failover(slot.id(), next.transport().id());
        s.group = g;
        s.avoidPath = -1;
        g.enqueue(s, true);
    }

    /** One WARN line per (peer, from, to) per second, counting the ones folded into it. */
    private void logFailover(RemoteSegment seg, String from, String to, String cause) {
        long now = clock.nanoTime();
        long[] st = failoverLog.computeIfAbsent(seg.name() + '\0' + from + '\0' + to, k -> new long[]{now - 2_000_000_000L, 0});
        synchronized (st) {
            if (now - st[0] >= 1_000_000_000L) {
                long folded = st[1];
                st[0] = now;
                st[1] = 0;
                log.warn("failover to segment '{}': from {} to {} because {}{}", seg.name(), from, to, cause,
                        folded > 0 ? " (" + folded + " more in the last second)" : "");
            } else {
                st[1]++;
            }
        }
    }

    /** Revives groups whose cooldowns ended, and moves queues off groups whose paths are all paused or closed. */
    void sweep(SegmentTable segments) {
        try {
            long now = clock.nanoTime();
            segments.forEach(seg -> sweep(seg, now));
        } catch (RuntimeException e) {
            log.error("scheduler sweep failed", e);
        }
    }

    private void sweep(RemoteSegment seg, long now) {
        for (int i = 0; i < seg.groups.length(); i++) {
            PathGroup g = seg.groups.get(i);
            if (g == null || g.queued() == 0 || g.isConnecting()) {
                continue;
            }
            if (!g.isOpen() || g.allPathsPaused(now)) {
                for (RuntimeSlice s : g.takeAll()) {
                    reroute(s, g, -1, ErrorCode.PEER_FAILED, "every path of " + g.transport.id() + " to segment '"
                            + seg.name() + "' is paused or closed (last failure: " + g.lastFailure() + ")");
                }
            } else {
                g.drain();
            }
        }
    }
}
