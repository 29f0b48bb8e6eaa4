package org.tent4j.transport.faulty;

import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Slice;

/**
 * A connection of the wrapped transport with faults in front of it. Injected failures are PEER_FAILED (retryable), so
 * the runtime retries them on another path or transport, exactly as it would a real peer failure; every message
 * starts with {@code injected:} so a test can tell them from real ones.
 *
 * <p>Each posted slice that reaches the delegate is wrapped in a {@link FaultySlice}: one allocation per slice, which
 * a test tool can afford. The wrapper carries the rewritten remote buffer (faulty's attributes under the delegate's
 * id; the last one is cached, so a task's slices share it) and decides how the delegate's settlement is reported.
 *
 * <p>Slices held here (delayed before posting, or completions held back on a slow path) are settled at
 * {@link #close()}: the held-back completions complete (their bytes did land), the delayed ones fail.
 */
final class FaultInjectingConnection implements PeerConnection {
    private static final Logger LOG = LoggerFactory.getLogger(FaultInjectingConnection.class);

    private final FaultInjectingTransport transport;
    private final FaultPlan plan;
    private final PeerConnection delegate;
    private final ScheduledExecutorService scheduler;
    private final String peer;
    private final AtomicLong posted = new AtomicLong();
    private final AtomicLong postedOnFailPath = new AtomicLong();
    private final AtomicBoolean dropped = new AtomicBoolean();
    private final AtomicBoolean pathKilled = new AtomicBoolean();
    private final SplittableRandom random;
    private final Set<FaultySlice> held = ConcurrentHashMap.newKeySet();
    private final SlowLink slowLink;
    /** Only when the delegate can cancel: which wrapper carries which of the runtime's slices. */
    private final Map<Slice, FaultySlice> byOriginal;
    private volatile Rewritten lastRewritten;
    private volatile boolean closed;

    FaultInjectingConnection(FaultInjectingTransport transport, FaultPlan plan, PeerConnection delegate,
                             ScheduledExecutorService scheduler, String peer, boolean cancellation) {
        this.transport = transport;
        this.plan = plan;
        this.delegate = delegate;
        this.scheduler = scheduler;
        this.peer = peer;
        this.random = plan.seed() == 0 ? new SplittableRandom() : new SplittableRandom(plan.seed());
        this.byOriginal = cancellation ? new ConcurrentHashMap<>() : null;
        this.slowLink = new SlowLink(plan.slowRate());
    }

