package org.tent4j.api;

/**
 * The one exception type of tent4j. The message names what was wrong (segment, offset, length, peer, transport,
 * config key); {@link #code()} says which kind of failure it is and {@link #retryable()} whether trying again helps.
 */
public class TransferException extends RuntimeException {
    private final ErrorCode code;

    public TransferException(ErrorCode code, String message) {
        super(message);
        this.code = code;
    }

    public TransferException(ErrorCode code, String message, Throwable cause) {
        super(message, cause);
        this.code = code;
    }

    public ErrorCode code() {
        return code;
    }

    public boolean retryable() {
        return code.retryable();
    }

    @Override
    public String toString() {
        return "TransferException[" + code + "]: " + getMessage();
    }
}
