package org.tent4j.integration.nixl;

/** Where a transfer request stands. */
public enum XferState {
    /** Created, never posted. */
    NOT_POSTED,
    IN_PROGRESS,
    /** Every byte landed (and the notification, if any, was accepted by the peer). */
    DONE,
    /** It failed; {@link XferRequest#error()} says why. */
    FAILED;

    public boolean isTerminal() {
        return this == DONE || this == FAILED;
    }
}
