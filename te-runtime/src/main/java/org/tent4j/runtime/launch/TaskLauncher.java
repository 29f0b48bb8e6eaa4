package org.tent4j.runtime.launch;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferPlan;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.runtime.EngineState;
import org.tent4j.runtime.Notifications;
import org.tent4j.runtime.memory.BufferRegistrar;
import org.tent4j.runtime.memory.RegisteredBuffer;
import org.tent4j.runtime.metrics.EngineMetrics;
import org.tent4j.runtime.peers.RemoteSegment;
import org.tent4j.runtime.plugins.DevicePlatforms;
import org.tent4j.runtime.plugins.TransportSlot;
import org.tent4j.runtime.schedule.PathGroup;
import org.tent4j.runtime.schedule.RuntimeSlice;
import org.tent4j.runtime.schedule.SlicePool;
import org.tent4j.runtime.schedule.SliceRouter;
import org.tent4j.runtime.schedule.Task;
import org.tent4j.runtime.select.Policy;
import org.tent4j.runtime.select.ResolvedRequest;
import org.tent4j.runtime.select.Selection;
import org.tent4j.runtime.select.TransportSelector;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.TimeSource;

/**
 * Starts tasks: resolve, select, cut into slices, queue them on the path group the {@link SliceRouter} finds for the
 * chosen transport. Never blocks on a peer (the group connects on a worker). {@link #explain} runs the same resolve
 * and select and reports instead of posting. A request no transport carries directly may go through
 * {@link HostStaging}, which this launcher builds and which starts its chunks through {@link #submit}, so nothing
 * reaches back into the engine's facade. Also what batches need around a task: its creation, metrics when it ends,
 * completing its future off the transport's thread, notifications.
 */
public final class TaskLauncher {
    private static final Logger log = LoggerFactory.getLogger(TaskLauncher.class);

    private final EngineState state;
    private final RequestResolver resolver;
    private final TransportSelector selector;
    private final SliceRouter router;
    private final SlicePool slicePool;
    private final Notifications notifications;
    private final EngineMetrics metrics;
    private final Executor workers;
    private final TimeSource clock;
    private final long sliceSize;
    private final long transferTimeoutNanos;
    private final AwaitSpin awaitSpin;
    /**
     * Each submitting thread's number, handed out in the order threads first submit, so that threads started together
     * get different home paths in a group (see {@link PathGroup}): thread ids can share a remainder.
     */
    private static final AtomicInteger NEXT_HOME = new AtomicInteger();
    private static final ThreadLocal<Integer> HOME = ThreadLocal.withInitial(() -> NEXT_HOME.getAndIncrement() & Integer.MAX_VALUE);
    /** staging (issue 12): the route through host memory when no transport connects two memory kinds directly. */
    private final HostStaging staging;

    public TaskLauncher(EngineState state, RequestResolver resolver, TransportSelector selector, SliceRouter router, SlicePool slicePool,
                 Notifications notifications, EngineMetrics metrics, Executor workers, TimeSource clock, long sliceSize,
                 long transferTimeoutNanos, AwaitSpin awaitSpin, BufferRegistrar buffers, DevicePlatforms platforms) {
        this.state = state;
        this.resolver = resolver;
        this.selector = selector;
        this.router = router;
        this.slicePool = slicePool;
        this.notifications = notifications;
        this.metrics = metrics;
        this.workers = workers;
        this.clock = clock;
        this.sliceSize = sliceSize;
        this.transferTimeoutNanos = transferTimeoutNanos;
        this.awaitSpin = awaitSpin;
        // staged chunks are ordinary requests: resolved by the same resolver, started through this launcher's own entry
        this.staging = new HostStaging(buffers, platforms, resolver, selector, workers, this::submit);
    }

    /** How waiting threads spin before they sleep ({@code transfer.await_spin}). */
    AwaitSpin awaitSpin() {
        return awaitSpin;
    }

    void ensureOpen() {
        state.ensureOpen();
    }

    Notifications notifications() {
        return notifications;
    }

    Task task(BatchImpl batch, int id, TransferRequest r) {
        return new Task(batch, id, r.opcode(), r.length(), r.deadlineNanos() != 0, r.target().name(), clock.nanoTime(), false);
    }

