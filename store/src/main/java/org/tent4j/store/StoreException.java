package org.tent4j.store;

/** A store operation failed; {@link #error()} says why, the message names the key, segment or client involved. */
public class StoreException extends RuntimeException {
    /**
     * In a refusal's message: what was missing frees by itself (leases end, puts in flight finish), so the same call
     * may succeed shortly; the client's put waits and retries such a refusal for a bounded time.
     */
    public static final String TRANSIENT = "[transient]";

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

    /** Whether the message says the shortage frees by itself ({@link #TRANSIENT}). */
    public boolean isTransient() {
        return getMessage() != null && getMessage().contains(TRANSIENT);
    }
}
