package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.metadata.InMemoryMetadataStore;
import org.tent4j.spi.MetadataStore;

/**
 * Whoever can write one key of the metadata store must not pass for another engine: a descriptor stored under segment
 * {@code alias} that names segment {@code victim} is refused when {@code alias} is opened (shm, for one, decides which
 * files it may map by the publishing segment's name).
 */
class SpoofedDescriptorTest {

    @Test
    void aDescriptorStoredUnderAnotherSegmentsKeyIsRefused() throws Exception {
        String space = "spoof-" + System.nanoTime();
        EngineConfig.Builder cfg = EngineTest.cfg().set(EngineConfig.METADATA_URI, "memory://" + space);
        try (TransferEngine victim = TransferEngine.create(cfg.set(EngineConfig.SEGMENT_NAME, "victim").build());
             TransferEngine reader = TransferEngine.create(cfg.set(EngineConfig.SEGMENT_NAME, "reader").build());
             MetadataStore store = new InMemoryMetadataStore.Provider().open(URI.create("memory://" + space), Map.of())) {
            byte[] victimDescriptor = store.get("tent4j/default/segments/" + victim.segmentName()).orElseThrow();
            store.put("tent4j/default/segments/alias", victimDescriptor, Duration.ofMinutes(1));

            TransferException e = assertThrows(TransferException.class, () -> reader.openSegment("alias"));
            assertEquals(ErrorCode.PROTOCOL, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("'alias'") && e.getMessage().contains("'victim'"), e.getMessage());
            // the genuine segment still opens
            assertEquals("victim", reader.openSegment("victim").name());
        }
    }
}
