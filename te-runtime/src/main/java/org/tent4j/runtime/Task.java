package org.tent4j.runtime;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;

/**
 * One request's progress. It ends exactly once: the first of (last slice done, a slice failed, canceled, invalid)
 * wins the compare-and-set on {@link #terminal}; later slice completions only return their slices to the pool.
 */
final class Task {
    final BatchImpl batch;
    final int id;
    final Opcode opcode;
    final long length;
    final long submitNanos;
    final boolean explicitDeadline;
    final String target;
    private final AtomicInteger remainingSlices = new AtomicInteger();
    private final AtomicLong bytes = new AtomicLong();
    private final AtomicReference<TransferStatus> terminal = new AtomicReference<>();
    private volatile CompletableFuture<TransferStatus> future;
    volatile TransportSlot transport;
    BatchImpl.NotificationHook hook;
    /** What rerouting a failed slice needs: set once the request passed validation. */
    ResolvedRequest resolved;
    /** The policy rule that orders this task's transports, or {@code null} for the default order. */
    Policy policy;
    /** Transports this task gave up on (bit = transport index). */
    private final AtomicLong excluded = new AtomicLong();

    Task(BatchImpl batch, int id, Opcode opcode, long length, boolean explicitDeadline, String target, long submitNanos) {
        this.batch = batch;
        this.submitNanos = submitNanos;
        this.id = id;
        this.opcode = opcode;
        this.length = length;
        this.explicitDeadline = explicitDeadline;
        this.target = target;
    }

    RemoteSegment segment() {
        return resolved.segment();
    }

    long excluded() {
        return excluded.get();
    }

    void exclude(int transportIndex) {
        excluded.getAndUpdate(m -> m | (1L << transportIndex));
    }

    void expectSlices(int n) {
        remainingSlices.set(n);
    }

    boolean isTerminal() {
        return terminal.get() != null;
    }

    TransferStatus status() {
        TransferStatus t = terminal.get();
        if (t != null) {
            return t;
        }
        long b = bytes.get();
        return b == 0 ? TransferStatus.PENDING : new TransferStatus(TransferState.PENDING, b, null, null);
    }

    void sliceCompleted(long len) {
        bytes.addAndGet(len);
        if (remainingSlices.decrementAndGet() == 0) {
            finish(TransferStatus.completed(length));
        }
    }

    void sliceFailed(TransportSlot tr, ErrorCode code, String message) {
        TransferState state = code == ErrorCode.TIMEOUT && explicitDeadline ? TransferState.TIMEOUT
                : code == ErrorCode.CANCELED ? TransferState.CANCELED : TransferState.FAILED;
        String m = "task " + id + " (" + opcode + " of " + length + " bytes to " + target + " over "
                + (tr == null ? "?" : tr.id()) + "): " + message;
        finish(new TransferStatus(state, bytes.get(), code, m));
    }

    /** Ends the task unless it already ended; returns whether this call ended it. */
    boolean finish(TransferStatus status) {
        if (!terminal.compareAndSet(null, status)) {
            return false;
        }
        batch.taskEnded(this, status);
        CompletableFuture<TransferStatus> f = future;
        if (f != null) {
            batch.launcher.completeAsync(f, status);
        }
        return true;
    }

    CompletableFuture<TransferStatus> future() {
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
        TransferStatus t = terminal.get();
        if (t != null) {
            f.complete(t);
        }
        return f;
    }
}
