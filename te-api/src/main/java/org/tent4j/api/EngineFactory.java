package org.tent4j.api;

/** Implemented by the runtime; {@link TransferEngine#create(EngineConfig)} finds it through ServiceLoader. */
public interface EngineFactory {
    /**
     * Builds and starts an engine.
     *
     * @param config the engine's settings
     * @return the engine; the caller closes it
     * @throws ConfigException naming the key for a bad setting
     */
    TransferEngine create(EngineConfig config);

}
