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

    /**
     * The SPI version this provider was built against.
     *
     * @return {@link #SPI_VERSION} as compiled into the plugin
     */
    default int spiVersion() {
        return SPI_VERSION;
    }

    /**
     * Canonical id, lower case: {@code tcp}, {@code shm}, {@code rdma}, {@code efa}, {@code nvlink}.
     *
     * @return the id, constant; it names the transport in config keys, descriptors, logs and metrics
     */
    String id();

    /**
     * Default position among transports, lower first, used when no preference is configured. Must be a constant:
     * the runtime sorts every provider on the class path by it, before (and without) probing any of them. Providers
     * of equal order are ordered by their capabilities' {@link TransportCapabilities#rank() rank} once they are
     * known to be available, then by id.
     *
     * @return the order
     */
    default int order() {
        return DEFAULT_ORDER;
    }

    /**
     * One line for {@code tent4j doctor}.
     *
     * @return a description; must not probe anything
     */
    default String description() {
        return id();
    }

    /**
     * Whether the transport can run here, with a precise cause if not. Probed once and cached by the provider. May
     * load native libraries and look at devices; must not throw (an error is an unavailable answer naming it).
     *
     * @return the availability
     */
    Availability availability();

    /**
     * Whether the transport can run here with these options (a configured device, provider or directory); the
     * runtime asks this one. Defaults to {@link #availability()}.
     *
     * @param options the transport's options, already checked against {@link #options()}
     * @return the availability
     */
    default Availability availability(OptionValues options) {
        return availability();
    }

    /**
     * What the transport can do, before any instance exists (an instance may refine it:
     * {@link Transport#capabilities()}).
     *
     * @return the capabilities; must not probe anything
     */
    TransportCapabilities capabilities();

    /**
     * Options accepted under {@code transports.<id>.}; the runtime rejects any other key there.
     *
     * @return the options, with their defaults and checks
     */
    default List<OptionSpec> options() {
        return List.of();
    }

    /**
     * Creates the transport for one engine. Called only when {@link #availability()} is available, on the thread
     * building the engine; may block to open listeners and devices.
     *
     * @param context what the engine offers the transport
     * @return the transport, owned and closed by the engine
     * @throws org.tent4j.api.ConfigException naming the option when an option's value cannot work; the engine then
     *                                        fails to start. Any other exception (TRANSPORT_UNAVAILABLE naming what
     *                                        failed) makes the engine start without this transport, logged and listed
     *                                        as "failed to start" in {@link org.tent4j.api.TransferEngine#transports()}

     */

    Transport create(TransportContext context);
}
