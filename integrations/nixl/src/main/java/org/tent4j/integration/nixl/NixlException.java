package org.tent4j.integration.nixl;

/** An agent call that failed, with the status saying why; the message names the agent, backend, peer or descriptor. */
public final class NixlException extends RuntimeException {
    private final NixlStatus status;

    public NixlException(NixlStatus status, String message) {
        super(message);
        this.status = status;
    }

    public NixlException(NixlStatus status, String message, Throwable cause) {
        super(message, cause);
        this.status = status;
    }

    public NixlStatus status() {
        return status;
    }

    @Override
    public String toString() {
        return "NixlException[" + status + "]: " + getMessage();
    }
}
