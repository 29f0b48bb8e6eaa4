package org.tent4j.runtime.launch;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.PreparedTransfer;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.runtime.EngineState;
import org.tent4j.runtime.schedule.Task;

/**
 * The engine's {@link PreparedTransfer}: each request resolved and routed once ({@link TaskLauncher.Route}), one pooled
 * {@link Task} per request re-armed for every post, and a count of the tasks still open. A post allocates nothing
 * while nothing changes: no task, no status (each task keeps its completed status), no resolution, no future.
 *
 * <p>A task is re-armed only when it is {@link Task#quiescent}: reported, and no slice of its previous use left in a
 * queue or on its way to another transport. Otherwise (a post that ended early, by a failure or a cancel, while some
 * slices still waited) that request gets a fresh task and the old one is dropped, still terminal, so a slice left over
 * can only fail its compare-and-set there. The post number is each task's generation.
 */
public final class PreparedTransferImpl extends EndWaiters implements PreparedTransfer, Task.Owner {
    private static final VarHandle OPEN;
    private static final VarHandle IN_FLIGHT;
    private static final TransferStatus CANCELED = new TransferStatus(TransferState.CANCELED, 0, ErrorCode.CANCELED,
            "prepared transfer canceled");

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            OPEN = l.findVarHandle(PreparedTransferImpl.class, "open", int.class);
            IN_FLIGHT = l.findVarHandle(PreparedTransferImpl.class, "inFlight", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final TaskLauncher launcher;
    private final EngineState engine;
    private final TransferRequest[] requests;
    private final TaskLauncher.Route[] routes;
    private final Task[] tasks;
    /** The latest post's number; written by the posting thread only (the in-flight flag admits one). */
    private volatile long posts;
    /** Tasks of the latest post not reported yet, plus one while {@link #post} is starting them. */
    private volatile int open;
    /** From a post until its last task is reported: a post in between is refused. */
    private volatile boolean inFlight;
    private volatile boolean closed;

    public PreparedTransferImpl(TaskLauncher launcher, EngineState engine, List<TransferRequest> requests) {
        if (requests.isEmpty()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "prepare needs at least one request");
        }
        this.launcher = launcher;
        this.engine = engine;
        this.requests = requests.toArray(new TransferRequest[0]);
        this.routes = new TaskLauncher.Route[this.requests.length];
        this.tasks = new Task[this.requests.length];
        for (int i = 0; i < this.requests.length; i++) {
            try {
                routes[i] = launcher.route(this.requests[i]);
            } catch (TransferException e) {
                throw new TransferException(e.code(), "request " + i + " of " + this.requests.length + " cannot be prepared: "
                        + e.getMessage(), e);
            }
        }
    }

    @Override
    public void complete(CompletableFuture<TransferStatus> future, TransferStatus status) {
        launcher.completeAsync(future, status);
    }

    @Override
    public int size() {
        return requests.length;
    }

    @Override
    public long post() {
        if (closed) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "this prepared transfer of " + requests.length
                    + " requests is closed");
        }
        if (!IN_FLIGHT.compareAndSet(this, false, true)) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "post " + posts + " of this prepared transfer ("
                    + requests.length + " requests to segment '" + requests[0].target().name() + "') is still in flight:"
                    + " wait for it (await, or a terminal state()) before posting again");
        }
        try {
            engine.ensureOpen();
        } catch (TransferException e) {
            inFlight = false;
            throw e;
        }
        long post = posts + 1;
        long now = launcher.now();
        for (int i = 0; i < tasks.length; i++) {
            Task t = tasks[i];
            if (t == null || !t.quiescent()) {
                t = launcher.preparedTask(this, i, requests[i]);
                tasks[i] = t;
            }
            t.rearm(post, now);
        }
        // one more than the tasks: the post itself holds the count until every task started, so a cancel from another
        // thread ending them all cannot admit the next post while this one is still starting them
        open = tasks.length + 1;
        posts = post;
        for (int i = 0; i < tasks.length; i++) {
            TaskLauncher.Route route = routes[i];
            if (route.stale()) {
                try {
                    route = launcher.route(requests[i]);
                    routes[i] = route;
                } catch (RuntimeException e) {
                    // this request ends INVALID (or FAILED) in this post; the post itself must go on and end
                    launcher.refuse(tasks[i], e);
                    continue;
                }
            }
            launcher.start(tasks[i], route, now);
        }
        arrive();
        return post;
    }

    @Override
    public void taskEnded(Task task, TransferStatus status) {
        launcher.recordTask(task, status);
        arrive();
    }

    private void arrive() {
        if ((int) OPEN.getAndAdd(this, -1) == 1) {
            inFlight = false;
            wakeWaiters();
        }
    }

    @Override
    public TransferState state() {
        if (inFlight) {
            return TransferState.PENDING;
        }
        if (posts == 0) {
            return TransferState.INITIAL;
        }
        TransferState worst = TransferState.COMPLETED;
        for (Task t : tasks) {
            TransferState s = t.status().state();
            if (s != TransferState.COMPLETED && s.severity() > worst.severity()) {
                worst = s;
            }
        }
        return worst;
    }

    @Override
    boolean ended() {
        return !inFlight;
    }

    /** Woken by the last task's end from whichever thread reports it (as {@link BatchImpl#await}). */
    @Override
    public TransferState await(Duration timeout) throws InterruptedException {
        awaitEnd(timeout, launcher.awaitSpin());
        return state();
    }

    @Override
    public TransferStatus status(int index) {
        if (index < 0 || index >= requests.length) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "no request " + index + " in a prepared transfer of "
                    + requests.length + " requests");
        }
        Task t = tasks[index];
        return t == null ? TransferStatus.INITIAL : t.status();
    }

    @Override
    public long bytesCompleted() {
        long bytes = 0;
        for (Task t : tasks) {
            if (t != null) {
                TransferStatus s = t.status();
                if (s.isCompleted()) {
                    bytes += s.bytesTransferred();
                }
            }
        }
        return bytes;
    }

    @Override
    public void cancel() {
        if (!inFlight) {
            return;
        }
        for (Task t : tasks) {
            if (t != null) { // null only while the first post is still creating them
                t.finish(CANCELED);
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        cancel();
    }
}
