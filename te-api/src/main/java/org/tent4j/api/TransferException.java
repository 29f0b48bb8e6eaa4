package org.tent4j.api;

/**
 * The one exception type of tent4j. The message names what was wrong (segment, offset, length, peer, transport,
 * config key); {@link #code()} says which kind of failure it is and {@link #retryable()} whether trying again helps.
 */
public class TransferException extends RuntimeException {
    /** The kind of failure. */
    private final ErrorCode code;

    /**
     * A failure of the given kind.
     *
     * @param code    the kind
     * @param message what was wrong, naming the segment, offset, length, peer, transport or key
     */
    public TransferException(ErrorCode code, String message) {
        super(message);
        this.code = code;
    }

    /**
     * A failure of the given kind, caused by another.
     *
     * @param code    the kind
     * @param message what was wrong, naming the segment, offset, length, peer, transport or key
     * @param cause   the underlying failure
     */
    public TransferException(ErrorCode code, String message, Throwable cause) {
        super(message, cause);
        this.code = code;
    }

    /**
     * The kind of failure.
     *
     * @return the code
     */
    public ErrorCode code() {
        return code;
    }

    /**
     * Whether trying again may help.
     *
     * @return {@code code().retryable()}
     */
    public boolean retryable() {

        return code.retryable();
    }

    @Override
    public String toString() {
        return "TransferException[" + code + "]: " + getMessage();
    }
}
