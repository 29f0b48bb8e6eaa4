package org.tent4j.integration.nixl.spi;

import org.tent4j.api.TransferEngine;

/** What a backend is created with. */
public interface BackendContext {
    /** The agent's name (peers address it by this name). */
    String agentName();

    /** The backend's effective options. */
    BackendOptions options();

    /** The agent's engine: its control plane and metadata stores, and the transfers of engine-based backends. */
    TransferEngine engine();
}