    /** Resolves and selects exactly as {@link #start} does, and reports the decision. */
    public TransferPlan explain(TransferRequest r) {
        ResolvedRequest rr;
        Selection sel;
        try {
            rr = resolver.resolve(r);
        } catch (TransferException e) {
            return new TransferPlan(null, List.of(), null, null, 0, 0, e.getMessage());
        }
        Policy policy;
        try {
            policy = selector.policyFor(rr);
        } catch (TransferException e) {
            return new TransferPlan(null, List.of(), null, null, 0, 0, e.getMessage());
        }
        sel = selector.select(rr, policy, 0, 0, false, true);
        String policyName = policy == null ? null : policy.name();
        if (sel.transport() == null) {
            HostStaging.Route staged = stagedRoute(rr, true); // staging (issue 12)
            if (staged != null) {
                return staging.explain(rr, sel, staged);
            }
            return new TransferPlan(policyName, sel.trace(), null, null, 0, 0, sel.rejection().getMessage());
        }
        long step = Math.min(sliceSize, sel.transport().capabilities().maxSliceSize());
        TransferPlan plan = new TransferPlan(policyName, sel.trace(), sel.transport().id(),
                router.pathNames(rr.segment(), sel.transport(), policy == null ? null : policy.devices()), step,
                (int) ((r.length() + step - 1) / step), null);
        log.debug("explain {} of {} bytes to '{}': {}", r.opcode(), r.length(), r.target().name(), plan);
        return plan;
    }

    /** One request in a batch of its own: the engine's {@code submit}, and how host staging carries each chunk. */
    public CompletableFuture<TransferStatus> submit(TransferRequest r) {
        BatchImpl b = new BatchImpl(this, 1);
        b.submit(List.of(r));
        return b.completion(0);
    }

    /** Validates, selects, slices and queues one task; every failure ends the task rather than throwing. */
    void start(Task task, TransferRequest r) {
        try {
            post(task, r);
        } catch (RuntimeException e) {
            failed(task, e);
        }
    }

    /** Ends a task whose start threw: INVALID for bad input, FAILED when a peer, transport or the store let it down. */
    private void failed(Task task, RuntimeException failure) {
        if (failure instanceof TransferException e) {
            task.finish(new TransferStatus(e.code() == ErrorCode.PEER_UNREACHABLE || e.code() == ErrorCode.PEER_FAILED
                    || e.code() == ErrorCode.TRANSPORT_UNAVAILABLE || e.code() == ErrorCode.METADATA_UNAVAILABLE
                    ? TransferState.FAILED : TransferState.INVALID, 0, e.code(), "task " + task.id() + ": " + e.getMessage()));
        } else {
            log.error("task {} failed unexpectedly", task.id(), failure);
            task.finish(new TransferStatus(TransferState.FAILED, 0, ErrorCode.INTERNAL, "task " + task.id() + ": internal error: " + failure));
        }
    }

    private void post(Task task, TransferRequest r) {
        ResolvedRequest rr = resolver.resolve(r);
        long now = clock.nanoTime();
        long deadline = r.deadlineNanos() != 0 ? r.deadlineNanos() : now + transferTimeoutNanos;
        if (r.deadlineNanos() != 0 && deadline - now <= 0) {
            task.finish(new TransferStatus(TransferState.TIMEOUT, 0, ErrorCode.TIMEOUT, "task " + task.id() + ": deadline passed before submission"));
            return;
        }
        Policy policy = selector.policyFor(rr);
        TransportSlot slot = selector.firstChoice(rr, policy);
        if (slot == null) {
            Selection sel = selector.select(rr, policy, 0, 0, false, false);
            if (sel.transport() == null) { // staging (issue 12)
                HostStaging.Route staged = stagedRoute(rr, false);
                if (staged != null) {
                    staging.start(task, rr, policy, staged);
                    return;
                }
            }
            slot = sel.orThrow();
            selector.recordFallback(rr, sel);
        }
        cut(task, rr, policy, slot, r.opcode(), rr.local(), r.local().address() - rr.local().address(), rr.segment(), rr.remote(),
                r.targetOffset(), r.length(), r.priority().ordinal(), deadline, now);
    }

    /**
     * What a prepared transfer keeps of one request between posts: the request as resolved, its policy, the transport
     * chosen for it, and, copied out flat, everything cutting it into slices reads. A te-bench window cycles through
     * tens of thousands of prepared requests, so their objects are cold in the cache at each post; reading one flat
     * record instead of following request, resolution and memory segment saves several dependent cache misses per
     * request. {@link #stale} says when it must be resolved again.
     */
    record Route(ResolvedRequest resolved, Policy policy, TransportSlot slot, Opcode opcode, RegisteredBuffer local,
                 long localOffset, RemoteSegment segment, SegmentDescriptor descriptor, BufferDescriptor remote,
                 long targetOffset, long length, int priority) {
        Route(ResolvedRequest rr, Policy policy, TransportSlot slot) {
            this(rr, policy, slot, rr.request().opcode(), rr.local(), rr.request().local().address() - rr.local().address(),
                    rr.segment(), rr.descriptor(), rr.remote(), rr.request().targetOffset(), rr.request().length(),
                    rr.request().priority().ordinal());
        }

        /** The local buffer was unregistered, or the target segment closed, vanished or republished its descriptor. */
        boolean stale() {
            return local.retired() || segment.descriptor() != descriptor || segment.isGone() || segment.isClosed();
        }
    }

