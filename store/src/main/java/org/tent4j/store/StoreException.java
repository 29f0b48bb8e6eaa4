package org.tent4j.store;

/** A store operation failed; {@link #error()} says why, the message names the key, segment or client involved. */
public class StoreException extends RuntimeException {
    private final StoreError error;

    public StoreException(StoreError error, String message) {
        super(error + ": " + message);
        this.error = error;
    }

    public StoreException(StoreError error, String message, Throwable cause) {
        super(error + ": " + message, cause);
        this.error = error;
    }

    public StoreError error() {
        return error;
    }
}
