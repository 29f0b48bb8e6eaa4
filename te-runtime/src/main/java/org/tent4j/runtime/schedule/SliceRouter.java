package org.tent4j.runtime.schedule;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.EngineState;
import org.tent4j.runtime.metrics.EngineMetrics;
import org.tent4j.runtime.peers.RemoteSegment;
import org.tent4j.runtime.peers.SegmentTable;
import org.tent4j.runtime.plugins.TransportSlot;
import org.tent4j.runtime.select.Selection;
import org.tent4j.runtime.select.TransportSelector;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.TimeSource;

/**
 * Where slices go once they are cut: the one owner of the slice path. It keeps the path group of each (segment,
 * transport), finds or starts it for the launcher, and decides where a slice goes that its group cannot carry: another
 * path of the same connection while one is eligible, else the next transport of the task's order; nowhere when the
 * error says a retry cannot help or the task's failover budget ({@code failover.max_attempts} per slice) is spent. Its
 * sweep revives groups whose cooldowns ended and moves queues off groups whose paths are all paused or whose connection
 * closed.
 *
 * <p>Finding a group never blocks: a new group is installed with a compare-and-set (no lock around connecting) and
 * connects on a connector thread while slices queue in it. A group whose connection closed or failed is replaced;
 * slices still queued in a closed one move to its replacement. Groups report to the router through
 * {@link PathGroup.Router}; they never look up another group themselves.
 */
public final class SliceRouter implements PathGroup.Router, SegmentTable.Connections {
    private static final Logger log = LoggerFactory.getLogger(SliceRouter.class);
    /** How often the sweep runs: revives cooled-down paths, moves queues off dead groups. */
    private static final long SWEEP_MILLIS = 50;

    private final EngineState state;
    private final TransportSelector selector;
    private final Executor workers;
    /**
     * Connects to peers. Not the workers: a connect may wait on a handshake that a worker of this very engine must
     * answer (a loopback connection), which must not deadlock with few workers.
     */
    private final Executor connector;
    private final EngineMetrics metrics;
    private final TimeSource clock;
    private final PathLimits limits;
    private final int maxAttempts;
    private final int transports;
    /** Each open segment's groups, one slot per transport index. */
    private final Map<RemoteSegment, AtomicReferenceArray<PathGroup>> groups = new ConcurrentHashMap<>();
    private final Map<String, long[]> failoverLog = new ConcurrentHashMap<>();
    private volatile ScheduledFuture<?> sweeper;

    public SliceRouter(EngineState state, TransportSelector selector, Executor workers, Executor connector, EngineMetrics metrics,
                TimeSource clock, PathLimits limits, int maxAttempts, int transports) {
        this.state = state;
        this.selector = selector;
        this.workers = workers;
        this.connector = connector;
        this.metrics = metrics;
        this.clock = clock;
        this.limits = limits;
        this.maxAttempts = maxAttempts;
        this.transports = Math.max(1, transports);
    }

    /** The usable group of (segment, transport), started (and connecting) if there is none. */
    public PathGroup groupFor(RemoteSegment seg, TransportSlot slot) {
        AtomicReferenceArray<PathGroup> row = groups.get(seg);
        if (row == null) {
            row = groups.computeIfAbsent(seg, s -> new AtomicReferenceArray<>(transports));
        }
        for (;;) {
            PathGroup g = row.get(slot.index());
            if (g != null && g.usable()) {
                return g;
            }
            PathGroup fresh = new PathGroup(this, seg, slot, clock, metrics, limits);
            if (!row.compareAndSet(slot.index(), g, fresh)) {
                continue;
            }
            try {
                connector.execute(() -> fresh.connect(seg.descriptor()));
            } catch (RejectedExecutionException e) {
                fresh.connectFailed(new TransferException(ErrorCode.ENGINE_CLOSED, "engine closed while connecting to segment '"
                        + seg.name() + "' over " + slot.id()));
            }
            if (g != null) {
                g.close();
                // Slices still waiting on the dead connection move to the new one.
                for (RuntimeSlice s : g.takeAll()) {
                    s.sendTo(fresh);
                    fresh.enqueue(s, true);
                }
            }
            return fresh;
        }
    }

    /** The segment's current group over the transport named {@code transportId}, or {@code null} (tests look at its paths). */
    public PathGroup group(RemoteSegment seg, String transportId) {
        AtomicReferenceArray<PathGroup> row = groups.get(seg);
        for (int i = 0; row != null && i < row.length(); i++) {
            PathGroup g = row.get(i);
            if (g != null && g.transport().id().equals(transportId)) {
                return g;
            }
        }
        return null;
    }

    /**
     * What {@code explain} shows as the paths (issue 24, multi-rail tcp: the rails): the names of the open connection's
     * paths over {@code slot} that {@code devices} allows (all where it names none of them); before a connection is
     * open, {@code devices} itself, or {@code null} (all).
     */
    public java.util.List<String> pathNames(RemoteSegment seg, TransportSlot slot, java.util.Set<String> devices) {
        AtomicReferenceArray<PathGroup> row = groups.get(seg);
        PathGroup g = row == null ? null : row.get(slot.index());
        if (g == null || !g.isOpen()) {
            return devices == null ? null : java.util.List.copyOf(devices);
        }
        java.util.List<String> all = new java.util.ArrayList<>();
        for (int i = 0; i < g.pathCount(); i++) {
            all.add(g.path(i).name());
        }
        java.util.List<String> allowed = devices == null ? all : all.stream().filter(devices::contains).toList();
        return allowed.isEmpty() ? all : allowed;
    }

