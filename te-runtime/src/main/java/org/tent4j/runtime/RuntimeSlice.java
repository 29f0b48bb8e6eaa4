package org.tent4j.runtime;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.Slice;

/**
 * The runtime's slice: pooled, armed for each post. A completion settles it once (a second one from a faulty
 * transport is logged and ignored); a failure hands it to the {@link FailoverController}, which may reroute the same slice to another
 * path or transport, so its bytes are counted once, when it finally completes.
 */
final class RuntimeSlice implements Slice {
    private static final Logger log = LoggerFactory.getLogger(RuntimeSlice.class);
    private static final VarHandle ARMED;

    static {
        try {
            ARMED = MethodHandles.lookup().findVarHandle(RuntimeSlice.class, "armed", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final SlicePool pool;
    private volatile boolean armed;
    private Task task;
    private Opcode opcode;
    private LocalBuffer localBuffer;
    private long localOffset;
    private BufferDescriptor remoteBuffer;
    private long remoteAddress;
    private long length;
    private long deadlineNanos;
    PathGroup group;
    int priority;
    int path = -1;
    /** A path that just failed this slice; avoided when another path can take it. */
    int avoidPath = -1;
    /** Times this slice failed and was retried, against the task's failover budget. */
    int retries;
    long enqueueNanos;
    private long postNanos;

    RuntimeSlice(SlicePool pool) {
        this.pool = pool;
    }

    void init(Task task, Opcode opcode, LocalBuffer localBuffer, long localOffset, BufferDescriptor remoteBuffer,
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
        this.armed = true;
    }

    private boolean disarm() {
        if (ARMED.compareAndSet(this, true, false)) {
            return true;
        }
        log.error("transport '{}' settled a slice that was not in flight (0x{} +{}); ignoring it",
                group == null ? "?" : group.transport.id(), Long.toHexString(remoteAddress), length);
        return false;
    }

    @Override
    public void complete() {
        if (!disarm()) {
            return;
        }
        PathGroup g = group;
        Task t = task;
        long len = length;
        g.completed(path, len, postNanos);
        recycle();
        t.sliceCompleted(len);
        g.drain();
    }

    @Override
    public void fail(ErrorCode code, String message) {
        if (!disarm()) {
            return;
        }
        PathGroup g = group;
        int p = path;
        g.failed(p, length, code, message);
        g.failover.reroute(this, g, p, code, message);
        g.drain();
    }

    /** Ends the slice's task: it will not be tried again. */
    void giveUp(ErrorCode code, String message) {
        Task t = task;
        TransportSlot tr = group == null ? null : group.transport;
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
        task = null;
        localBuffer = null;
        remoteBuffer = null;
        group = null;
        pool.give(this);
    }
}
