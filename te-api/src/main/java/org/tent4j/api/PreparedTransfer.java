package org.tent4j.api;

import java.time.Duration;

/**
 * A fixed list of requests, checked once by {@link TransferEngine#prepare} and then posted again and again: NIXL's
 * {@code prepXfer} / {@code postXfer} / {@code getXferStatus}. Meant for a loop that moves the same blocks many times
 * (a benchmark, a KV-cache layer, a framework's own request objects): in the engine's own implementation a post after
 * the first allocates nothing, and neither do {@link #state()} and {@link #await}.
 *
 * <p><b>One post at a time.</b> {@link #post()} starts every request; it may be called again only once the previous
 * post has ended ({@link #state()} is terminal). Posting while a post is in flight throws
 * {@link ErrorCode#INVALID_ARGUMENT} and changes nothing: the running post is not disturbed. Each post has a number
 * (1, 2, ...) and the statuses always describe the latest post; a transport that settles a piece of an earlier post
 * late never counts toward a later one.
 *
 * <p><b>Checked once, rechecked cheaply.</b> {@code prepare} validates every request as a batch submit would (local
 * memory registered and in bounds, target segment open and the range in one of its published buffers, permission)
 * and chooses its transport; a request that fails throws there, naming it. Each post only looks whether the local
 * buffer was unregistered or the target's descriptor changed since; if so that request is resolved again, and if it
 * no longer passes, it ends {@link TransferState#INVALID} in this post (the others go ahead), as in a {@link Batch}.
 * Requests with an absolute {@link TransferRequest#deadlineNanos()} cannot be posted more than once and are refused;
 * each post gets the engine's {@code transfer.timeout}.
 *
 * <p>Status of a post: {@link #state()} folds the requests' states as {@link Batch#overallStatus()} does (COMPLETED
 * iff every request completed; else the worst of FAILED &gt; TIMEOUT &gt; CANCELED &gt; INVALID; PENDING while any is
 * in flight; INITIAL before the first post). {@link #status(int)} tells one request's outcome, with the message.
 *
 * <p>Safe to use from several threads, but a post, its wait and the next post are meant to be one thread's loop.
 */
public interface PreparedTransfer extends AutoCloseable {

    /**
     * Number of requests.
     *
     * @return the size of the list given to {@link TransferEngine#prepare}
     */
    int size();

    /**
     * Starts every request. Never throws for a request that fails (it ends with a status naming why).
     *
     * @return this post's number: 1 for the first post, then 2, 3, ...
     * @throws TransferException {@link ErrorCode#INVALID_ARGUMENT} if the previous post is still in flight or this
     *                           prepared transfer is closed; {@link ErrorCode#ENGINE_CLOSED} if the engine is closed
     */
    long post();

    /**
     * The latest post's state (see the class comment); allocates nothing.
     *
     * @return INITIAL before the first post, PENDING while one is in flight, else the folded terminal state
     */
    TransferState state();

    /**
     * Waits until the latest post has ended or {@code timeout} passed; returns {@link #state()} (PENDING on timeout,
     * INITIAL if nothing was posted). Allocates nothing.
     *
     * @param timeout how long to wait
     * @return the latest post's state
     * @throws InterruptedException when the waiting thread is interrupted
     */
    TransferState await(Duration timeout) throws InterruptedException;

    /**
     * Request {@code index}'s status in the latest post.
     *
     * @param index the request's position in the prepared list
     * @return its status, with the message naming why when it did not complete; INITIAL before the first post
     * @throws TransferException INVALID_ARGUMENT naming the index when there is no such request

     */
    TransferStatus status(int index);

    /**
     * Bytes of the latest post that completed (summed over completed requests).
     *
     * @return the byte count
     */

    long bytesCompleted();

    /**
     * Best-effort cancel of the latest post: slices not yet handed to a transport are dropped and their requests end
     * CANCELED; slices already posted may still land. The post ends once every request is reported.
     */
    void cancel();

    /** Cancels a post still in flight (best-effort) and refuses further posts. */
    @Override
    void close();
}
