package org.tent4j.runtime;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.spi.EngineFactory;

/** Registered through ServiceLoader so {@link TransferEngine#create(EngineConfig)} finds this runtime. */
public final class DefaultEngineFactory implements EngineFactory {
    @Override
    public TransferEngine create(EngineConfig config) {
        return new TransferEngineImpl(config);
    }
}
