package org.tent4j.api;

/** Why something went wrong, and whether trying again can help. */
public enum ErrorCode {
    INVALID_ARGUMENT(false),
    /** The local memory of a request is not inside any registered buffer. */
    ADDRESS_NOT_REGISTERED(false),
    /** An offset or length falls outside the registered buffer it starts in. */
    OUT_OF_BOUNDS(false),
    /** The target buffer does not allow this operation to peers. */
    PERMISSION_DENIED(false),
    UNKNOWN_SEGMENT(false),
    /** No transport can carry this request (capabilities, locality, preference, or a required one is missing). */
    NO_TRANSPORT(false),
    TRANSPORT_UNAVAILABLE(false),
    PEER_UNREACHABLE(true),
    /** The peer or the connection to it failed while the request was in flight. */
    PEER_FAILED(true),
    TIMEOUT(true),
    CANCELED(false),
    ENGINE_CLOSED(false),
    METADATA_UNAVAILABLE(true),
    CONFIG(false),
    TOO_MANY_REQUESTS(true),
    /** The peer answered with a protocol violation. */
    PROTOCOL(false),
    INTERNAL(false);

    private final boolean retryable;

    ErrorCode(boolean retryable) {
        this.retryable = retryable;
    }

    /** Whether the same request may succeed if tried again (on this or another path). */
    public boolean retryable() {
        return retryable;
    }
}
