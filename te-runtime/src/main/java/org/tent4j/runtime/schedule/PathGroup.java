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
 * priority queues. Slices wait here until a path has room; then each goes to the path {@link PathChoice} picks: the
 * submitting thread's own path for small slices, else the eligible path with the lowest predicted completion time, so
 * a slow path gets fewer slices and a fast one more.
 *
 * <p>Queues are served as {@link PathQueues} says, low priority aged so it is never starved. Draining is a
 * work-in-progress counter loop: whoever finds it idle drains, everyone else just counts, so posting never recurses
 * (a transport may complete a slice inside {@code post}) and never allocates.
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
    /** The queued slices; its monitor also guards {@link #state} changes against a racing enqueue. */
    private final PathQueues queues = new PathQueues();
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
        try {
            c.onPathsAdded(this::pathsAdded);
        } catch (RuntimeException e) {
            log.warn("transport '{}' threw from onPathsAdded: {}", transport.id(), e.toString());
        }
        synchronized (queues) {
            if (state == CLOSED) {
                c.close();
                return;
            }
            state = OPEN;
        }
        drain();
    }

    /**
     * The open connection appended paths (a rail that came back): they join the old ones, whose states (estimates,
     * slices in flight) carry on, and start with the initial estimate, so the next slices try them and measure them.
     */
    private void pathsAdded() {
        PeerConnection c = connection;
        PathState[] grown;
        int before;
        synchronized (queues) {
            PathState[] ps = paths;
            before = ps.length;
            int n = Math.max(1, c.pathCount());
            if (state == CLOSED || n <= ps.length) {
                return;
            }
            grown = java.util.Arrays.copyOf(ps, n);
            for (int i = ps.length; i < n; i++) {
                grown[i] = new PathState(i, c.pathName(i), limits.cooldownNanos(), limits.maxCooldownNanos());
            }
            paths = grown;
        }
        metrics.paths(segment.name(), transport.id(), List.of(grown));
        log.info("connection to segment '{}' over {} gained paths {}", segment.name(), transport.id(),
                java.util.Arrays.stream(grown, before, grown.length).map(PathState::name).toList());
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
        if (directPosts && queues.queued() == 0 && state == OPEN) {
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
            queues.add(s, front);
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
        return queues.queued();
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
        if (queues.queued() == 0 || state != OPEN || wip.getAndIncrement() != 0) {
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
                SliceRing q = queues.next(now, limits.agingNanos());
                if (q == null) {
                    return;
                }
                s = q.peek();
                path = reservePath(ps, s, now);
                if (path < 0) {
                    return; // no room now: a completion, or the sweeper after a cooldown, drains again
                }
                queues.poll(q, s);
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
        long generation = s.generation(); // read before the post: after it the slice may settle and be reused
        if (cancellable) {
            t.linkPosted(s);
        }
        s.post(path, now);
        try {
            c.post(s);
        } catch (RuntimeException e) {
            s.fail(ErrorCode.INTERNAL, "transport '" + transport.id() + "' threw from post: " + e);
        }
        if (cancellable && t.isTerminal()) {
            // the task ended after enterTransport and before the post armed this slice: ending it either did not
            // find the slice linked yet or could not cancel it unarmed (a slice the transport then held for its 30 s
            // kept a cancelled task from being reported); checked after the post, so both windows are closed. The
            // task cannot have been reported and reused meanwhile: this slice is still counted in its transport
            s.cancel(generation);
        }
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
        int path = PathChoice.choose(ps, s, now, limits, queues.queuedBytes());
        if (path >= 0) {
            s.busyAtPost(ps[path].posted(s.length()) > 0);
        }
        return path;
    }

    /**
     * Ends the queued slices whose deadline passed by {@code now} with TIMEOUT. Only a connecting group needs this: an
     * open one checks each slice's deadline as it posts it, but a connect may block for the transport's whole connect
     * timeout (a SYN into a silent link), which no task deadline caps.
     */
    void expireQueued(long now) {
        java.util.List<RuntimeSlice> expired;
        synchronized (queues) {
            expired = queues.takeExpired(now);
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
            return queues.takeAll();
        }
    }
}
