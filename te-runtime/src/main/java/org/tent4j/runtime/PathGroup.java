package org.tent4j.runtime;

import java.util.concurrent.atomic.AtomicInteger;

import org.tent4j.api.ErrorCode;
import org.tent4j.spi.PeerConnection;

/**
 * The slices bound for one peer over one transport: the connection, the state of each of its paths, and three
 * priority queues. Slices wait here until a path has room; then each goes to the eligible path with the lowest
 * predicted completion time, so a slow path gets fewer slices and a fast one more.
 *
 * <p>When the path that would finish a slice first is full, a slower path with room takes it only if it would finish
 * it before the whole backlog (everything queued and in flight) could drain at the combined speed of the eligible
 * paths. So under a backlog every path works and each one's share follows its speed, while at the tail of a transfer
 * a slow path is left out instead of holding the last bytes back.
 *
 * <p>Queues are served HIGH first, except that a MEDIUM or LOW slice that has waited longer than the aging limit
 * (twice that for LOW) goes first, so low priority is never starved. Draining is a work-in-progress counter loop:
 * whoever finds it idle drains, everyone else just counts, so posting never recurses (a transport may complete a
 * slice inside {@code post}) and never allocates.
 */
final class PathGroup {
    final TransferEngineImpl engine;
    final RemoteSegment segment;
    final TransportSlot transport;
    final PeerConnection connection;
    final PathState[] paths;
    private final SliceRing[] queues = {new SliceRing(), new SliceRing(), new SliceRing()};
    private final AtomicInteger wip = new AtomicInteger();
    private final int maxInflightSlices;
    private final long maxInflightBytes;
    private final long agingNanos;
    private volatile int queued;
    /** Bytes of the queued slices; guarded by {@code queues}. */
    private long queuedBytes;

    PathGroup(TransferEngineImpl engine, RemoteSegment segment, TransportSlot transport, PeerConnection connection,
              int maxInflightSlices, long maxInflightBytes, long agingNanos, long cooldownNanos, long maxCooldownNanos) {
        this.engine = engine;
        this.segment = segment;
        this.transport = transport;
        this.connection = connection;
        int n = Math.max(1, connection.pathCount());
        this.paths = new PathState[n];
        for (int i = 0; i < n; i++) {
            paths[i] = new PathState(i, connection.pathName(i), cooldownNanos, maxCooldownNanos);
        }
        this.maxInflightSlices = maxInflightSlices;
        this.maxInflightBytes = maxInflightBytes;
        this.agingNanos = agingNanos;
    }

    String describe(int path) {
        return transport.id() + "/" + (path >= 0 && path < paths.length ? paths[path].name : "?");
    }

    void enqueue(RuntimeSlice s, boolean front) {
        s.enqueueNanos = System.nanoTime();
        synchronized (queues) {
            SliceRing q = queues[s.priority];
            if (front) {
                q.addFirst(s);
            } else {
                q.addLast(s);
            }
            queued++;
            queuedBytes += s.length();
        }
        drain();
    }

    int queued() {
        return queued;
    }

    /** Whether every path is paused and still cooling down, so queued slices should go elsewhere. */
    boolean allPathsPaused(long now) {
        for (PathState p : paths) {
            if (p.eligible(now)) {
                return false;
            }
        }
        return true;
    }

    void drain() {
        if (wip.getAndIncrement() != 0) {
            return;
        }
        int missed = 1;
        do {
            dispatch();
            missed = wip.addAndGet(-missed);
        } while (missed != 0);
    }

    private void dispatch() {
        for (;;) {
            long now = System.nanoTime();
            RuntimeSlice s;
            int path;
            synchronized (queues) {
                SliceRing q = next(now);
                if (q == null) {
                    return;
                }
                s = q.peek();
                path = choosePath(s, now);
                if (path < 0) {
                    return; // no room now: a completion, or the sweeper after a cooldown, drains again
                }
                q.poll();
                queued--;
                queuedBytes -= s.length();
            }
            Task t = s.task();
            if (t.isTerminal()) {
                s.discard();
                continue;
            }
            if (s.deadlineNanos() - now <= 0) {
                s.expire(t.explicitDeadline ? "deadline passed while queued" : "no path took it within transfer.timeout");
                continue;
            }
            if (!connection.isOpen()) {
                engine.reroute(s, this, -1, ErrorCode.PEER_FAILED, "connection to segment '" + segment.name() + "' over "
                        + transport.id() + " is closed");
                continue;
            }
            s.post(path, now);
            paths[path].posted(s.length());
            try {
                connection.post(s);
            } catch (RuntimeException e) {
                s.fail(ErrorCode.INTERNAL, "transport '" + transport.id() + "' threw from post: " + e);
            }
        }
    }

