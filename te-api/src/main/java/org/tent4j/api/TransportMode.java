package org.tent4j.api;

/** How strictly a request's transport hint is meant. */
public enum TransportMode {
    /** Try the hinted transport first; fall back to others (with one WARN log line) when it cannot be used. */
    PREFER,
    /** Use the hinted transport or fail the request with {@link ErrorCode#NO_TRANSPORT}; never fall back. */
    REQUIRE
}
