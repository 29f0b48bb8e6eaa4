package org.tent4j.runtime;

import java.net.URI;
import java.util.List;
import java.util.Map;

import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;

/** Built against a newer metadata store SPI than this runtime's: must be refused, never opened. */
public final class FutureMetadataStoreProvider implements MetadataStoreProvider {
    @Override public int spiVersion() { return SPI_VERSION + 1; }

    @Override public List<String> schemes() { return List.of("later-store"); }

    @Override
    public MetadataStore open(URI uri, Map<String, String> options) {
        throw new AssertionError("a refused metadata store provider was opened");
    }
}