    @Override
    public void post(Slice slice) {
        long n = posted.incrementAndGet();
        if (closed) {
            slice.fail(ErrorCode.PEER_FAILED, describe(slice) + ": the faulty connection is closed");
            return;
        }
        if (plan.dropPeerAfter() >= 0 && n > plan.dropPeerAfter()) {
            if (dropped.compareAndSet(false, true)) {
                LOG.info("injected: dropping the {} connection to segment '{}' after {} slices", transport.delegateId(),
                        peer, plan.dropPeerAfter());
                delegate.close();
            }
            slice.fail(ErrorCode.PEER_FAILED, "injected: connection dropped after " + plan.dropPeerAfter()
                    + " slices (drop_peer_after): " + describe(slice));
            return;
        }
        if (plan.failAfter() >= 0 && n > plan.failAfter()) {
            slice.fail(ErrorCode.PEER_FAILED, "injected: slice #" + n + " fails (fail_after=" + plan.failAfter()
                    + "): " + describe(slice));
            return;
        }
        if (plan.failPath() >= 0 && slice.path() == plan.failPath()
                && postedOnFailPath.incrementAndGet() > plan.failPathAfter()) {
            if (pathKilled.compareAndSet(false, true)) {
                LOG.info("injected: path {} to segment '{}' killed after {} slices", plan.failPath(), peer,
                        plan.failPathAfter());
            }
            slice.fail(ErrorCode.PEER_FAILED, "injected: path killed after " + plan.failPathAfter()
                    + " slices (fail_path=" + plan.failPath() + "): " + describe(slice));
            return;
        }
        if (plan.failPercent() > 0 && draw() < plan.failPercent()) {
            slice.fail(ErrorCode.PEER_FAILED, "injected: random failure (fail_percent=" + plan.failPercent() + "): "
                    + describe(slice));
            return;
        }
        FaultySlice w = new FaultySlice(slice, rewrite(slice.remoteBuffer()));
        if (byOriginal != null) {
            byOriginal.put(slice, w);
        }
        if (plan.delay().isZero()) {
            forward(w);
            return;
        }
        held.add(w);
        try {
            scheduler.schedule(() -> {
                if (held.remove(w)) {
                    forward(w);
                }
            }, plan.delay().toNanos(), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            if (held.remove(w)) {
                failed(w, ErrorCode.ENGINE_CLOSED, "injected delay could not be scheduled (engine closing): "
                        + describe(slice));
            }
        }
    }

    private void forward(FaultySlice w) {
        w.postNanos = System.nanoTime();
        try {
            delegate.post(w);
        } catch (RuntimeException e) {
            failed(w, ErrorCode.INTERNAL, "transport '" + transport.delegateId() + "' threw from post: " + e);
        }
    }

    /** The delegate completed {@code w}: report it as the plan says. */
    private void completed(FaultySlice w) {
        untrack(w);
        Slice s = w.original;
        if (plan.corruptStatus()) {
            s.fail(ErrorCode.PEER_FAILED, "injected: corrupted status (the bytes did land): " + describe(s));
            return;
        }
        if (plan.slows(s.path())) {
            long now = System.nanoTime();
            long due = Math.max(now, slowLink.carry(w.postNanos, s.length()));
            boolean late = due - s.deadlineNanos() > 0;
            w.landed = true;
            held.add(w);
            try {
                scheduler.schedule(() -> {
                    if (!held.remove(w)) {
                        return;
                    }
                    if (late) {
                        s.fail(ErrorCode.TIMEOUT, "injected: slow path " + s.path() + " (slow_rate="
                                + plan.slowRate() + " B/s) missed the deadline: " + describe(s));
                    } else {
                        s.complete();
                    }
                }, (late ? s.deadlineNanos() : due) - now, TimeUnit.NANOSECONDS);
                return;
            } catch (RejectedExecutionException e) {
                if (!held.remove(w)) {
                    return;
                }
            }
        }
        s.complete();
    }

    private void failed(FaultySlice w, ErrorCode code, String message) {
        untrack(w);
        w.original.fail(code, message);
    }

    private void untrack(FaultySlice w) {
        if (byOriginal != null) {
            byOriginal.remove(w.original, w);
        }
    }

    @Override
    public boolean cancel(Slice slice) {
        if (byOriginal == null) {
            return false;
        }
        FaultySlice w = byOriginal.get(slice);
        if (w == null) {
            return false;
        }
        // still waiting out an injected delay: it never reached the delegate
        if (!w.landed && held.remove(w)) {
            byOriginal.remove(slice, w);
            return true;
        }
        if (delegate.cancel(w)) {
            byOriginal.remove(slice, w);
            return true;
        }
        return false;
    }

    @Override
    public int pathCount() {
        return plan.paths() > 0 ? plan.paths() : delegate.pathCount();
    }

    @Override
    public String pathName(int path) {
        return plan.paths() > 0 ? "v" + path + "@" + delegate.pathName(delegatePath(path)) : delegate.pathName(path);
    }

    /** The wrapped transport's path that carries the runtime's {@code path}. */
    private int delegatePath(int path) {
        return plan.paths() > 0 ? path % Math.max(1, delegate.pathCount()) : path;
    }

    @Override
    public void descriptorChanged(SegmentDescriptor descriptor) {
        delegate.descriptorChanged(transport.rewrite(descriptor));
    }

    @Override
    public boolean isOpen() {
        return !closed && delegate.isOpen();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (FaultySlice w : held) {
            if (held.remove(w)) {
                if (w.landed) {
                    w.original.complete();
                } else {
                    failed(w, ErrorCode.PEER_FAILED, "the faulty connection closed during an injected delay: "
                            + describe(w.original));
                }
            }
        }
        delegate.close();
        transport.connectionClosed(this);
    }

    private int draw() {
        synchronized (random) {
            return random.nextInt(100);
        }
    }

    private BufferDescriptor rewrite(BufferDescriptor remote) {
        Rewritten r = lastRewritten;
        if (r != null && r.original == remote) {
            return r.rewritten;
        }
        BufferDescriptor rewritten = transport.rewrite(remote);
        lastRewritten = new Rewritten(remote, rewritten);
        return rewritten;
    }

    private String describe(Slice s) {
        return "faulty(" + transport.delegateId() + ") " + s.opcode() + " of " + s.length() + " bytes at 0x"
                + Long.toHexString(s.remoteAddress()) + " on path " + s.path() + " to segment '" + peer + "'";
    }

    private record Rewritten(BufferDescriptor original, BufferDescriptor rewritten) {
    }

    /**
     * The slow path as a link of {@code rate} bytes per second: it carries its slices one after another, each starting
     * when it was posted or when the link finished the one before, whichever is later.
     */
    private static final class SlowLink {
        private final long rate;
        private long freeAtNanos = Long.MIN_VALUE;

        SlowLink(long rate) {
            this.rate = rate;
        }

        /** Books {@code length} bytes posted at {@code postNanos}; returns when the link has carried them. */
        synchronized long carry(long postNanos, long length) {
            long start = freeAtNanos == Long.MIN_VALUE || postNanos - freeAtNanos > 0 ? postNanos : freeAtNanos;
            freeAtNanos = start + (long) (length * 1e9 / rate);
            return freeAtNanos;
        }
    }

    /** What the delegate sees: the runtime's slice with the rewritten remote buffer, settling through this connection. */
    private final class FaultySlice implements Slice {
        final Slice original;
        private final BufferDescriptor remote;
        volatile long postNanos;
        /** The delegate completed it; only the report is held back. */
        volatile boolean landed;

        FaultySlice(Slice original, BufferDescriptor remote) {
            this.original = original;
            this.remote = remote;
        }

        @Override public Opcode opcode() { return original.opcode(); }
        @Override public LocalBuffer localBuffer() { return original.localBuffer(); }
        @Override public long localOffset() { return original.localOffset(); }
        @Override public BufferDescriptor remoteBuffer() { return remote; }
        @Override public long remoteAddress() { return original.remoteAddress(); }
        @Override public long length() { return original.length(); }
        @Override public int path() { return delegatePath(original.path()); }
        @Override public long deadlineNanos() { return original.deadlineNanos(); }

        @Override
        public void complete() {
            completed(this);
        }

        @Override
        public void fail(ErrorCode code, String message) {
            failed(this, code, message);
        }
    }
}
