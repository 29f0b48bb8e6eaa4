package org.tent4j.runtime.plugins;

import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportProvider;

/** A transport this engine runs; {@code index} is its bit in buffer masks and its slot in per-peer connection arrays. */
public record TransportSlot(int index, String id, TransportProvider provider, TransportCapabilities capabilities, Transport transport) {
}
