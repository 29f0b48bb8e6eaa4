package org.tent4j.spi;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;

/** Implemented by the runtime; {@link TransferEngine#create(EngineConfig)} finds it through ServiceLoader. */
public interface EngineFactory {
    TransferEngine create(EngineConfig config);
}
