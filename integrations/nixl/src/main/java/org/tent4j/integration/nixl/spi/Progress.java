package org.tent4j.integration.nixl.spi;

import org.tent4j.integration.nixl.NixlStatus;
import org.tent4j.integration.nixl.XferState;

/**
 * What a backend says about a posted request.
 *
 * @param state         IN_PROGRESS, DONE or FAILED
 * @param error         why it failed (null otherwise)
 * @param message       the failure's message naming peer, backend and cause (null otherwise)
 * @param finishedNanos {@link System#nanoTime()} when it became terminal (0 while in progress)
 */
public record Progress(XferState state, NixlStatus error, String message, long finishedNanos) {
    public static Progress inProgress() {
        return new Progress(XferState.IN_PROGRESS, null, null, 0);
    }

    public static Progress done(long finishedNanos) {
        return new Progress(XferState.DONE, null, null, finishedNanos);
    }

    public static Progress failed(NixlStatus error, String message, long finishedNanos) {
        return new Progress(XferState.FAILED, error, message, finishedNanos);
    }
}
