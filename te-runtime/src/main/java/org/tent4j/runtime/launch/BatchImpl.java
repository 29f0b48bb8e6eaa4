package org.tent4j.runtime.launch;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import org.tent4j.api.Batch;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.runtime.peers.RemoteSegment;
import org.tent4j.runtime.schedule.Task;

/** A batch: a fixed array of tasks, filled by submits, with a count of those not yet ended. */
public final class BatchImpl extends EndWaiters implements Batch, Task.Owner {
    /** What closing the batch makes of its unfinished tasks; one object, as most are finished already (it was one per task). */
    private static final TransferStatus CLOSED = new TransferStatus(TransferState.CANCELED, 0, ErrorCode.CANCELED, "batch closed");
    private final TaskLauncher launcher;
    private final Task[] tasks;
    private volatile int size;
    private final AtomicInteger open = new AtomicInteger();
    private CompletableFuture<TransferStatus> completion;
    private volatile boolean closed;

    public BatchImpl(TaskLauncher launcher, int capacity) {
        this.launcher = launcher;
        this.tasks = new Task[capacity];
    }

    @Override
    public void complete(CompletableFuture<TransferStatus> future, TransferStatus status) {
        launcher.completeAsync(future, status);
    }

    @Override
    public int capacity() {
        return tasks.length;
    }

    @Override
    public int submit(List<TransferRequest> requests) {
        return submit(requests, null);
    }

    @Override
    public int submit(List<TransferRequest> requests, String notification) {
        if (closed) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "batch is closed");
        }
        launcher.ensureOpen();
        int first;
        Task[] created = new Task[requests.size()];
        synchronized (this) {
            first = size;
            if (first + requests.size() > tasks.length) {
                throw new TransferException(ErrorCode.TOO_MANY_REQUESTS, "batch of capacity " + tasks.length + " holds "
                        + first + " tasks; cannot add " + requests.size());
            }
            for (int i = 0; i < created.length; i++) {
                TransferRequest r = requests.get(i);
                created[i] = launcher.task(this, first + i, r);
                tasks[first + i] = created[i];
            }
            open.addAndGet(created.length);
            size = first + created.length;
        }
        if (notification != null) {
            NotificationHook hook = new NotificationHook(notification, requests, created.length);
            for (Task t : created) {
                t.hook(hook);
            }
        }
        for (int i = 0; i < created.length; i++) {
            launcher.start(created[i], requests.get(i));
        }
        return first;
    }

    @Override
    public int size() {
        return size;
    }

    private Task task(int taskId) {
        if (taskId < 0 || taskId >= size) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "no task " + taskId + " in a batch of " + size + " tasks");
        }
        return tasks[taskId];
    }

    @Override
    public TransferStatus status(int taskId) {
        return task(taskId).status();
    }

    @Override
    public List<TransferStatus> statuses() {
        int n = size;
        List<TransferStatus> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(tasks[i].status());
        }
        return out;
    }

    @Override
    public TransferStatus overallStatus() {
        int n = size;
        long bytes = 0;
        TransferStatus worst = null;
        boolean allTerminal = true;
        for (int i = 0; i < n; i++) {
            TransferStatus s = tasks[i].status();
            if (!s.isTerminal()) {
                allTerminal = false;
            } else if (s.state() == TransferState.COMPLETED) {
                bytes += s.bytesTransferred();
            } else if (worst == null || s.state().severity() > worst.state().severity()) {
                worst = s;
            }
        }
        if (!allTerminal) {
            return new TransferStatus(TransferState.PENDING, bytes, null, null);
        }
        if (worst != null) {
            return new TransferStatus(worst.state(), bytes, worst.error(), worst.message());
        }
        return TransferStatus.completed(bytes);
    }

    @Override
    public CompletableFuture<TransferStatus> completion() {
        synchronized (this) {
            if (open.get() == 0) {
                return CompletableFuture.completedFuture(overallStatus());
            }
            if (completion == null) {
                completion = new CompletableFuture<>();
            }
            return completion;
        }
    }

    @Override
    public CompletableFuture<TransferStatus> completion(int taskId) {
        return task(taskId).future();
    }

    /**
     * Waits on the batch itself, not on {@link #completion()}: the last task's end wakes the waiter directly from
     * whichever thread reports it (often a transport's I/O thread). That is safe because waking runs no caller code,
     * and it spares the hop through a worker that a future needs (callbacks must never run on an I/O thread).
     */
    @Override
    public TransferStatus await(Duration timeout) throws InterruptedException {
        awaitEnd(timeout, launcher.awaitSpin());
        return overallStatus();
    }

    @Override
    boolean ended() {
        return open.get() == 0;
    }

    @Override
    public void taskEnded(Task task, TransferStatus status) {
        launcher.recordTask(task, status);
        Task.EndHook hook = task.hook();
        if (hook != null) {
            hook.taskEnded(status);
        }
        if (open.decrementAndGet() == 0) {
            CompletableFuture<TransferStatus> f;
            synchronized (this) {
                f = completion;
                completion = null;
            }
            wakeWaiters();
            if (f != null) {
                launcher.completeAsync(f, overallStatus());
            }
        }
    }

    @Override
    public boolean cancel(int taskId) {
        return task(taskId).finish(new TransferStatus(TransferState.CANCELED, 0, ErrorCode.CANCELED,
                "task " + taskId + " canceled"));
    }

    @Override
    public void close() {
        closed = true;
        int n = size;
        for (int i = 0; i < n; i++) {
            tasks[i].finish(CLOSED);
        }
    }

    /** Sends a notification to every distinct target once every task of one submit has completed. */
    final class NotificationHook implements Task.EndHook {
        private final String message;
        private final Set<RemoteSegment> targets = new LinkedHashSet<>();
        private final AtomicInteger remaining;
        private volatile boolean failed;

        NotificationHook(String message, List<TransferRequest> requests, int count) {
            this.message = message;
            for (TransferRequest r : requests) {
                if (r.target() instanceof RemoteSegment s) {
                    targets.add(s);
                }
            }
            this.remaining = new AtomicInteger(count);
        }

        @Override
        public void taskEnded(TransferStatus status) {
            if (status.state() != TransferState.COMPLETED) {
                failed = true;
            }
            if (remaining.decrementAndGet() == 0 && !failed) {
                for (RemoteSegment s : targets) {
                    launcher.notifications().sendQuietly(s, message);
                }
            }
        }
    }
}
