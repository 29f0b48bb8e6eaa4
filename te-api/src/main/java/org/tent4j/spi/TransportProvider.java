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
    /** Version of this SPI; the runtime refuses a provider built against a newer one ({@link PluginAdmission}). */
    int SPI_VERSION = 1;

    /** The order a provider gets when it declares none: after every provider that does. */
    int DEFAULT_ORDER = 1000;

    default int spiVersion() {
        return SPI_VERSION;
    }

    /** Canonical id, lower case: {@code tcp}, {@code shm}, {@code rdma}, {@code efa}, {@code nvlink}. */
    String id();

    /**
     * Default position among transports, lower first, used when no preference is configured. Must be a constant:
     * the runtime sorts every provider on the class path by it, before (and without) probing any of them. Providers
     * of equal order are ordered by their capabilities' {@link TransportCapabilities#rank() rank} once they are
     * known to be available, then by id.
     */
    default int order() {
        return DEFAULT_ORDER;
    }

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