    /**
     * Resolves and selects {@code r} as {@link #start} does, for a prepared transfer; throws what a batch would report
     * as INVALID or FAILED. A request that only host staging could carry is refused (prepared transfers post directly).
     */
    Route route(TransferRequest r) {
        if (r.deadlineNanos() != 0) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "a prepared request cannot carry an absolute deadline"
                    + " (deadlineNanos " + r.deadlineNanos() + "): each post gets the engine's transfer.timeout");
        }
        ResolvedRequest rr = resolver.resolve(r);
        Policy policy = selector.policyFor(rr);
        TransportSlot slot = selector.firstChoice(rr, policy);
        if (slot == null) {
            Selection sel = selector.select(rr, policy, 0, 0, false, false);
            if (sel.transport() == null && stagedRoute(rr, false) != null) {
                throw new TransferException(ErrorCode.NO_TRANSPORT, r.opcode() + " of " + r.length() + " bytes to segment '"
                        + rr.segment().name() + "' needs host staging (" + rr.localKind() + " to " + rr.remoteKind()
                        + "), which a prepared transfer does not do; submit it in a Batch");
            }
            slot = sel.orThrow();
            selector.recordFallback(rr, sel);
        }
        return new Route(rr, policy, slot);
    }

    /**
     * One post of one prepared request: a task re-armed by its prepared transfer, on its kept route. {@code now} is the
     * post's time: one clock read for all of a post's requests, which start within microseconds of each other.
     */
    void start(Task task, Route route, long now) {
        try {
            cut(task, route.resolved(), route.policy(), route.slot(), route.opcode(), route.local(), route.localOffset(),
                    route.segment(), route.remote(), route.targetOffset(), route.length(), route.priority(),
                    now + transferTimeoutNanos, now);
        } catch (RuntimeException e) {
            failed(task, e);
        }
    }

    /** The engine's time, as tasks record it. */
    long now() {
        return clock.nanoTime();
    }

    /** A task of a prepared transfer ({@link Task#rearm} makes it ready for each post). */
    Task preparedTask(Task.Owner owner, int index, TransferRequest r) {
        return new Task(owner, index, r.opcode(), r.length(), false, r.target().name(), clock.nanoTime(), true);
    }

    /** A request that could not be resolved again on a post ends INVALID (or FAILED), as in a batch. */
    void refuse(Task task, RuntimeException e) {
        failed(task, e);
    }

    /** Cuts a checked request into slices and queues them on the chosen transport's path group. */
    private void cut(Task task, ResolvedRequest rr, Policy policy, TransportSlot slot, Opcode opcode, RegisteredBuffer local,
                     long localOffset, RemoteSegment segment, BufferDescriptor remote, long target, long length, int priority,
                     long deadline, long now) {
        task.routed(rr, policy, slot);
        PathGroup group = router.groupFor(segment, slot);
        long step = Math.min(sliceSize, slot.capabilities().maxSliceSize());
        int n = (int) ((length + step - 1) / step);
        task.expectSlices(n);
        int home = HOME.get();
        for (int i = 0; i < n; i++) {
            long off = i * step;
            RuntimeSlice s = slicePool.take(now);
            s.init(task, opcode, local, localOffset + off, remote, target + off, Math.min(step, length - off), deadline, priority);
            s.sendTo(group);
            s.home(home);
            group.submit(s, now);
        }
    }

    /** staging (issue 12): the route through host memory, or {@code null} (then the direct rejection stands). */
    private HostStaging.Route stagedRoute(ResolvedRequest rr, boolean traced) {
        try {
            return staging.route(rr, traced);
        } catch (TransferException e) {
            log.debug("no staged route for {} to '{}': {}", rr.request().opcode(), rr.segment().name(), e.getMessage());
            return null;
        }
    }

    void recordTask(Task task, TransferStatus status) {
        TransportSlot t = task.transport();
        metrics.record(t == null ? -1 : t.index(), task.opcode(), status.state() == TransferState.COMPLETED, task.length(),
                clock.nanoTime() - task.submitNanos());
    }

    /** Completes a future off the transport's thread, so callers' callbacks cannot stall an I/O loop. */
    void completeAsync(CompletableFuture<TransferStatus> f, TransferStatus status) {
        try {
            workers.execute(() -> f.complete(status));
        } catch (RejectedExecutionException e) {
            f.complete(status);
        }
    }
}
