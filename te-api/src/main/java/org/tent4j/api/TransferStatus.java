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

    public static final TransferStatus INITIAL = new TransferStatus(TransferState.INITIAL, 0, null, null);
    public static final TransferStatus PENDING = new TransferStatus(TransferState.PENDING, 0, null, null);

    public static TransferStatus completed(long bytes) {
        return new TransferStatus(TransferState.COMPLETED, bytes, null, null);
    }

    public static TransferStatus failed(TransferState state, ErrorCode error, String message) {
        return new TransferStatus(state, 0, error, message);
    }

    public boolean isTerminal() {
        return state.isTerminal();
    }

    public boolean isCompleted() {
        return state == TransferState.COMPLETED;
    }

    /** Throws a {@link TransferException} unless the task completed. */
    public TransferStatus orThrow() {
        if (state != TransferState.COMPLETED) {
            throw new TransferException(error == null ? ErrorCode.INTERNAL : error,
                    state + (message == null ? "" : ": " + message));
        }
        return this;
    }
}
