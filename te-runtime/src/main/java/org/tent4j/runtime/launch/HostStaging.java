package org.tent4j.runtime.launch;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferPlan;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.runtime.memory.BufferRegistrar;
import org.tent4j.runtime.plugins.DevicePlatforms;
import org.tent4j.runtime.schedule.Task;
import org.tent4j.runtime.select.Policy;
import org.tent4j.runtime.select.ResolvedRequest;
import org.tent4j.runtime.select.Selection;
import org.tent4j.runtime.select.TransportSelector;
import org.tent4j.spi.platform.DevicePlatform;

/**
 * Staging (issue 12): a request whose local memory no transport can move to the target directly (device memory
 * without GPUDirect, GPU memory to a remote file) goes through pinned host buffers instead. Each chunk is copied
 * between the device and a staging buffer by the device's platform, and carried between the staging buffer and the
 * target as an ordinary request, chosen by the same selector; at most {@link #DEPTH} chunks are in flight per engine
 * (a task waiting for a staging buffer waits without a thread), and each buffer goes on to its task's next chunk as
 * soon as its chunk is done, so copies and network transfers overlap.
 *
 * <p>The staging buffers are allocated by the platform ({@link DevicePlatform#allocateHost}, page-locked) on first use,
 * registered LOCAL_ONLY with every transport, and freed with the engine.
 */
public final class HostStaging {
    private static final Logger log = LoggerFactory.getLogger(HostStaging.class);
    public static final long CHUNK = 4L << 20;
    static final int DEPTH = 4;

    private final BufferRegistrar buffers;
    private final DevicePlatforms platforms;
    private final RequestResolver resolver;
    private final TransportSelector selector;
    private final Executor workers;
    private final Function<TransferRequest, CompletableFuture<TransferStatus>> submit;

    private final Object lock = new Object();
    /** Staging buffers per platform kind, allocated on first use; guarded by {@link #lock}. */
    private final Map<MemoryKind, Pool> pools = new java.util.EnumMap<>(MemoryKind.class);

    /** A route through host memory: the platform that copies, and the transport that carries the staged chunks. */
    record Route(DevicePlatform platform, Pool pool, Selection carrier) {
    }

    HostStaging(BufferRegistrar buffers, DevicePlatforms platforms, RequestResolver resolver, TransportSelector selector,
                Executor workers, Function<TransferRequest, CompletableFuture<TransferStatus>> submit) {
        this.buffers = buffers;
        this.platforms = platforms;
        this.resolver = resolver;
        this.selector = selector;
        this.workers = workers;
        this.submit = submit;
    }

    /**
     * The staged route for a request no transport carries directly, or {@code null} when staging cannot help: the local
     * memory is not device memory, no platform here copies it, or no transport carries host memory to the target.
     */
    Route route(ResolvedRequest rr, boolean traced) {
        MemoryKind kind = rr.localKind();
        if (!kind.isDevice()) {
            return null;
        }
        DevicePlatform platform = null;
        for (DevicePlatform p : platforms.get()) {
            if (p.memoryKind() == kind) {
                platform = p;
            }
        }
        if (platform == null) {
            return null;
        }
        Pool pool = pool(platform);
        TransferRequest r = rr.request();
        MemorySegment probe = pool.probe.asSlice(0, Math.min(CHUNK, r.length()));
        ResolvedRequest staged = resolver.resolve(chunkRequest(r, probe, r.targetOffset()));
        Selection carrier = selector.select(staged, selector.policyFor(staged), 0, 0, false, traced);
        return carrier.transport() == null ? null : new Route(platform, pool, carrier);
    }

    TransferPlan explain(ResolvedRequest rr, Selection direct, Route route) {
        TransferRequest r = rr.request();
        List<TransferPlan.Candidate> trace = new ArrayList<>(direct.trace());
        trace.addAll(route.carrier().trace());
        String via = rr.local().location() + " -> host staging (" + DEPTH + " x " + CHUNK + " bytes in flight, copied by the "
                + route.platform().memoryKind().prefix() + " platform) -> " + route.carrier().transport().id() + " -> "
                + rr.remoteKind().prefix();
        return new TransferPlan(direct.policy() == null ? null : direct.policy().name(), trace,
                route.carrier().transport().id(), null, CHUNK, (int) ((r.length() + CHUNK - 1) / CHUNK), null, via);
    }

    /** Runs the task through host memory; the task ends through its usual slice accounting, one slice per chunk. */
    void start(Task task, ResolvedRequest rr, Policy policy, Route route) {
        task.routed(rr, policy, route.carrier().transport());
        int n = (int) ((rr.request().length() + CHUNK - 1) / CHUNK);
        task.expectSlices(n);
        StagedTask t = new StagedTask(task, rr.request(), route, n);
        for (int i = 0; i < Math.min(DEPTH, n); i++) {
            route.pool().acquire(t::run);
        }
    }

