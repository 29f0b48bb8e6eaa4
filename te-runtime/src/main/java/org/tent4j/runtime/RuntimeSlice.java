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

/** The runtime's slice: pooled, re-armed for each use; a second completion from a faulty transport is ignored. */
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
    private TransportSlot transport;
    private Opcode opcode;
    private LocalBuffer localBuffer;
    private long localOffset;
    private BufferDescriptor remoteBuffer;
    private long remoteAddress;
    private long length;
    private long deadlineNanos;

    RuntimeSlice(SlicePool pool) {
        this.pool = pool;
    }

    void arm(Task task, TransportSlot transport, Opcode opcode, LocalBuffer localBuffer, long localOffset,
             BufferDescriptor remoteBuffer, long remoteAddress, long length, long deadlineNanos) {
        this.task = task;
        this.transport = transport;
        this.opcode = opcode;
        this.localBuffer = localBuffer;
        this.localOffset = localOffset;
        this.remoteBuffer = remoteBuffer;
        this.remoteAddress = remoteAddress;
        this.length = length;
        this.deadlineNanos = deadlineNanos;
        this.armed = true;
    }

    @Override public Opcode opcode() { return opcode; }
    @Override public LocalBuffer localBuffer() { return localBuffer; }
    @Override public long localOffset() { return localOffset; }
    @Override public BufferDescriptor remoteBuffer() { return remoteBuffer; }
    @Override public long remoteAddress() { return remoteAddress; }
    @Override public long length() { return length; }
    @Override public long deadlineNanos() { return deadlineNanos; }

    private boolean disarm() {
        if (ARMED.compareAndSet(this, true, false)) {
            return true;
        }
        log.error("transport '{}' completed a slice twice (0x{} +{}); ignoring the second completion",
                transport == null ? "?" : transport.id(), Long.toHexString(remoteAddress), length);
        return false;
    }

    @Override
    public void complete() {
        if (disarm()) {
            Task t = task;
            long len = length;
            recycle();
            t.sliceCompleted(len);
        }
    }

    @Override
    public void fail(ErrorCode code, String message) {
        if (disarm()) {
            Task t = task;
            TransportSlot tr = transport;
            recycle();
            t.sliceFailed(tr, code, message);
        }
    }

    /** Returns an unposted slice (the task ended before it could be posted). */
    void discard() {
        if (disarm()) {
            recycle();
        }
    }

    private void recycle() {
        task = null;
        localBuffer = null;
        remoteBuffer = null;
        transport = null;
        pool.give(this);
    }
}
