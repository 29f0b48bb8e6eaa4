package org.tent4j.integration.nixl;

import java.util.List;
import java.util.Set;

import org.tent4j.integration.nixl.spi.OptionSpec;

/** What a backend kind offers, known before any instance is created. */
public record BackendDescription(String id, int spiLevel, boolean supportsRemote, boolean supportsLocal,
                                 boolean supportsNotifications, Set<MemoryType> memoryTypes, List<OptionSpec> options) {
}
