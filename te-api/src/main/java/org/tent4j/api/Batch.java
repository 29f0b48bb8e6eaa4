package org.tent4j.api;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A group of tasks submitted and tracked together. Task ids are assigned in submission order starting at 0 and
 * continue across submits. A batch is safe to use from several threads.
 */
public interface Batch extends AutoCloseable {

    /**
     * Number of tasks this batch can hold over all submits.
     *
     * @return the capacity given to {@link TransferEngine#allocateBatch}
     */
    int capacity();

    /**
     * Submits requests asynchronously. Bad requests do not throw: their tasks end INVALID with a message naming
     * what was wrong, and the rest go ahead.
     *
     * @param requests the requests; each becomes one task
     * @return the id of the first new task; the others follow consecutively
     * @throws TransferException {@link ErrorCode#TOO_MANY_REQUESTS} if capacity would be exceeded,
     *                           {@link ErrorCode#ENGINE_CLOSED} if the engine is closed
     */
    int submit(List<TransferRequest> requests);

    /**
     * Submits requests and sends {@code notification} to every distinct target segment once all of these tasks
     * have COMPLETED (never if one of them does not).
     *
     * @param requests     the requests; each becomes one task
     * @param notification the text sent to each target's engine
     * @return the id of the first new task; the others follow consecutively
     * @throws TransferException as {@link #submit(List)}
     */
    int submit(List<TransferRequest> requests, String notification);

    /**
     * Number of tasks submitted so far.
     *
     * @return the count, also the id the next task gets
     */
    int size();

    /**
     * One task's status now.
     *
     * @param taskId an id returned by {@link #submit(List)} or one after it
     * @return the status, terminal or not
     * @throws TransferException INVALID_ARGUMENT naming the id when no such task was submitted
     */
    TransferStatus status(int taskId);

    /**
     * Every task's status now.
     *
     * @return the statuses, indexed by task id
     */
    List<TransferStatus> statuses();

    /**
     * COMPLETED iff every task completed; once all are terminal and some did not complete, the worst of their states
     * (FAILED &gt; TIMEOUT &gt; CANCELED &gt; INVALID); PENDING otherwise. Bytes are summed over completed tasks.
     *
     * @return the folded status
     */
    TransferStatus overallStatus();

    /**
     * Completes with the overall status once every task submitted so far is terminal.
     *
     * @return a future completed on an engine thread, never exceptionally
     */
    CompletableFuture<TransferStatus> completion();

    /**
     * Completes with the task's status once it is terminal.
     *
     * @param taskId a submitted task's id
     * @return a future completed on an engine thread, never exceptionally
     */
    CompletableFuture<TransferStatus> completion(int taskId);

    /**
     * Waits until every task submitted so far is terminal or {@code timeout} passes; returns the overall status.
     *
     * @param timeout how long to wait
     * @return {@link #overallStatus()}, PENDING if the time ran out
     * @throws InterruptedException when the waiting thread is interrupted
     */
    TransferStatus await(Duration timeout) throws InterruptedException;

    /**
     * Best-effort cancel: slices not yet posted to a transport are dropped and the task ends CANCELED; slices already
     * posted may still land. Returns whether the task ended CANCELED because of this call.
     *
     * @param taskId a submitted task's id
     * @return {@code true} if this call ended the task as CANCELED
     */

    boolean cancel(int taskId);

    /** Releases the batch. Tasks still in flight are canceled best-effort. */
    @Override
    void close();
}
