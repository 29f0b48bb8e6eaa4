package org.tent4j.integration.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import org.tent4j.integration.nixl.spi.Backend;
import org.tent4j.integration.nixl.spi.BackendContext;
import org.tent4j.integration.nixl.spi.BackendProvider;
import org.tent4j.integration.nixl.spi.OptionSpec;
import org.tent4j.spi.PluginAdmission;

/** Backends are admitted and ordered by the engine's plugin rule: newer level refused naming both, older admitted. */
class BackendLoaderTest {

    @Test
    void aBackendWrittenForANewerLevelIsRefusedNamingBothLevels() {
        Logger logger = (Logger) LoggerFactory.getLogger(BackendLoader.class);
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        logger.addAppender(lines);
        Map<String, BackendProvider> admitted;
        try {
            admitted = BackendLoader.admit(List.of(backend("now", BackendProvider.SPI_LEVEL, 1000),
                    backend("later", BackendProvider.SPI_LEVEL + 1, 1000)), BackendProvider.SPI_LEVEL);
        } finally {
            logger.detachAppender(lines);
        }
        assertEquals(List.of("now"), List.copyOf(admitted.keySet()));
        List<String> refused = lines.list.stream().map(ILoggingEvent::getFormattedMessage).filter(m -> m.contains("'later'")).toList();
        assertEquals(1, refused.size(), lines.list.toString());
        assertTrue(refused.get(0).contains("refused: built for backend SPI version " + (BackendProvider.SPI_LEVEL + 1)
                + ", this runtime supports 1 to " + BackendProvider.SPI_LEVEL), refused.get(0));
    }

    @Test
    void aBackendWrittenForAnOlderLevelIsAdmitted() {
        // an agent one level further on still runs a backend written for this one (the old rule demanded equality)
        assertEquals(List.of("now"), List.copyOf(BackendLoader.admit(List.of(backend("now", BackendProvider.SPI_LEVEL, 1000)),
                BackendProvider.SPI_LEVEL + 1).keySet()));
    }

    @Test
    void backendsAreOrderedByOrderThenId() {
        assertEquals(List.of("z", "a", "b", "c"), List.copyOf(BackendLoader.admit(List.of(backend("c", 1, 1000), backend("b", 1, 5),
                backend("z", 1, 1), backend("a", 1, 5)), BackendProvider.SPI_LEVEL).keySet()));
    }

    @Test
    void theMirroredRuleIsTheEnginesRule() {
        for (int agentLevel = 1; agentLevel <= 3; agentLevel++) {
            for (int level = -1; level <= 4; level++) {
                assertEquals(PluginAdmission.refusal("backend", level, agentLevel), BackendLoader.refusal(level, agentLevel), level + " vs " + agentLevel);
            }
        }
        List<BackendProvider> ps = List.of(backend("c", 1, 1000), backend("b", 1, 5), backend("z", 1, 1), backend("a", 1, 5));
        assertEquals(ps.stream().sorted(PluginAdmission.order(BackendProvider::order, BackendProvider::id)).toList(),
                ps.stream().sorted(BackendLoader.ORDER).toList());
    }

    private static BackendProvider backend(String id, int level, int order) {
        return new BackendProvider() {
            @Override public String id() { return id; }
            @Override public int spiLevel() { return level; }
            @Override public int order() { return order; }
            @Override public boolean supportsRemote() { return false; }
            @Override public boolean supportsLocal() { return true; }
            @Override public boolean supportsNotifications() { return false; }
            @Override public Set<MemoryType> memoryTypes() { return EnumSet.of(MemoryType.DRAM); }
            @Override public List<OptionSpec> options() { return List.of(); }
            @Override public Backend create(BackendContext context) { throw new AssertionError("created while loading"); }
        };
    }
}
