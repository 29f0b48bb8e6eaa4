package org.tent4j.runtime.schedule;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.runtime.peers.RemoteSegment;
import org.tent4j.runtime.plugins.TransportSlot;
import org.tent4j.runtime.select.Policy;
import org.tent4j.runtime.select.ResolvedRequest;

/**
 * One request's progress. It ends exactly once: the first of (last slice done, a slice failed, canceled, invalid)
 * wins the compare-and-set on {@link #terminal}; later slice completions only return their slices to the pool. The
 * end is reported only when no slice of the task is in a transport (see {@link #finish}).
 */
public final class Task {
    /** Where a task reports its end: the batch that holds it, or the prepared transfer that reuses it. */
    public interface Owner {
        void taskEnded(Task task, TransferStatus status);

        /** Completes the future of one of its tasks, off the transport's thread, so callbacks cannot stall an I/O loop. */
        void complete(CompletableFuture<TransferStatus> future, TransferStatus status);
    }

    /** What the owner runs once this task ended (a batch's notification); the task only carries it for the owner. */
    public interface EndHook {
        void taskEnded(TransferStatus status);
    }

    // Plain fields behind VarHandles rather than Atomic* objects: a task is created per request, and five atomics
    // were five more objects each time (about 100 of the 380 bytes a 4 KiB request allocated).
    private static final VarHandle REMAINING_SLICES;
    private static final VarHandle BYTES;
    private static final VarHandle TERMINAL;
    private static final VarHandle IN_TRANSPORT;
    private static final VarHandle EXCLUDED;
    private static final VarHandle REPORTED;
    private static final VarHandle LIVE_SLICES;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            REMAINING_SLICES = l.findVarHandle(Task.class, "remainingSlices", int.class);
            BYTES = l.findVarHandle(Task.class, "bytes", long.class);
            TERMINAL = l.findVarHandle(Task.class, "terminal", TransferStatus.class);
            IN_TRANSPORT = l.findVarHandle(Task.class, "inTransport", int.class);
            EXCLUDED = l.findVarHandle(Task.class, "excluded", long.class);
            REPORTED = l.findVarHandle(Task.class, "reported", TransferStatus.class);
            LIVE_SLICES = l.findVarHandle(Task.class, "liveSlices", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Owner owner;
    private final int id;
    private final Opcode opcode;
    private final long length;
    /** When the current use was submitted (reset by {@link #rearm}). */
    private long submitNanos;
    private final boolean explicitDeadline;
    private final String target;
    /**
     * Which use of a pooled task this is: its prepared transfer's post number, truncated (only ever compared with the
     * use just before or after it; always 0 in a batch). An int, as each field is paid by every batch task too.
     */
    private volatile int generation;
    /**
     * Slices cut for the current use and not yet back in the pool. A task is reported once none of its slices is in a
     * transport, but a slice may still wait in a path group's queue (to be discarded there) or be on its way to
     * another transport; a prepared transfer re-arms a task only when this is 0, so such a slice can never post for,
     * count toward or end a later post.
     */
    private volatile int liveSlices;
    /** A pooled task's completed status, made once: a post then allocates none. {@code null} in a batch. */
    private final TransferStatus completedStatus;
    private volatile int remainingSlices;
    private volatile long bytes;
    private volatile TransferStatus terminal;
    /** Slices handed to a transport and not settled yet: while any is, local memory may still be written. */
    private volatile int inTransport;
    /** The outcome as the application sees it: set once {@link #terminal} is decided and no slice is in a transport. */
    private volatile TransferStatus reported;
    private volatile CompletableFuture<TransferStatus> future;
    private volatile TransportSlot transport;
    private EndHook hook;
    /** What rerouting a failed slice needs: set once the request passed validation. */
    private ResolvedRequest resolved;
    /** The policy rule that orders this task's transports, or {@code null} for the default order. */
    private Policy policy;
    /** Transports this task gave up on (bit = transport index). */
    private volatile long excluded;

    public Task(Owner owner, int id, Opcode opcode, long length, boolean explicitDeadline, String target,
         long submitNanos, boolean pooled) {
        this.owner = owner;
        this.completedStatus = pooled ? TransferStatus.completed(length) : null;
        this.submitNanos = submitNanos;
        this.id = id;
        this.opcode = opcode;
        this.length = length;
        this.explicitDeadline = explicitDeadline;
        this.target = target;
    }

    public int id() { return id; }
    public Opcode opcode() { return opcode; }
    public long length() { return length; }
    public long submitNanos() { return submitNanos; }
    /** The request named its own deadline: a TIMEOUT ends it, and is not retried on another path. */
    boolean explicitDeadline() { return explicitDeadline; }
    /** The transport it was last sent over ({@code null} before it passed validation). */
    public TransportSlot transport() { return transport; }
    ResolvedRequest resolved() { return resolved; }
    Policy policy() { return policy; }
    public EndHook hook() { return hook; }

    public void hook(EndHook h) {
        hook = h;
    }

    /**
     * The request passed validation: resolved as {@code rr}, ordered by {@code policy} (may be {@code null}), carried
     * by {@code transport} (for a staged task, the transport of its chunks).
     */
    public void routed(ResolvedRequest rr, Policy policy, TransportSlot transport) {
        this.resolved = rr;
        this.policy = policy;
        this.transport = transport;
    }

    /** Whether a prepared transfer may re-arm this task: its use was reported and none of its slices is left anywhere. */
    public boolean quiescent() {
        return reported != null && liveSlices == 0;
    }

    /**
     * Makes a {@link #quiescent} task of a prepared transfer ready for its next post (the caller checked, and nothing
     * else refers to the task until it posts again). The generation goes first: a {@link #finish} of the previous use
     * still canceling its posted slices sees it and leaves the new use's slices alone.
     */
    public void rearm(long post, long now) {
        this.generation = (int) post;
        this.submitNanos = now;
        this.bytes = 0;
        this.excluded = 0;
        this.reported = null;
        this.terminal = null;
    }

    RemoteSegment segment() {
        return resolved.segment();
    }

    long excluded() {
        return excluded;
    }

    void exclude(int transportIndex) {
        EXCLUDED.getAndBitwiseOr(this, 1L << transportIndex);
    }

    public void expectSlices(int n) {
        remainingSlices = n;
        liveSlices = n;
    }

    /** One of this use's slices went back to the pool. */
    void sliceRecycled() {
        LIVE_SLICES.getAndAdd(this, -1);
    }

    /** Head of the posted slices on transports that can cancel; guarded by this. */
    private RuntimeSlice posted;

    /** Tracks a slice posted on a transport that declares cancellation, so ending the task can cancel it. */
    void linkPosted(RuntimeSlice s) {
        synchronized (this) {
            posted = s.linkBefore(posted);
        }
    }

    void unlinkPosted(RuntimeSlice s) {
        if (!s.linked()) {
            return;
        }
        synchronized (this) {
            if (!s.linked()) {
                return;
            }
            posted = s.unlink(posted);
        }
    }

    /** The task ended with slices in flight: asks their transports to drop them (those that can cancel). */
    private void cancelPosted(int use) {
        RuntimeSlice[] slices;
        long[] generations;
        synchronized (this) {
            if (generation != use) {
                return; // reported and re-armed meanwhile: what is posted now belongs to the next use
            }
            int n = 0;
            for (RuntimeSlice s = posted; s != null; s = s.nextPosted()) {
                n++;
            }
            if (n == 0) {
                return;
            }
            slices = new RuntimeSlice[n];
            generations = new long[n];
            int i = 0;
            for (RuntimeSlice s = posted; s != null; s = s.nextPosted()) {
                slices[i] = s;
                generations[i++] = s.generation();
            }
        }
        for (int i = 0; i < slices.length; i++) {
            slices[i].cancel(generations[i]);
        }
    }

    /** Whether the outcome is decided (no more slices should start), though it may not be reported yet. */
    public boolean isTerminal() {
        return terminal != null;
    }

    /**
     * A slice is about to be handed to a transport; false if the task already ended (then the slice must not go).
     * Count first, then check: {@link #finish} decides first, then looks at the count, so one sees the other.
     */
    boolean enterTransport() {
        IN_TRANSPORT.getAndAdd(this, 1);
        if (terminal != null) {
            leaveTransport();
            return false;
        }
        return true;
    }

    /** A slice settled (its transport will not touch it again); the last one out reports a decided outcome. */
    void leaveTransport() {
        if ((int) IN_TRANSPORT.getAndAdd(this, -1) == 1 && terminal != null) {
            report();
        }
    }

    public TransferStatus status() {
        TransferStatus t = reported;
        if (t != null) {
            return t;
        }
        long b = bytes;
        return b == 0 ? TransferStatus.PENDING : new TransferStatus(TransferState.PENDING, b, null, null);
    }

    public void sliceCompleted(long len) {
        BYTES.getAndAdd(this, len);
        if ((int) REMAINING_SLICES.getAndAdd(this, -1) == 1) {
            TransferStatus done = completedStatus;
            finish(done != null ? done : TransferStatus.completed(length));
        }
    }

    public void sliceFailed(TransportSlot tr, ErrorCode code, String message) {
        TransferState state = code == ErrorCode.TIMEOUT && explicitDeadline ? TransferState.TIMEOUT
                : code == ErrorCode.CANCELED ? TransferState.CANCELED : TransferState.FAILED;
        String m = "task " + id + " (" + opcode + " of " + length + " bytes to " + target + " over "
                + (tr == null ? "?" : tr.id()) + "): " + message;
        finish(new TransferStatus(state, bytes, code, m));
    }

    /**
     * Decides the task's outcome unless it was decided already; returns whether this call decided it. The outcome is
     * reported (status, future, batch) only once no slice of the task is in a transport any more: a READ slice still
     * streaming in after a sibling failed would otherwise write into memory the application believes is free.
     */
    public boolean finish(TransferStatus status) {
        int use = generation;
        if (!TERMINAL.compareAndSet(this, (TransferStatus) null, status)) {
            return false;
        }
        if (inTransport == 0) {
            report();
        } else {
            cancelPosted(use);
        }
        return true;
    }

    private void report() {
        TransferStatus status = terminal;
        if (!REPORTED.compareAndSet(this, (TransferStatus) null, status)) {
            return; // the other of the last slice out and the deciding call reported it
        }
        owner.taskEnded(this, status);
        CompletableFuture<TransferStatus> f = future;
        if (f != null) {
            owner.complete(f, status);
        }
    }

    public CompletableFuture<TransferStatus> future() {
        CompletableFuture<TransferStatus> f = future;
        if (f == null) {
            synchronized (this) {
                f = future;
                if (f == null) {
                    f = new CompletableFuture<>();
                    future = f;
                }
            }
        }
        TransferStatus t = reported;
        if (t != null) {
            f.complete(t);
        }
        return f;
    }
}
