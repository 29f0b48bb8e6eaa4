package org.tent4j.runtime;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;

/** Whether the engine is still open; every part that takes work checks it, only the facade closes it. */
public final class EngineState {
    private final String segmentName;
    private volatile boolean closed;

    EngineState(String segmentName) {
        this.segmentName = segmentName;
    }

    public String segmentName() {
        return segmentName;
    }

    public boolean isClosed() {
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

    public void ensureOpen() {
        if (closed) {
            throw new TransferException(ErrorCode.ENGINE_CLOSED, "engine '" + segmentName + "' is closed");
        }
    }
}