    /** The queue to serve next: an aged MEDIUM/LOW head first, else the highest non-empty priority. */
    private SliceRing next(long now) {
        RuntimeSlice low = queues[2].peek();
        if (low != null && now - low.enqueueNanos > 2 * agingNanos) {
            return queues[2];
        }
        RuntimeSlice medium = queues[1].peek();
        if (medium != null && now - medium.enqueueNanos > agingNanos) {
            return queues[1];
        }
        for (SliceRing q : queues) {
            if (q.size() > 0) {
                return q;
            }
        }
        return null;
    }

    private int choosePath(RuntimeSlice s, long now) {
        Policy policy = s.task().policy;
        java.util.Set<String> allowed = policy == null || policy.devices() == null || !anyAllowed(policy.devices()) ? null : policy.devices();
        int best = pick(s, now, s.avoidPath, allowed);
        // the path that just failed this slice takes it again only when no other path can: waiting for room on
        // another path is better than spending the task's attempts on one that is likely still broken
        return best >= 0 || s.avoidPath < 0 || eligibleBesides(s.avoidPath, now, allowed) ? best : pick(s, now, -1, allowed);
    }

    private boolean eligibleBesides(int avoid, long now, java.util.Set<String> allowed) {
        for (PathState p : paths) {
            if (p.index != avoid && p.eligible(now) && (allowed == null || allowed.contains(p.name))) {
                return true;
            }
        }
        return false;
    }

    /** Whether a policy's device list names any path of this group (if none, the restriction cannot apply here). */
    private boolean anyAllowed(java.util.Set<String> devices) {
        for (PathState p : paths) {
            if (devices.contains(p.name)) {
                return true;
            }
        }
        return false;
    }

    /**
     * The path for {@code s}, or -1 to let it wait: the path with room that would finish it first, provided that is
     * also the best path overall or it would finish the slice before the backlog drains (see the class comment).
     * Called with {@code queues} held.
     */
    private int pick(RuntimeSlice s, long now, int avoid, java.util.Set<String> allowed) {
        int best = -1;
        double bestTime = Double.MAX_VALUE;
        double bestFullTime = Double.MAX_VALUE;
        double backlogBytes = queuedBytes;
        double bandwidth = 0;
        for (PathState p : paths) {
            if (p.index == avoid || !p.eligible(now) || (allowed != null && !allowed.contains(p.name))) {
                continue;
            }
            // one read of each, so the backlog, the room check and the prediction agree
            long inflight = p.inflightBytes.get();
            double bw = p.bandwidth();
            backlogBytes += inflight;
            bandwidth += bw;
            if (p.inflightSlices.get() >= maxInflightSlices || inflight >= maxInflightBytes) {
                // on a full path the slice would first wait for room, about one slice's time
                bestFullTime = Math.min(bestFullTime, (inflight + 2.0 * s.length()) / bw);
                continue;
            }
            double t = (inflight + (double) s.length()) / bw;
            if (t < bestTime) {
                bestTime = t;
                best = p.index;
            }
        }
        return best < 0 || bestTime <= bestFullTime || bestTime <= backlogBytes / bandwidth ? best : -1;
    }

    /** Takes every queued slice out (for rerouting when all paths are down or the connection closed). */
    RuntimeSlice[] takeAll() {
        synchronized (queues) {
            RuntimeSlice[] out = new RuntimeSlice[queued];
            int i = 0;
            for (SliceRing q : queues) {
                for (RuntimeSlice s; (s = q.poll()) != null; ) {
                    out[i++] = s;
                }
            }
            queued = 0;
            queuedBytes = 0;
            return out;
        }
    }
}
