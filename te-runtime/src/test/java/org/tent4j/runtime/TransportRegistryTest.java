package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransportInfo;
import org.tent4j.runtime.plugins.PluginLoader;
import org.tent4j.spi.TransportProvider;

class TransportRegistryTest {
    @Test
    void aPluginBuiltForANewerSpiIsRefusedWithOneLineNamingBothVersions() {
        Logger logger = (Logger) LoggerFactory.getLogger(PluginLoader.class);
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        logger.addAppender(lines);
        try (TransferEngine e = TransferEngine.create(EngineTest.cfg().build())) {
            assertTrue(e.transports().stream().noneMatch(t -> t.id().equals("future")), e.transports().toString());
        } finally {
            logger.detachAppender(lines);
        }
        List<String> refused = lines.list.stream().map(ILoggingEvent::getFormattedMessage).filter(m -> m.contains("'future'")).toList();
        assertEquals(1, refused.size(), refused.toString());
        assertTrue(refused.get(0).contains("refused") && refused.get(0).contains("version " + (TransportProvider.SPI_VERSION + 1))
                && refused.get(0).contains("supports 1 to " + TransportProvider.SPI_VERSION)
                && refused.get(0).contains(InProcessTransportProvider.FromTheFuture.class.getName()), refused.get(0));
    }

    @Test
    void aDisabledPluginIsNotProbedAtStartAndItsCapabilitiesAreNeverAskedForSorting() {
        int availability = InProcessTransportProvider.Unprobed.AVAILABILITY_CALLS.get();
        int capabilities = InProcessTransportProvider.Unprobed.CAPABILITY_CALLS.get();
        try (TransferEngine e = TransferEngine.create(EngineTest.cfg().set(EngineConfig.TRANSPORTS_ENABLED, "inproc").build())) {
            assertEquals(availability, InProcessTransportProvider.Unprobed.AVAILABILITY_CALLS.get(), "probed at start");
            assertEquals(capabilities, InProcessTransportProvider.Unprobed.CAPABILITY_CALLS.get(), "capabilities asked at start");
            // asking what is on the class path probes it, once; capabilities are still not needed
            TransportInfo info = e.transports().stream().filter(t -> t.id().equals("unprobed")).findFirst().orElseThrow();
            assertEquals(new TransportInfo("unprobed", false, "never runs", false), info);
            e.transports();
            assertEquals(availability + 1, InProcessTransportProvider.Unprobed.AVAILABILITY_CALLS.get());
            assertEquals(capabilities, InProcessTransportProvider.Unprobed.CAPABILITY_CALLS.get());
        }
    }

    @Test
    void theEnabledPluginsAreProbedSideBySide() {
        // each probe waits for the other: probed one after the other, both answer "probed alone" after 5 s
        try (TransferEngine e = TransferEngine.create(EngineTest.cfg().set(EngineConfig.TRANSPORTS_ENABLED, "inproc,paired-a,paired-b")
                .set("transports.paired-a.pair", "true").set("transports.paired-b.pair", "true").build())) {
            for (String id : List.of("paired-a", "paired-b")) {
                TransportInfo info = e.transports().stream().filter(t -> t.id().equals(id)).findFirst().orElseThrow();
                assertEquals("probed together", info.cause(), info.toString());
            }
        }
    }
}
