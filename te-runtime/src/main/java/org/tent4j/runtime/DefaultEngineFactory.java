package org.tent4j.runtime;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.EngineFactory;
import org.tent4j.api.TransferEngine;

/** Registered through ServiceLoader so {@link TransferEngine#create(EngineConfig)} finds this runtime. */
public final class DefaultEngineFactory implements EngineFactory {
    @Override
    public TransferEngine create(EngineConfig config) {
        return new TransferEngineImpl(config);
    }
}
