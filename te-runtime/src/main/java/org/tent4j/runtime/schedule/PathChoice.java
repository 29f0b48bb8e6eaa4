package org.tent4j.runtime.schedule;

import java.util.Set;

import org.tent4j.runtime.select.Policy;

/**
 * Which path of a {@link PathGroup} a slice takes: the one place that decision is made. Stateless: the group passes
 * its paths, its limits and its backlog, and counts the slice on the path chosen.
 *
 * <p>A slice goes to the eligible path with the lowest predicted completion time (bytes in flight plus the slice, over
 * the path's measured bandwidth), so a slow path gets fewer slices and a fast one more. When the path that would finish a slice first is full, a slower path with room takes it only if it would finish
 * it before the whole backlog (everything queued and in flight) could drain at the combined speed of the eligible
 * paths. So under a backlog every path works and each one's share follows its speed, while at the tail of a transfer
 * a slow path is left out instead of holding the last bytes back.
 *
 * <p>Small slices go home first: each submitting thread has a path of its own in every group (threads take the paths
 * in turn), and its slices go there while that path has room and at most {@code paths.affinity_bytes} in flight. A
 * burst of small requests then travels on one connection, so each peer thread that serves it wakes once per burst,
 * and two submitters do not wait on each other: spread over every path, each burst completes only when the slowest
 * path has carried its share, which couples the submitters' round trips (on a 2-core host tcp 4 KiB batches of 32
 * from two threads ran at 0.3 M requests/s spread, 0.5 M at home). A paused or full home and large slices fall back to
 * the rule above, which also spreads a single large transfer over every path. A slow but healthy path keeps the small
 * bursts of the threads whose home it is.
 */
final class PathChoice {
    private PathChoice() {
    }

    /** The path for {@code s}, or -1 to let it wait; {@code queuedBytes} is the group's backlog not yet posted. */
    static int choose(PathState[] ps, RuntimeSlice s, long now, PathLimits limits, long queuedBytes) {
        Policy policy = s.task().policy();
        Set<String> allowed = policy == null || policy.devices() == null || !anyAllowed(ps, policy.devices()) ? null : policy.devices();
        int home = homePath(ps, s, now, allowed, limits);
        if (home >= 0) {
            return home;
        }
        int best = pick(ps, s, now, s.avoidedPath(), allowed, limits, queuedBytes);
        // the path that just failed this slice takes it again only when no other path can: waiting for room on
        // another path is better than spending the task's attempts on one that is likely still broken
        return best >= 0 || s.avoidedPath() < 0 || eligibleBesides(ps, s.avoidedPath(), now, allowed) ? best : pick(ps, s, now, -1, allowed, limits, queuedBytes);
    }

    /**
     * The submitting thread's own path if it takes {@code s} now, else -1 (see the class comment): it must be eligible,
     * allowed and not the path that just failed the slice, have room for one more slice, and stay within
     * {@code paths.affinity_bytes} in flight with it. Speed estimates are not consulted: a home left for a path
     * measured faster gets no more completions, so its estimate never recovers, and a noisy sample at start-up would
     * put every thread on one path for good.
     */
    private static int homePath(PathState[] ps, RuntimeSlice s, long now, Set<String> allowed, PathLimits limits) {
        long cap = limits.affinityBytes();
        if (s.length() > cap) {
            return -1;
        }
        PathState p = ps[s.home() % ps.length];
        if (p.index() == s.avoidedPath() || !p.eligible(now) || (allowed != null && !allowed.contains(p.name()))) {
            return -1;
        }
        long both = p.inflight();
        return PathState.inflightSlices(both) >= limits.maxInflightSlices() || PathState.inflightBytes(both) + s.length() > cap
                ? -1 : p.index();
    }

    private static boolean eligibleBesides(PathState[] ps, int avoid, long now, Set<String> allowed) {
        for (PathState p : ps) {
            if (p.index() != avoid && p.eligible(now) && (allowed == null || allowed.contains(p.name()))) {
                return true;
            }
        }
        return false;
    }

    /** Whether a policy's device list names any path of this group (if none, the restriction cannot apply here). */
    private static boolean anyAllowed(PathState[] ps, Set<String> devices) {
        for (PathState p : ps) {
            if (devices.contains(p.name())) {
                return true;
            }
        }
        return false;
    }

    /**
     * The path for {@code s}, or -1 to let it wait: the path with room that would finish it first, provided that is
     * also the best path overall or it would finish the slice before the backlog drains (see the class comment).
     * Called with the group's queues held.
     */
    private static int pick(PathState[] ps, RuntimeSlice s, long now, int avoid, Set<String> allowed, PathLimits limits,
                            long queuedBytes) {
        int best = -1;
        double bestTime = Double.MAX_VALUE;
        double bestFullTime = Double.MAX_VALUE;
        double backlogBytes = queuedBytes;
        double bandwidth = 0;
        for (PathState p : ps) {
            if (p.index() == avoid || !p.eligible(now) || (allowed != null && !allowed.contains(p.name()))) {
                continue;
            }
            // one read of each, so the backlog, the room check and the prediction agree
            long both = p.inflight();
            long inflight = PathState.inflightBytes(both);
            double bw = p.bandwidth();
            backlogBytes += inflight;
            bandwidth += bw;
            if (PathState.inflightSlices(both) >= limits.maxInflightSlices() || inflight >= limits.maxInflightBytes()) {
                // on a full path the slice would first wait for room, about one slice's time
                bestFullTime = Math.min(bestFullTime, (inflight + 2.0 * s.length()) / bw);
                continue;
            }
            double t = (inflight + (double) s.length()) / bw;
            if (t < bestTime) {
                bestTime = t;
                best = p.index();
            }
        }
        return best < 0 || bestTime <= bestFullTime || bestTime <= backlogBytes / bandwidth ? best : -1;
    }
}
