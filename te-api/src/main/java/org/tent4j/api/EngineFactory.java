package org.tent4j.api;

/** Implemented by the runtime; {@link TransferEngine#create(EngineConfig)} finds it through ServiceLoader. */
public interface EngineFactory {
    TransferEngine create(EngineConfig config);
}
