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
 * wins the compare-and-set on {@link #terminal}; later slice completions only return their slices to the pool. The
 * end is reported only when no slice of the task is in a transport (see {@link #finish}).
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
    /** Slices handed to a transport and not settled yet: while any is, local memory may still be written. */
    private final AtomicInteger inTransport = new AtomicInteger();
    /** The outcome as the application sees it: set once {@link #terminal} is decided and no slice is in a transport. */
    private volatile TransferStatus reported;
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

    /** Head of the posted slices on transports that can cancel; guarded by this. */
    private RuntimeSlice posted;

    /** Tracks a slice posted on a transport that declares cancellation, so ending the task can cancel it. */
    void linkPosted(RuntimeSlice s) {
        synchronized (this) {
            s.prevPosted = null;
            s.nextPosted = posted;
            if (posted != null) {
                posted.prevPosted = s;
            }
            posted = s;
            s.linked = true;
        }
    }

    void unlinkPosted(RuntimeSlice s) {
        if (!s.linked) {
            return;
        }
        synchronized (this) {
            if (!s.linked) {
                return;
            }
            if (s.prevPosted != null) {
                s.prevPosted.nextPosted = s.nextPosted;
            } else {
                posted = s.nextPosted;
            }
            if (s.nextPosted != null) {
                s.nextPosted.prevPosted = s.prevPosted;
            }
            s.prevPosted = null;
            s.nextPosted = null;
            s.linked = false;
        }
    }

    /** The task ended with slices in flight: asks their transports to drop them (those that can cancel). */
    private void cancelPosted() {
        RuntimeSlice[] slices;
        long[] generations;
        synchronized (this) {
            int n = 0;
            for (RuntimeSlice s = posted; s != null; s = s.nextPosted) {
                n++;
            }
            if (n == 0) {
                return;
            }
            slices = new RuntimeSlice[n];
            generations = new long[n];
            int i = 0;
            for (RuntimeSlice s = posted; s != null; s = s.nextPosted) {
                slices[i] = s;
                generations[i++] = s.generation();
            }
        }
        for (int i = 0; i < slices.length; i++) {
            slices[i].cancel(generations[i]);
        }
    }

    /** Whether the outcome is decided (no more slices should start), though it may not be reported yet. */
    boolean isTerminal() {
        return terminal.get() != null;
    }

    /**
     * A slice is about to be handed to a transport; false if the task already ended (then the slice must not go).
     * Count first, then check: {@link #finish} decides first, then looks at the count, so one sees the other.
     */
    boolean enterTransport() {
        inTransport.incrementAndGet();
        if (terminal.get() != null) {
            leaveTransport();
            return false;
        }
        return true;
    }

    /** A slice settled (its transport will not touch it again); the last one out reports a decided outcome. */
    void leaveTransport() {
        if (inTransport.decrementAndGet() == 0 && terminal.get() != null) {
            report();
        }
    }

    TransferStatus status() {
        TransferStatus t = reported;
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

    /**
     * Decides the task's outcome unless it was decided already; returns whether this call decided it. The outcome is
     * reported (status, future, batch) only once no slice of the task is in a transport any more: a READ slice still
     * streaming in after a sibling failed would otherwise write into memory the application believes is free.
     */
    boolean finish(TransferStatus status) {
        if (!terminal.compareAndSet(null, status)) {
            return false;
        }
        if (inTransport.get() == 0) {
            report();
        } else {
            cancelPosted();
        }
        return true;
    }

    private void report() {
        TransferStatus status;
        synchronized (this) {
            if (reported != null) {
                return;
            }
            status = terminal.get();
            reported = status;
        }
        batch.taskEnded(this, status);
        CompletableFuture<TransferStatus> f = future;
        if (f != null) {
            batch.launcher.completeAsync(f, status);
        }
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
        TransferStatus t = reported;
        if (t != null) {
            f.complete(t);
        }
        return f;
    }
}
