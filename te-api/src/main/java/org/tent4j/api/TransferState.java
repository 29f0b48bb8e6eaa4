package org.tent4j.api;

/**
 * Life cycle of a transfer task, numbered as in TENT so that status codes mean the same across engines.
 * A task starts {@link #INITIAL}, becomes {@link #PENDING} once admitted, and ends in exactly one terminal state.
 */
public enum TransferState {
    /** Not yet submitted (or a prepared transfer not yet posted). */
    INITIAL,
    /** Admitted and in flight. */
    PENDING,
    /** Rejected before any byte moved: bad address, length, segment, permission, or a closed engine. */
    INVALID,
    /** Canceled by the caller, or because its batch or prepared transfer closed. */
    CANCELED,
    /** Every byte landed. */
    COMPLETED,
    /** The task's deadline passed before it completed. */
    TIMEOUT,
    /** A transport or the peer failed and no path was left to retry on. */
    FAILED;

    /**
     * Whether the task has ended.
     *
     * @return {@code false} for INITIAL and PENDING
     */
    public boolean isTerminal() {
        return this != INITIAL && this != PENDING;
    }

    /**
     * Severity used to fold many task states into one batch state: FAILED &gt; TIMEOUT &gt; CANCELED &gt; INVALID.
     *
     * @return 4 for FAILED down to 1 for INVALID; 0 for the others
     */

    public int severity() {
        return switch (this) {
            case FAILED -> 4;
            case TIMEOUT -> 3;
            case CANCELED -> 2;
            case INVALID -> 1;
            default -> 0;
        };
    }
}
