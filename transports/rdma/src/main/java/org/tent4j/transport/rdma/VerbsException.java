package org.tent4j.transport.rdma;

/** A verbs call failed; {@link #errno()} is what it reported (0 when it reported none). */
final class VerbsException extends RuntimeException {
    private final int errno;

    VerbsException(String message, int errno) {
        super(message);
        this.errno = errno;
    }

    int errno() {
        return errno;
    }
}
