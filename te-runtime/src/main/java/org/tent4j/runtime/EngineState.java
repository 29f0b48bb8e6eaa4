package org.tent4j.runtime;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;

/** Whether the engine is still open; every part that takes work checks it, only the facade closes it. */
final class EngineState {
    private final String segmentName;
    private volatile boolean closed;

    EngineState(String segmentName) {
        this.segmentName = segmentName;
    }

    String segmentName() {
        return segmentName;
    }

    boolean isClosed() {
        return closed;
    }

    /** Marks the engine closed; returns whether this call did. */
    synchronized boolean close() {
        if (closed) {
            return false;
        }
        closed = true;
        return true;
    }

    void ensureOpen() {
        if (closed) {
            throw new TransferException(ErrorCode.ENGINE_CLOSED, "engine '" + segmentName + "' is closed");
        }
    }
}
