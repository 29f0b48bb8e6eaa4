package org.tent4j.integration.nixl;

import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

import org.tent4j.api.TransferException;
import org.tent4j.integration.nixl.spi.Backend;
import org.tent4j.integration.nixl.spi.Progress;

/**
 * A prepared transfer: post it, poll {@link #status()} (or {@link #await}), post it again once it is terminal, release
 * it. Thread-safe; one post at a time.
 */
public final class XferRequest implements AutoCloseable {
    private final String remoteAgent;
    private final String backendId;
    private final Backend backend;
    private final Object handle;
    private final Supplier<String> reason;
    private final long bytes;
    private final int descriptors;
    private final byte[] notification;
    private XferState state = XferState.NOT_POSTED;
    private NixlException error;
    private boolean released;
    private long postStart;
    private long postNanos;
    private long transferNanos;
    private long posts;

    XferRequest(String remoteAgent, String backendId, Backend backend, Object handle, Supplier<String> reason, long bytes, int descriptors,
                byte[] notification) {
        this.remoteAgent = remoteAgent;
        this.backendId = backendId;
        this.backend = backend;
        this.handle = handle;
        this.reason = reason;
        this.bytes = bytes;
        this.descriptors = descriptors;
        this.notification = notification;
    }

    /** Starts the transfer with the notification given at creation (if any). */
    public XferState post() {
        return post(notification);
    }

    /**
     * Starts (or restarts) the transfer, sending {@code notificationOverride} after its data if not null. Returns DONE
     * if it finished inside the call.
     *
     * @throws NixlException REPOST_ACTIVE while the last post is in flight, NOT_ALLOWED once released
     */
    public synchronized XferState post(byte[] notificationOverride) {
        if (released) {
            throw new NixlException(NixlStatus.NOT_ALLOWED, "request to agent '" + remoteAgent + "' was released");
        }
        if (state == XferState.IN_PROGRESS && poll() == XferState.IN_PROGRESS) {
            throw new NixlException(NixlStatus.REPOST_ACTIVE, "request to agent '" + remoteAgent + "' on backend '" + backendId
                    + "' is still in flight; post again once it is terminal");
        }
        long t0 = System.nanoTime();
        error = null;
        transferNanos = 0;
        try {
            backend.post(handle, notificationOverride);
        } catch (TransferException e) {
            state = XferState.FAILED;
            error = new NixlException(NixlStatus.BACKEND, "backend '" + backendId + "' could not post to agent '" + remoteAgent + "': "
                    + e.getMessage(), e);
            throw error;
        } catch (NixlException e) {
            state = XferState.FAILED;
            error = e;
            throw e;
        }
        postStart = t0;
        postNanos = System.nanoTime() - t0;
        posts++;
        state = XferState.IN_PROGRESS;
        return poll();
    }

    /** Where the last post stands (asks the backend while it is in flight). */
    public synchronized XferState status() {
        return state == XferState.IN_PROGRESS ? poll() : state;
    }

    private XferState poll() {
        Progress p = backend.check(handle);
        if (p.state().isTerminal()) {
            state = p.state();
            transferNanos = Math.max(0, p.finishedNanos() - postStart);
            if (p.state() == XferState.FAILED) {
                error = new NixlException(p.error(), "transfer to agent '" + remoteAgent + "' on backend '" + backendId + "' failed: " + p.message());
            }
        }
        return state;
    }

    /** Waits up to {@code timeout} for the last post to end; returns its state (IN_PROGRESS if time ran out). */
    public XferState await(Duration timeout) throws InterruptedException {
        CompletionStage<?> done;
        synchronized (this) {
            if (state != XferState.IN_PROGRESS) {
                return state;
            }
            done = backend.completion(handle);
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        if (done != null) {
            try {
                done.toCompletableFuture().get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            } catch (TimeoutException | ExecutionException e) {
                // the state below says what happened
            }
            return status();
        }
        // a backend without a completion signal progresses only when checked
        long park = 1_000;
        while (status() == XferState.IN_PROGRESS && System.nanoTime() < deadline) {
            if (Thread.interrupted()) {
                throw new InterruptedException();
            }
            LockSupport.parkNanos(park);
            park = Math.min(park * 2, 1_000_000);
        }
        return status();
    }

    /** Why the last post failed, or {@code null}. */
    public synchronized NixlException error() {
        return error;
    }

    /** Timings of the last post. */
    public synchronized XferTelemetry telemetry() {
        return new XferTelemetry(postNanos, state.isTerminal() ? transferNanos : 0, bytes, descriptors, posts);
    }

    /** The backend chosen for this request. */
    public String backend() {
        return backendId;
    }

    /** Why that backend was chosen (and the others were not). */
    public String selectionReason() {
        return reason.get();
    }

    public String remoteAgent() {
        return remoteAgent;
    }

    /**
     * Frees the request; a post still in flight is aborted.
     *
     * @throws NixlException BACKEND if the backend could not stop it yet (its memory may still be written)
     */
    public synchronized void release() {
        if (released) {
            return;
        }
        released = true;
        boolean inFlight = state == XferState.IN_PROGRESS && poll() == XferState.IN_PROGRESS;
        boolean stopped = backend.release(handle);
        if (inFlight && !stopped) {
            throw new NixlException(NixlStatus.BACKEND, "request to agent '" + remoteAgent + "' on backend '" + backendId
                    + "' was in flight and could not be aborted at once; its memory may still change");
        }
        if (inFlight) {
            state = XferState.FAILED;
            error = new NixlException(NixlStatus.CANCELED, "request to agent '" + remoteAgent + "' released while in flight");
        }
    }

    @Override
    public void close() {
        release();
    }
}