    private static TransferRequest chunkRequest(TransferRequest r, MemorySegment staging, long target) {
        return new TransferRequest(r.opcode(), staging, r.target(), target, staging.byteSize(), r.priority(), r.transport(),
                r.transportMode(), r.policy(), r.deadlineNanos());
    }

    private Pool pool(DevicePlatform platform) {
        synchronized (lock) {
            Pool p = pools.get(platform.memoryKind());
            if (p == null) {
                List<RegisteredMemory> staging = new ArrayList<>(DEPTH);
                try {
                    for (int i = 0; i < DEPTH; i++) {
                        MemorySegment host = platform.allocateHost(CHUNK);
                        try {
                            staging.add(buffers.register(host, Location.CPU, Permission.LOCAL_ONLY, Map.of(),
                                    () -> platform.freeHost(host)));
                        } catch (RuntimeException e) {
                            platform.freeHost(host);
                            throw e;
                        }
                    }
                } catch (RuntimeException e) {
                    for (RegisteredMemory m : staging) {
                        buffers.unregister(m);
                    }
                    throw new TransferException(ErrorCode.INTERNAL, "cannot set up host staging for "
                            + platform.memoryKind().prefix() + " memory: " + e.getMessage(), e);
                }
                log.info("host staging for {} memory: {} pinned buffers of {} bytes", platform.memoryKind().prefix(),
                        DEPTH, CHUNK);
                p = new Pool(staging, workers);
                pools.put(platform.memoryKind(), p);
            }
            return p;
        }
    }

    /** Staging buffers shared by an engine's staged tasks; a task waiting for one is queued, not blocked. */
    static final class Pool {
        final MemorySegment probe;
        private final ArrayDeque<MemorySegment> free = new ArrayDeque<>();
        private final ArrayDeque<Consumer<MemorySegment>> waiting = new ArrayDeque<>();
        private final Executor workers;

        Pool(List<RegisteredMemory> staging, Executor workers) {
            this.workers = workers;
            this.probe = staging.getFirst().segment();
            for (RegisteredMemory m : staging) {
                free.add(m.segment());
            }
        }

        void acquire(Consumer<MemorySegment> user) {
            MemorySegment b;
            synchronized (this) {
                b = free.poll();
                if (b == null) {
                    waiting.add(user);
                    return;
                }
            }
            user.accept(b);
        }

        void release(MemorySegment b) {
            Consumer<MemorySegment> next;
            synchronized (this) {
                next = waiting.poll();
                if (next == null) {
                    free.add(b);
                    return;
                }
            }
            try {
                workers.execute(() -> next.accept(b));
            } catch (RejectedExecutionException e) {
                synchronized (this) {
                    free.add(b); // the engine is closing; the waiter's task ends with it
                }
            }
        }
    }

    /** One staged task: each staging buffer it holds moves chunk after chunk until none is left. */
    private final class StagedTask {
        private final Task task;
        private final TransferRequest request;
        private final Route route;
        private final int chunks;
        private final AtomicInteger next = new AtomicInteger();

        StagedTask(Task task, TransferRequest request, Route route, int chunks) {
            this.task = task;
            this.request = request;
            this.route = route;
            this.chunks = chunks;
        }

        void run(MemorySegment staging) {
            int i = next.getAndIncrement();
            if (i >= chunks || task.isTerminal()) {
                route.pool().release(staging);
                return;
            }
            long off = i * CHUNK;
            long len = Math.min(CHUNK, request.length() - off);
            MemorySegment device = request.local().asSlice(off, len);
            MemorySegment host = staging.asSlice(0, len);
            CompletableFuture<TransferStatus> carried;
            try {
                if (request.opcode() == Opcode.WRITE) {
                    route.platform().copy(host, device, len);
                }
                carried = submit.apply(chunkRequest(request, host, request.targetOffset() + off));
            } catch (RuntimeException e) {
                fail(staging, e);
                return;
            }
            carried.whenComplete((status, error) -> {
                if (error != null) {
                    fail(staging, error);
                    return;
                }
                if (status.state() != TransferState.COMPLETED) {
                    route.pool().release(staging);
                    task.sliceFailed(task.transport(), status.error() == null ? ErrorCode.INTERNAL : status.error(),
                            "staged chunk " + i + " (" + len + " bytes at target offset 0x"
                                    + Long.toHexString(request.targetOffset() + off) + "): " + status.message());
                    return;
                }
                try {
                    if (request.opcode() == Opcode.READ) {
                        route.platform().copy(device, host, len);
                    }
                } catch (RuntimeException e) {
                    fail(staging, e);
                    return;
                }
                task.sliceCompleted(len);
                run(staging);
            });
        }

        private void fail(MemorySegment staging, Throwable e) {
            route.pool().release(staging);
            ErrorCode code = e instanceof TransferException t ? t.code() : ErrorCode.INTERNAL;
            task.sliceFailed(task.transport(), code, "host staging via " + route.platform().memoryKind().prefix()
                    + " platform failed: " + e.getMessage());
        }
    }
}
