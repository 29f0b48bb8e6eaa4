package org.tent4j.cli.store;

import java.util.function.Supplier;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;

/**
 * The master's engine for mount proofs, started at the first memory mount rather than at start: a master nobody
 * mounts memory on (a follower, a metadata-only test) then holds no engine, no control-plane port and none of its
 * threads. A start that fails is tried again at the next mount, whose refusal names the cause.
 */
final class ProofEngine implements Supplier<TransferEngine>, AutoCloseable {
    private final EngineConfig config;
    private TransferEngine engine;
    private boolean closed;

    ProofEngine(EngineConfig config) {
        this.config = config;
    }

    @Override
    public synchronized TransferEngine get() {
        if (closed) {
            throw new IllegalStateException("the master is stopping");
        }
        if (engine == null) {
            engine = TransferEngine.create(config);
        }
        return engine;
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (engine != null) {
            engine.close();
            engine = null;
        }
    }
}
