package org.tent4j.spi;

import java.util.List;

/**
 * Entry point of a transport plugin, found through {@link java.util.ServiceLoader}. Cheap to construct: discovery
 * must not load native libraries or open sockets until {@link #availability()} or {@link #create} is called.
 *
 * <p>Evolution: the runtime reads {@link #spiVersion()}; methods added later come with defaults, so an old plugin keeps
 * working (Trino's {@code Plugin} model).
 */
public interface TransportProvider {
    /** Version of this SPI. */
    int SPI_VERSION = 1;

    default int spiVersion() {
        return SPI_VERSION;
    }

    /** Canonical id, lower case: {@code tcp}, {@code shm}, {@code rdma}, {@code efa}, {@code nvlink}. */
    String id();

    /** One line for {@code tent4j doctor}. */
    default String description() {
        return id();
    }

    /** Whether the transport can run here, with a precise cause if not. Probed once and cached by the provider. */
    Availability availability();

    /**
     * Whether the transport can run here with these options (a configured device, provider or directory); the
     * runtime asks this one. Defaults to {@link #availability()}.
     */
    default Availability availability(OptionValues options) {
        return availability();
    }

    TransportCapabilities capabilities();

    /** Options accepted under {@code transports.<id>.}; the runtime rejects any other key there. */
    default List<OptionSpec> options() {
        return List.of();
    }

    /** Creates the transport for one engine. Called only when {@link #availability()} is available. */
    Transport create(TransportContext context);
}
