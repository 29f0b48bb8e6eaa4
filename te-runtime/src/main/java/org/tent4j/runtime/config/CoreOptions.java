package org.tent4j.runtime.config;

import java.util.List;

import org.tent4j.spi.EngineOptions;
import org.tent4j.spi.OptionSpec;

/** Publishes {@link CoreKey#ALL} to tools through {@link EngineOptions}. */
public final class CoreOptions implements EngineOptions {
    @Override
    public List<OptionSpec> options() {
        return CoreKey.ALL;
    }
}
