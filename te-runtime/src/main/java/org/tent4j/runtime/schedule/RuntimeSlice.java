package org.tent4j.runtime.schedule;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.runtime.memory.RegisteredBuffer;
import org.tent4j.runtime.plugins.TransportSlot;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.Slice;

/**
 * The runtime's slice: pooled, armed for each post. A completion settles it once; a failure is told to its
 * {@link PathGroup}, which hands it to the {@link SliceRouter}; that may reroute the same slice to another path or
 * transport, so its bytes are counted once, when it finally completes. A slice talks to its group only.
 *
 * <p>Its state is one word: a generation (incremented each time the slice returns to the pool) and a phase (idle,
 * armed, being canceled). A settlement finds the slice armed or it is stale: a transport settling a slice twice, or
 * after the runtime canceled it, is logged and counted ({@link SlicePool#staleSettlements()}) and changes nothing.
 * The pool reuses a slice only after a quarantine (oldest first), so a second settlement within it always meets an
 * idle slice, never one re-armed for another task; a later one is still detected whenever the slice is idle.
 * Canceling checks the generation, so it never touches a slice recycled meanwhile.
 */
public final class RuntimeSlice implements Slice {
    private static final Logger log = LoggerFactory.getLogger(RuntimeSlice.class);
    private static final VarHandle STATE;
    private static final long IDLE = 0;
    private static final long ARMED = 1;
    private static final long CANCELING = 2;
    private static final long PHASE = 3;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(RuntimeSlice.class, "state", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final SlicePool pool;
    /** Where it goes back to when recycled. */
    private final SlicePool.Stripe stripe;
    /** generation &lt;&lt; 2 | phase. */
    private volatile long state;
    private Task task;
    private Opcode opcode;
    private RegisteredBuffer localBuffer;
    private long localOffset;
    private BufferDescriptor remoteBuffer;
    private long remoteAddress;
    private long length;
    private long deadlineNanos;
    private PathGroup group;
    private int priority;
    private int path = -1;
    /** Which of its group's paths the submitting thread calls its own, modulo the path count (see {@link PathGroup}). */
    private int home;
    /** A path that just failed this slice; avoided when another path can take it. */
    private int avoidPath = -1;
    /** Times this slice failed and was retried, against the task's failover budget. */
    private int retries;
    private long enqueueNanos;
    /** When it went back to the pool (guards its quarantine there). */
    private long idleSinceNanos;
    private long postNanos;
    /** Other slices were in flight on its path when it was counted there (see {@link PathState#completed}). */
    private boolean busyAtPost;
    /** The task's list of posted slices, kept only on transports that can cancel (guarded by the task). */
    private RuntimeSlice prevPosted;
    private RuntimeSlice nextPosted;
    private boolean linked;

    RuntimeSlice(SlicePool pool, SlicePool.Stripe stripe) {
        this.pool = pool;
        this.stripe = stripe;
    }

    public void init(Task task, Opcode opcode, RegisteredBuffer localBuffer, long localOffset, BufferDescriptor remoteBuffer,
              long remoteAddress, long length, long deadlineNanos, int priority) {
        this.task = task;
        this.opcode = opcode;
        this.localBuffer = localBuffer;
        this.localOffset = localOffset;
        this.remoteBuffer = remoteBuffer;
        this.remoteAddress = remoteAddress;
        this.length = length;
        this.deadlineNanos = deadlineNanos;
        this.priority = priority;
        this.avoidPath = -1;
        this.path = -1;
        this.retries = 0;
    }

    Task task() {
        return task;
    }

    SlicePool.Stripe stripe() {
        return stripe;
    }

    /** The group that queues, posts and settles it; the router moves it to another when rerouting. */
    public void sendTo(PathGroup g) {
        group = g;
    }

    /** Its submitting thread's number, which picks that thread's own path in every group. */
    public void home(int h) {
        home = h;
    }

    public int home() {
        return home;
    }

    int priority() {
        return priority;
    }

    /** The next try should avoid {@code p}, the path that just failed it (-1: none). */
    void avoid(int p) {
        avoidPath = p;
    }

    int avoidedPath() {
        return avoidPath;
    }

    /** Counts one more retry; returns how many this use has had. */
    int retried() {
        return ++retries;
    }

    void queuedAt(long now) {
        enqueueNanos = now;
    }

    long queuedSince() {
        return enqueueNanos;
    }

    void busyAtPost(boolean busy) {
        busyAtPost = busy;
    }

    /** Puts this slice at the head of its task's posted list, whose head was {@code head}; returns the new head. */
    RuntimeSlice linkBefore(RuntimeSlice head) {
        prevPosted = null;
        nextPosted = head;
        if (head != null) {
            head.prevPosted = this;
        }
        linked = true;
        return this;
    }

    /** Whether it is in its task's posted list (read without the task's lock only as a hint). */
    boolean linked() {
        return linked;
    }

    /** Takes this slice out of its task's posted list, whose head is {@code head}; returns the new head. */
    RuntimeSlice unlink(RuntimeSlice head) {
        RuntimeSlice newHead = head;
        if (prevPosted != null) {
            prevPosted.nextPosted = nextPosted;
        } else {
            newHead = nextPosted;
        }
        if (nextPosted != null) {
            nextPosted.prevPosted = prevPosted;
        }
        prevPosted = null;
        nextPosted = null;
        linked = false;
        return newHead;
    }

    RuntimeSlice nextPosted() {
        return nextPosted;
    }

    void idleSince(long now) {
        idleSinceNanos = now;
    }

    long idleSince() {
        return idleSinceNanos;
    }

    RegisteredBuffer local() {
        return localBuffer;
    }

    /** Which use of this object this is; changes every time it returns to the pool. */
    long generation() {
        return state >>> 2;
    }

    @Override public Opcode opcode() { return opcode; }
    @Override public LocalBuffer localBuffer() { return localBuffer; }
    @Override public long localOffset() { return localOffset; }
    @Override public BufferDescriptor remoteBuffer() { return remoteBuffer; }
    @Override public long remoteAddress() { return remoteAddress; }
    @Override public long length() { return length; }
    @Override public long deadlineNanos() { return deadlineNanos; }
    @Override public int path() { return path; }

    /** Arms the slice for one post on {@code path}. */
    void post(int path, long now) {
        this.path = path;
        this.postNanos = now;
        this.state = (state & ~PHASE) | ARMED;
    }

    private boolean disarm() {
        for (;;) {
            long s = state;
            long phase = s & PHASE;
            if (phase == ARMED && STATE.compareAndSet(this, s, s & ~PHASE)) {
                return true;
            }
            if (phase == CANCELING) {
                // the runtime is asking the transport to cancel it; its answer decides who settles
                Thread.onSpinWait();
                continue;
            }
            if (phase != ARMED) {
                pool.staleSettlement();
                log.error("a transport settled a slice that was not in flight (generation {}, 0x{} +{}): a second settlement, or one"
                        + " after the slice was canceled; ignoring it", s >>> 2, Long.toHexString(remoteAddress), length);
                return false;
            }
        }
    }

    @Override
    public void complete() {
        if (!disarm()) {
            return;
        }
        PathGroup g = group;
        Task t = task;
        RegisteredBuffer b = localBuffer;
        long len = length;
        t.unlinkPosted(this);
        long now = g.completed(path, len, postNanos, busyAtPost);
        recycle(now);
        b.unpin();
        t.sliceCompleted(len);
        t.leaveTransport();
        g.drain();
    }

    @Override
    public void fail(ErrorCode code, String message) {
        if (!disarm()) {
            return;
        }
        PathGroup g = group;
        Task t = task;
        RegisteredBuffer b = localBuffer;
        int p = path;
        t.unlinkPosted(this);
        g.failed(p, length, code, message);
        b.unpin();
        // rerouting may post this slice again at once, or end the task; it leaves the transport after either
        g.reroute(this, p, code, message);
        t.leaveTransport();
        g.drain();
    }

    /**
     * Asks the transport to drop this slice, if it is still the use {@code generation} and in flight. Returns whether
     * the transport gave it back; then it is settled here (its task already ended) and returned to the pool.
     */
    boolean cancel(long generation) {
        long armed = (generation << 2) | ARMED;
        if (!STATE.compareAndSet(this, armed, (generation << 2) | CANCELING)) {
            return false; // settled, or recycled and reused, meanwhile
        }
        // ours until we say otherwise: its fields describe the post being canceled
        PathGroup g = group;
        if (!g.cancel(this)) {
            state = armed;
            return false;
        }
        state = generation << 2; // idle: the transport promised not to touch or settle it again
        Task t = task;
        RegisteredBuffer b = localBuffer;
        t.unlinkPosted(this);
        g.withdrawn(path, length);
        recycle();
        b.unpin();
        t.leaveTransport();
        return true;
    }

    /** Ends the slice's task: it will not be tried again. */
    void giveUp(ErrorCode code, String message) {
        Task t = task;
        TransportSlot tr = group == null ? null : group.transport();
        recycle();
        t.sliceFailed(tr, code, message);
    }

    /** Its deadline passed before it was posted. */
    void expire(String why) {
        giveUp(ErrorCode.TIMEOUT, why);
    }

    /** Returns a slice that will not move (its task already ended). */
    void discard() {
        recycle();
    }

    private void recycle() {
        recycle(pool.now());
    }

    private void recycle(long now) {
        Task t = task;
        task = null;
        localBuffer = null;
        remoteBuffer = null;
        group = null;
        state = ((state >>> 2) + 1) << 2;
        pool.give(this, now);
        t.sliceRecycled();
    }
}