    /**
     * A slice failed on {@code fromPath} of {@code from} (-1: it never left the queue, so it spent no attempt):
     * retry it on another path of the same connection while one is eligible, else move it to the next transport.
     */
    @Override
    public void reroute(RuntimeSlice s, PathGroup from, int fromPath, ErrorCode code, String message) {
        Task t = s.task();
        if (t.isTerminal()) {
            s.discard();
            return;
        }
        if (expired(s, code, message)) {
            return;
        }
        boolean retry = !state.isClosed() && code.retryable() && !(code == ErrorCode.TIMEOUT && t.explicitDeadline())
                && (fromPath < 0 || s.retried() <= maxAttempts);
        if (!retry) {
            s.giveUp(code, message);
            return;
        }
        if (from.isOpen() && !from.allPathsPaused(clock.nanoTime())) {
            s.avoid(fromPath);
            if (from.pathCount() > 1) {
                logFailover(from.segment(), from.describe(fromPath), from.transport().id() + "/another path", message);
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
    @Override
    public void connectFailed(PathGroup g, TransferException e) {
        for (RuntimeSlice s : g.takeAll()) {
            if (s.task().isTerminal()) {
                s.discard();
                continue;
            }
            s.task().exclude(g.transport().index());
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
        if (expired(s, code, message)) {
            return;
        }
        TransportSlot slot = from.transport();
        if (reconnect && !from.usable() && from.connectError() == null) {
            PathGroup again = groupFor(t.segment(), slot);
            if (again != from) {
                s.sendTo(again);
                again.enqueue(s, true);
                return;
            }
        }
        t.exclude(slot.index());
        Selection next = selector.select(t.resolved(), t.policy(), t.excluded(), s.length(), true, false);
        if (next.transport() == null) {
            s.giveUp(code, message + "; failover found no other transport: " + next.rejection().getMessage());
            return;
        }
        PathGroup g = groupFor(t.segment(), next.transport());
        logFailover(t.segment(), from.describe(fromPath), next.transport().id(), message);
        metrics.failover(slot.id(), next.transport().id());
        s.sendTo(g);
        s.avoid(-1);
        g.enqueue(s, true);
    }

    /**
     * Ends {@code s}'s task with TIMEOUT if its deadline passed: a retry could only wait somewhere else (on another
     * lane of the same dead link, or for a reconnect that takes the transport's connect timeout) for a task that is
     * already late. Returns whether it did.
     */
    private boolean expired(RuntimeSlice s, ErrorCode code, String message) {
        if (s.deadlineNanos() - clock.nanoTime() > 0) {
            return false;
        }
        s.expire(code == ErrorCode.TIMEOUT ? message : message + "; not retried: "
                + (s.task().explicitDeadline() ? "its deadline" : "transfer.timeout") + " has passed");
        return true;
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

    /** Runs {@link #sweep} every {@value #SWEEP_MILLIS} ms on {@code timer} until {@link #stopSweeping}. */
    public void startSweeping(ScheduledExecutorService timer) {
        sweeper = timer.scheduleWithFixedDelay(this::sweep, SWEEP_MILLIS, SWEEP_MILLIS, TimeUnit.MILLISECONDS);
    }

    public void stopSweeping() {
        ScheduledFuture<?> f = sweeper;
        if (f != null) {
            f.cancel(false);
        }
    }

    /** Revives groups whose cooldowns ended, and moves queues off groups whose paths are all paused or closed. */
    void sweep() {
        try {
            long now = clock.nanoTime();
            groups.forEach((seg, row) -> {
                if (seg.isClosed()) {
                    // a group started for a segment while it was being closed: nothing else would ever close it
                    closed(seg);
                } else {
                    sweep(seg, row, now);
                }
            });
        } catch (RuntimeException e) {
            log.error("scheduler sweep failed", e);
        }
    }

    private void sweep(RemoteSegment seg, AtomicReferenceArray<PathGroup> row, long now) {
        for (int i = 0; i < row.length(); i++) {
            PathGroup g = row.get(i);
            if (g == null || g.queued() == 0) {
                continue;
            }
            if (g.isConnecting()) {
                g.expireQueued(now);
                continue;
            }
            if (!g.isOpen() || g.allPathsPaused(now)) {
                for (RuntimeSlice s : g.takeAll()) {
                    reroute(s, g, -1, ErrorCode.PEER_FAILED, "every path of " + g.transport().id() + " to segment '"
                            + seg.name() + "' is paused or closed (last failure: " + g.lastFailure() + ")");
                }
            } else {
                g.drain();
            }
        }
    }

    /** Tells the segment's open connections about its new descriptor. */
    @Override
    public void descriptorChanged(RemoteSegment seg, SegmentDescriptor d) {
        AtomicReferenceArray<PathGroup> row = groups.get(seg);
        if (row == null) {
            return;
        }
        for (int i = 0; i < row.length(); i++) {
            PathGroup g = row.get(i);
            if (g != null) {
                g.descriptorChanged(d);
            }
        }
    }

    /** Closes the segment's connections; slices still queued for it end PEER_FAILED. */
    @Override
    public void closed(RemoteSegment seg) {
        AtomicReferenceArray<PathGroup> row = groups.remove(seg);
        if (row == null) {
            return;
        }
        for (int i = 0; i < row.length(); i++) {
            PathGroup g = row.getAndSet(i, null);
            if (g != null) {
                g.close();
                for (RuntimeSlice sl : g.takeAll()) {
                    sl.giveUp(ErrorCode.PEER_FAILED, "segment '" + seg.name() + "' was closed before the slice was posted");
                }
            }
        }
    }
}
