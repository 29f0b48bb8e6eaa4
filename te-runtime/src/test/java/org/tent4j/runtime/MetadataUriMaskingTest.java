package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import org.tent4j.api.ConfigException;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;

/** A metadata.uri the engine refuses is named in the error with its password masked, the parser's words included. */
class MetadataUriMaskingTest {

    @Test
    void aMalformedMetadataUriIsNamedWithItsPasswordMasked() {
        ConfigException e = assertThrows(ConfigException.class, () -> TransferEngine.create(EngineTest.cfg()
                .set(EngineConfig.METADATA_URI, "redis://root:hunter 2@h:1").build()).close());
        assertTrue(e.getMessage().contains("malformed URI 'redis://root:***@h:1'"), e.getMessage());
        assertFalse(e.getMessage().contains("hunter"), e.getMessage());
    }

    @Test
    void aMetadataUriOfUnknownSchemeIsNamedWithItsPasswordMasked() {
        ConfigException e = assertThrows(ConfigException.class, () -> TransferEngine.create(EngineTest.cfg()
                .set(EngineConfig.METADATA_URI, "nosuch://root:hunter2@h:1").build()).close());
        assertTrue(e.getMessage().contains("no metadata store for 'nosuch://root:***@h:1'"), e.getMessage());
        assertFalse(e.getMessage().contains("hunter2"), e.getMessage());
    }
}
