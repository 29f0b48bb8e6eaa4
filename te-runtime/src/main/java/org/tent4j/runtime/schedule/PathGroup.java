package org.tent4j.runtime.schedule;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.metrics.EngineMetrics;
import org.tent4j.runtime.peers.RemoteSegment;
import org.tent4j.runtime.plugins.TransportSlot;
import org.tent4j.runtime.select.Policy;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.TimeSource;

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
 * <p>Small slices go home first: each submitting thread has a path of its own in every group (threads take the paths
 * in turn), and its slices go there while that path has room and at most {@code paths.affinity_bytes} in flight. A
 * burst of small requests then travels on one connection, so each peer thread that serves it wakes once per burst,
 * and two submitters do not wait on each other: spread over every path, each burst completes only when the slowest
 * path has carried its share, which couples the submitters' round trips (on a 2-core host tcp 4 KiB batches of 32
 * from two threads ran at 0.3 M requests/s spread, 0.5 M at home). A paused or full home and large slices fall back to
 * the rule above, which also spreads a single large transfer over every path. A slow but healthy path keeps the small
 * bursts of the threads whose home it is.
 *
 * <p>Queues are served HIGH first, except that a MEDIUM or LOW slice that has waited longer than the aging limit
 * (twice that for LOW) goes first, so low priority is never starved. Draining is a work-in-progress counter loop:
 * whoever finds it idle drains, everyone else just counts, so posting never recurses (a transport may complete a
 * slice inside {@code post}) and never allocates.
 *
 * <p>A group starts unconnected: {@link #connect} runs on a worker while slices already wait in its queues, so
 * submitting never blocks on a peer. The group owns its paths' health: completions and failures update
 * {@link PathState}, pauses and recoveries are logged here. Where a slice goes that the group cannot carry (a failed
 * slice, a failed connect, a closed connection) is not its decision: it hands such slices up to its {@link Router},
 * and a slice tells only its group, never the router.
 */
public final class PathGroup {
    private static final Logger log = LoggerFactory.getLogger(PathGroup.class);
    private static final int CONNECTING = 0;
    private static final int OPEN = 1;
    private static final int FAILED = 2;
    private static final int CLOSED = 3;

    /** Where the slices go that a group cannot carry; {@link SliceRouter} implements it. */
    interface Router {
        /**
         * {@code s} failed on {@code path} of {@code from} (-1: it never left the queue): send it on, or end its task.
         * The slice is out of its transport and no longer pinned.
         */
        void reroute(RuntimeSlice s, PathGroup from, int path, ErrorCode code, String message);

        /** Connecting {@code g} failed: every slice waiting in it must go elsewhere. */
        void connectFailed(PathGroup g, TransferException e);
    }

    private final Router router;
    private final RemoteSegment segment;
    private final TransportSlot transport;
    private final TimeSource clock;
    private final EngineMetrics metrics;
    /** {@code null} until connected. */
    private volatile PeerConnection connection;
    /** {@code null} until connected; then one per path of the connection. */
    private volatile PathState[] paths;
    private volatile int state = CONNECTING;
    private volatile TransferException connectError;
    private volatile String lastFailure;
    private final SliceRing[] queues = {new SliceRing(), new SliceRing(), new SliceRing()};
    private final AtomicInteger wip = new AtomicInteger();
    private final PathLimits limits;
    /** The transport declares {@link PeerConnection#cancel}: posted slices are tracked so an ended task can cancel them. */
    private final boolean cancellable;
    /**
     * The transport takes posts from several threads at once ({@code TransportCapabilities.concurrentPosts}): a
     * submitter that finds nothing queued on a one-path group posts its own slice instead of queueing it for whoever
     * drains, so two submitters copy (shm) side by side rather than one copying for both while the other waits.
     */
    private final boolean directPosts;
    private volatile int queued;
    /** Bytes of the queued slices; guarded by {@code queues}. */
    private long queuedBytes;

    PathGroup(Router router, RemoteSegment segment, TransportSlot transport, TimeSource clock, EngineMetrics metrics,
              PathLimits limits) {
        this.router = router;
        this.segment = segment;
        this.transport = transport;
        this.clock = clock;
        this.metrics = metrics;
        this.limits = limits;
        this.cancellable = transport.capabilities().cancellation();
        this.directPosts = transport.capabilities().concurrentPosts();
    }

    /** Connects (blocking: call it on a worker), then starts posting what waits in the queues. */
    void connect(SegmentDescriptor peer) {
        PeerConnection c;
        try {
            c = transport.transport().connect(peer);
        } catch (RuntimeException e) {
            TransferException te = e instanceof TransferException t ? t : new TransferException(ErrorCode.PEER_UNREACHABLE,
                    "transport '" + transport.id() + "' failed to connect to segment '" + segment.name() + "': " + e, e);
            connectError = te;
            state = FAILED;
            router.connectFailed(this, te);
            return;
        }
        int n = Math.max(1, c.pathCount());
        PathState[] ps = new PathState[n];
        for (int i = 0; i < n; i++) {
            ps[i] = new PathState(i, c.pathName(i), limits.cooldownNanos(), limits.maxCooldownNanos());
        }
        paths = ps;
        connection = c;
        metrics.paths(segment.name(), transport.id(), List.of(ps));
        synchronized (queues) {
            if (state == CLOSED) {
                c.close();
                return;
            }
            state = OPEN;
        }
        drain();
    }

    /** The connect attempt failed (or was never started); its slices go to the router. */
    void connectFailed(TransferException e) {
        connectError = e;
        state = FAILED;
        router.connectFailed(this, e);
    }

    TransferException connectError() {
        return connectError;
    }

    /** Whether new slices may be queued here: connecting, or connected and open. */
    boolean usable() {
        int s = state;
        return s == CONNECTING || (s == OPEN && connection.isOpen());
    }

    boolean isConnecting() {
        return state == CONNECTING;
    }

    /** Whether it is connected and the connection is still open. */
    boolean isOpen() {
        return state == OPEN && connection.isOpen();
    }

    void descriptorChanged(SegmentDescriptor d) {
        PeerConnection c = connection;
        if (c != null) {
            c.descriptorChanged(d);
        }
    }

    /** Closes the connection; queued slices are left for the caller ({@link #takeAll}). */
    void close() {
        PeerConnection c;
        synchronized (queues) {
            state = CLOSED;
            c = connection;
        }
        if (c != null) {
            c.close();
        }
    }

    RemoteSegment segment() {
        return segment;
    }

    TransportSlot transport() {
        return transport;
    }

    /** Path {@code i} of the connection (tests read its counts). */
    public PathState path(int i) {
        return paths[i];
    }

    /** How many paths the connection has (0 until connected). */
    public int pathCount() {
        PathState[] ps = paths;
        return ps == null ? 0 : ps.length;
    }

    String describe(int path) {
        PathState[] ps = paths;
        return transport.id() + "/" + (ps != null && path >= 0 && path < ps.length ? ps[path].name() : path < 0 ? "connect" : "?");
    }

    /** A new slice from its submitter at {@code now} (the engine's clock): posted on this thread when the transport allows it and nothing waits, else queued. */
    public void submit(RuntimeSlice s, long now) {
        if (directPosts && queued == 0 && state == OPEN) {
            PathState[] ps = paths;
            // one path only: choosing among several paths weighs the backlog, which the drain loop keeps consistent
            if (ps.length == 1 && reservePath(ps, s, now) == 0) {
                s.queuedAt(now);
                post(connection, ps, s, 0, now);
                return;
            }
        }
        enqueue(s, false);
    }

    void enqueue(RuntimeSlice s, boolean front) {
        s.queuedAt(clock.nanoTime());
        boolean closedNow;
        synchronized (queues) {
            SliceRing q = queues[s.priority()];
            if (front) {
                q.addFirst(s);
            } else {
                q.addLast(s);
            }
            queued++;
            queuedBytes += s.length();
            closedNow = state == CLOSED;
        }
        if (closedNow) {
            // lost the race with close (a replaced or dropped group): nothing drains a closed group, so move them on
            for (RuntimeSlice r : takeAll()) {
                router.reroute(r, this, -1, ErrorCode.PEER_FAILED, "connection to segment '" + segment.name() + "' over "
                        + transport.id() + " was closed");
            }
            return;
        }
        if (state == FAILED) {
            // lost the race with a failed connect: its slices were taken already, so this one goes the same way
            router.connectFailed(this, connectError);
            return;
        }
        drain();
    }

    int queued() {
        return queued;
    }

    /** The last retryable failure of any path, so slices moved off a paused group still name the cause. */
    String lastFailure() {
        String f = lastFailure;
        return f == null ? "no failure recorded" : f;
    }

    /** Whether every path is paused and still cooling down, so queued slices should go elsewhere (never while connecting). */
    boolean allPathsPaused(long now) {
        PathState[] ps = paths;
        if (ps == null) {
            return false;
        }
        for (PathState p : ps) {
            if (p.eligible(now)) {
                return false;
            }
        }
        return true;
    }

    /** A slice completed on {@code path}: update its estimate, and re-admit it if it was paused. Returns when (the engine's clock). */
    long completed(int path, long length, long postNanos, boolean busy) {
        PathState p = paths[path];
        long now = clock.nanoTime();
        if (p.completed(length, postNanos, busy, now)) {
            log.info("path {} to segment '{}' recovered: re-admitted after a success", describe(path), segment.name());
        }
        return now;
    }

    /** A slice failed on {@code path}: count it against the path's health unless the failure says nothing about it. */
    void failed(int path, long length, ErrorCode code, String message) {
        if (path < 0) {
            return;
        }
        PathState p = paths[path];
        if (!code.retryable()) {
            // Bad input (a stale descriptor, a denied permission) says nothing about the path's health.
            p.withdrawn(length);
            return;
        }
        lastFailure = code + ": " + message;
        long cooldown = p.failed(length, clock.nanoTime());
        if (cooldown > 0) {
            log.warn("path {} to segment '{}' paused for {} ms after {} failures in a row: {} ({})", describe(path),
                    segment.name(), cooldown / 1_000_000, PathState.PAUSE_AFTER, code, message);
        }
    }

    /** After {@link #failed}: the slice, out of its transport and unpinned, goes where the router sends it. */
    void reroute(RuntimeSlice s, int path, ErrorCode code, String message) {
        router.reroute(s, this, path, code, message);
    }

    /**
     * Asks the transport to drop {@code s}, posted here; returns whether it gave the slice back (then it promised
     * not to touch or settle it again, and the caller gives its room back with {@link #withdrawn}).
     */
    boolean cancel(RuntimeSlice s) {
        try {
            return connection.cancel(s);
        } catch (RuntimeException e) {
            log.warn("transport '{}' threw from cancel: {}", transport.id(), e.toString());
            return false;
        }
    }

    /** A slice posted on {@code path} will not be settled (canceled): its room there is free again. */
    void withdrawn(int path, long length) {
        paths[path].withdrawn(length);
    }

    void drain() {
        // queued first: every completion calls this, and with nothing queued it need not touch the shared counter
        // (an enqueue counts its slice, then drains itself)
        if (queued == 0 || state != OPEN || wip.getAndIncrement() != 0) {
            return;
        }
        int missed = 1;
        do {
            dispatch();
            missed = wip.addAndGet(-missed);
        } while (missed != 0);
    }

    private void dispatch() {
        PeerConnection c = connection;
        PathState[] ps = paths;
        for (;;) {
            long now = clock.nanoTime();
            RuntimeSlice s;
            int path;
            synchronized (queues) {
                SliceRing q = next(now);
                if (q == null) {
                    return;
                }
                s = q.peek();
                path = reservePath(ps, s, now);
                if (path < 0) {
                    return; // no room now: a completion, or the sweeper after a cooldown, drains again
                }
                q.poll();
                queued--;
                queuedBytes -= s.length();
            }
            post(c, ps, s, path, now);
        }
    }

    /** Posts {@code s} on {@code path}, where it is counted already, unless it must not go (then the count is undone). */
    private void post(PeerConnection c, PathState[] ps, RuntimeSlice s, int path, long now) {
        Task t = s.task();
        if (t.isTerminal()) {
            unreserve(ps[path], s);
            s.discard();
            return;
        }
        if (s.deadlineNanos() - now <= 0) {
            unreserve(ps[path], s);
            s.expire(t.explicitDeadline() ? "deadline passed while queued" : "no path took it within transfer.timeout");
            return;
        }
        if (!c.isOpen()) {
            unreserve(ps[path], s);
            router.reroute(s, this, -1, ErrorCode.PEER_FAILED, "connection to segment '" + segment.name() + "' over "
                    + transport.id() + " is closed");
            return;
        }
        if (!t.enterTransport()) {
            unreserve(ps[path], s);
            s.discard();
            return;
        }
        if (!s.local().pin()) {
            unreserve(ps[path], s);
            t.leaveTransport();
            s.giveUp(ErrorCode.ADDRESS_NOT_REGISTERED, "local buffer " + s.local() + " was unregistered before the slice was posted");
            return;
        }
        if (cancellable) {
            t.linkPosted(s);
        }
        s.post(path, now);
        try {
            c.post(s);
        } catch (RuntimeException e) {
            s.fail(ErrorCode.INTERNAL, "transport '" + transport.id() + "' threw from post: " + e);
        }
    }

    /** The queue to serve next: an aged MEDIUM/LOW head first, else the highest non-empty priority. */
    private SliceRing next(long now) {
        RuntimeSlice low = queues[2].peek();
        if (low != null && now - low.queuedSince() > 2 * limits.agingNanos()) {
            return queues[2];
        }
        RuntimeSlice medium = queues[1].peek();
        if (medium != null && now - medium.queuedSince() > limits.agingNanos()) {
            return queues[1];
        }
        for (SliceRing q : queues) {
            if (q.size() > 0) {
                return q;
            }
        }
        return null;
    }

    /**
     * Gives back the room {@code s} reserved but will not use. A direct post may have taken the last room while the
     * drain loop found the path full and stopped; nothing in flight may be left to drain again, so this does.
     */
    private void unreserve(PathState p, RuntimeSlice s) {
        p.withdrawn(s.length());
        drain();
    }

    /**
     * The path for {@code s}, with the slice counted on it (so a direct post racing with this drain cannot take the
     * same room), or -1 to let it wait. Called with {@code queues} held; for a one-path group also by a direct post,
     * as that case reads nothing the lock guards.
     */
    private int reservePath(PathState[] ps, RuntimeSlice s, long now) {
        if (ps.length == 1) {
            // what the general rule below decides for one path (a device list names it or cannot apply; avoiding
            // it leaves no other), without its per-slice arithmetic: shm and one-lane groups carry most small requests
            PathState p = ps[0];
            int before = p.eligible(now) ? p.reserve(s.length(), limits.maxInflightSlices(), limits.maxInflightBytes()) : PathState.NO_ROOM;
            s.busyAtPost(before > 0);
            return before == PathState.NO_ROOM ? -1 : 0;
        }
        int path = choosePath(ps, s, now);
        if (path >= 0) {
            s.busyAtPost(ps[path].posted(s.length()) > 0);
        }
        return path;
    }

    private int choosePath(PathState[] ps, RuntimeSlice s, long now) {
        Policy policy = s.task().policy();
        java.util.Set<String> allowed = policy == null || policy.devices() == null || !anyAllowed(ps, policy.devices()) ? null : policy.devices();
        int home = homePath(ps, s, now, allowed);
        if (home >= 0) {
            return home;
        }
        int best = pick(ps, s, now, s.avoidedPath(), allowed);
        // the path that just failed this slice takes it again only when no other path can: waiting for room on
        // another path is better than spending the task's attempts on one that is likely still broken
        return best >= 0 || s.avoidedPath() < 0 || eligibleBesides(ps, s.avoidedPath(), now, allowed) ? best : pick(ps, s, now, -1, allowed);
    }

    /**
     * The submitting thread's own path if it takes {@code s} now, else -1 (see the class comment): it must be eligible,
     * allowed and not the path that just failed the slice, have room for one more slice, and stay within
     * {@code paths.affinity_bytes} in flight with it. Speed estimates are not consulted: a home left for a path
     * measured faster gets no more completions, so its estimate never recovers, and a noisy sample at start-up would
     * put every thread on one path for good.
     */
    private int homePath(PathState[] ps, RuntimeSlice s, long now, java.util.Set<String> allowed) {
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

    private static boolean eligibleBesides(PathState[] ps, int avoid, long now, java.util.Set<String> allowed) {
        for (PathState p : ps) {
            if (p.index() != avoid && p.eligible(now) && (allowed == null || allowed.contains(p.name()))) {
                return true;
            }
        }
        return false;
    }

    /** Whether a policy's device list names any path of this group (if none, the restriction cannot apply here). */
    private static boolean anyAllowed(PathState[] ps, java.util.Set<String> devices) {
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
     * Called with {@code queues} held.
     */
    private int pick(PathState[] ps, RuntimeSlice s, long now, int avoid, java.util.Set<String> allowed) {
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

    /**
     * Ends the queued slices whose deadline passed by {@code now} with TIMEOUT. Only a connecting group needs this: an
     * open one checks each slice's deadline as it posts it, but a connect may block for the transport's whole connect
     * timeout (a SYN into a silent link), which no task deadline caps.
     */
    void expireQueued(long now) {
        java.util.List<RuntimeSlice> expired = null;
        synchronized (queues) {
            for (SliceRing q : queues) {
                java.util.List<RuntimeSlice> out = q.takeExpired(now);
                if (out == null) {
                    continue;
                }
                if (expired == null) {
                    expired = out;
                } else {
                    expired.addAll(out);
                }
                for (RuntimeSlice s : out) {
                    queued--;
                    queuedBytes -= s.length();
                }
            }
        }
        if (expired == null) {
            return;
        }
        for (RuntimeSlice s : expired) {
            Task t = s.task();
            if (t.isTerminal()) {
                s.discard();
            } else {
                s.expire((t.explicitDeadline() ? "deadline" : "transfer.timeout") + " passed while connecting to segment '"
                        + segment.name() + "' over " + transport.id());
            }
        }
    }

    /** Takes every queued slice out (for rerouting when all paths are down, the connection closed or never opened). */
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
