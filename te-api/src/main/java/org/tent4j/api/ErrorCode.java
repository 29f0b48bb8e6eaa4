package org.tent4j.api;

/** Why something went wrong, and whether trying again can help. */
public enum ErrorCode {
    /** A request or call argument is malformed (a negative length, a bad name); the message names which. */
    INVALID_ARGUMENT(false),
    /** The local memory of a request is not inside any registered buffer. */
    ADDRESS_NOT_REGISTERED(false),
    /** An offset or length falls outside the registered buffer it starts in. */
    OUT_OF_BOUNDS(false),
    /** The target buffer does not allow this operation to peers. */
    PERMISSION_DENIED(false),
    /** No segment of that name is known to the metadata store or to any transport that resolves names. */
    UNKNOWN_SEGMENT(false),
    /** No transport can carry this request (capabilities, locality, preference, or a required one is missing). */
    NO_TRANSPORT(false),
    /** A transport cannot run here or with these options (a missing library or device). */
    TRANSPORT_UNAVAILABLE(false),
    /** A connection to the peer could not be opened (refused, no route, handshake failed). */
    PEER_UNREACHABLE(true),
    /** The peer or the connection to it failed while the request was in flight. */
    PEER_FAILED(true),
    /** The deadline passed before the operation finished. */
    TIMEOUT(true),
    /** The caller canceled the operation. */
    CANCELED(false),
    /** The engine was closed before or during the operation. */
    ENGINE_CLOSED(false),
    /** The metadata store could not be reached, or a key in it is missing or malformed. */
    METADATA_UNAVAILABLE(true),
    /** A configuration key or value is wrong; see {@link ConfigException}. */
    CONFIG(false),
    /** A batch or queue is full; try again once some work has finished. */
    TOO_MANY_REQUESTS(true),
    /** The peer answered with a protocol violation. */
    PROTOCOL(false),
    /** A bug or an unexpected failure inside the engine or a plugin (e.g. a transport threw from {@code post}). */
    INTERNAL(false);

    private final boolean retryable;

    ErrorCode(boolean retryable) {
        this.retryable = retryable;
    }

    /**
     * Whether the same request may succeed if tried again (on this or another path).
     *
     * @return {@code true} for transient causes
     */

    public boolean retryable() {
        return retryable;
    }
}
