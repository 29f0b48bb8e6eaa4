package org.tent4j.api;

import java.time.Duration;
import java.util.List;

/**
 * {@link TransferEngine#prepare}'s default for engines that do not pool: each post submits the requests as a new
 * {@link Batch}. It keeps the contract (one post at a time, statuses of the latest post) but checks requests only when
 * they are posted and allocates per post.
 */
final class BatchPreparedTransfer implements PreparedTransfer {
    private final TransferEngine engine;
    private final List<TransferRequest> requests;
    private Batch batch;
    private long posts;
    private boolean closed;

    BatchPreparedTransfer(TransferEngine engine, List<TransferRequest> requests) {
        for (TransferRequest r : requests) {
            if (r.deadlineNanos() != 0) {
                throw new TransferException(ErrorCode.INVALID_ARGUMENT, "a prepared request cannot carry an absolute deadline"
                        + " (deadlineNanos " + r.deadlineNanos() + "): each post gets the engine's transfer.timeout");
            }
        }
        this.engine = engine;
        this.requests = List.copyOf(requests);
    }

    @Override
    public int size() {
        return requests.size();
    }

    @Override
    public synchronized long post() {
        if (closed) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "prepared transfer of " + requests.size() + " requests is closed");
        }
        if (batch != null && !batch.overallStatus().isTerminal()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "post " + posts + " of this prepared transfer is still in flight");
        }
        Batch next = engine.allocateBatch(requests.size());
        next.submit(requests);
        if (batch != null) {
            batch.close();
        }
        batch = next;
        return ++posts;
    }

    private synchronized Batch batch() {
        return batch;
    }

    @Override
    public TransferState state() {
        Batch b = batch();
        return b == null ? TransferState.INITIAL : b.overallStatus().state();
    }

    @Override
    public TransferState await(Duration timeout) throws InterruptedException {
        Batch b = batch();
        return b == null ? TransferState.INITIAL : b.await(timeout).state();
    }

    @Override
    public TransferStatus status(int index) {
        Batch b = batch();
        if (index < 0 || index >= requests.size()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "no request " + index + " in a prepared transfer of "
                    + requests.size());
        }
        return b == null ? TransferStatus.INITIAL : b.status(index);
    }

    @Override
    public long bytesCompleted() {
        Batch b = batch();
        return b == null ? 0 : b.overallStatus().bytesTransferred();
    }

    @Override
    public void cancel() {
        Batch b = batch();
        if (b != null) {
            for (int i = 0; i < b.size(); i++) {
                b.cancel(i);
            }
        }
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (batch != null) {
            batch.close();
        }
    }
}
