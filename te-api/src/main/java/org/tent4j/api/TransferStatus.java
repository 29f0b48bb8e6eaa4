package org.tent4j.api;

/**
 * State of a task or a whole batch.
 *
 * @param state            where the task is in its life cycle
 * @param bytesTransferred bytes known to have landed (a lower bound while PENDING)
 * @param error            why it did not complete, or {@code null}
 * @param message          a human-readable account naming segment, offset, length, transport and peer, or {@code null}
 */
public record TransferStatus(TransferState state, long bytesTransferred, ErrorCode error, String message) {

    /** Not yet submitted, no bytes. */
    public static final TransferStatus INITIAL = new TransferStatus(TransferState.INITIAL, 0, null, null);
    /** In flight, no bytes known yet. */
    public static final TransferStatus PENDING = new TransferStatus(TransferState.PENDING, 0, null, null);

    /**
     * A completed task.
     *
     * @param bytes bytes moved
     * @return the status
     */
    public static TransferStatus completed(long bytes) {
        return new TransferStatus(TransferState.COMPLETED, bytes, null, null);
    }

    /**
     * A task that ended without completing.
     *
     * @param state   the terminal state
     * @param error   the cause
     * @param message what went wrong, naming segment, offset, length, transport and peer
     * @return the status, with no bytes
     */
    public static TransferStatus failed(TransferState state, ErrorCode error, String message) {
        return new TransferStatus(state, 0, error, message);
    }

    /**
     * Whether the task has ended.
     *
     * @return {@code state().isTerminal()}
     */
    public boolean isTerminal() {
        return state.isTerminal();
    }

    /**
     * Whether the task completed.
     *
     * @return {@code true} for COMPLETED
     */
    public boolean isCompleted() {
        return state == TransferState.COMPLETED;
    }

    /**
     * Throws a {@link TransferException} unless the task completed.
     *
     * @return this status, when COMPLETED
     * @throws TransferException with {@link #error()} (INTERNAL if none) and the state and message otherwise
     */

    public TransferStatus orThrow() {
        if (state != TransferState.COMPLETED) {
            throw new TransferException(error == null ? ErrorCode.INTERNAL : error,
                    state + (message == null ? "" : ": " + message));
        }
        return this;
    }
}
