package org.tent4j.spi;

import java.util.List;

/**
 * The engine's own configuration keys (not a plugin's), with their types, defaults and documentation, for tools
 * that document or check a configuration ({@code tent4j config-template}, the doctor). Implemented by the runtime and
 * found through {@link java.util.ServiceLoader}; each plugin describes its own keys in its provider.
 */
public interface EngineOptions {
    /**
     * Every key the engine itself accepts, by full name (for example {@code transfer.timeout}).
     *
     * @return the keys, in the order a reader meets them
     */
    List<OptionSpec> options();
}
