package org.tent4j.runtime;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;

/** The engines a test opened, closed after each test: {@code @RegisterExtension final OpenEngines engines = ...}. */
final class OpenEngines implements AfterEachCallback {
    private final List<TransferEngine> engines = new ArrayList<>();

    TransferEngine open(EngineConfig.Builder config) {
        return keep(TransferEngine.create(config.build()));
    }

    /** Closes {@code engine} after the test too. */
    <E extends TransferEngine> E keep(E engine) {
        engines.add(engine);
        return engine;
    }

    @Override
    public void afterEach(ExtensionContext context) {
        engines.forEach(TransferEngine::close);
        engines.clear();
    }
}
