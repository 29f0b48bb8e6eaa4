package org.tent4j.spi;

import java.net.URI;
import java.util.List;
import java.util.Map;

/**
 * Entry point of a metadata store plugin, found through {@link java.util.ServiceLoader} and chosen by the scheme of
 * the URI an engine is given ({@code etcd://}, {@code redis://}, {@code http://}, {@code memory://}).
 */
public interface MetadataStoreProvider {
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
     * Position among metadata store providers, lower first, then by schemes ({@link PluginAdmission#order}): where two
     * serve one scheme, the first one serves it. A constant: the runtime sorts by it without probing.
     *
     * @return the order
     */
    default int order() {
        return DEFAULT_ORDER;
    }

    /**
     * URI schemes this provider serves, lower case.
     *
     * @return the schemes, constant
     */
    List<String> schemes();

    /**
     * One line for {@code tent4j doctor}.
     *
     * @return a description; must not probe anything
     */
    default String description() {
        return String.join(",", schemes());
    }

    /**
     * Whether the plugin can run here (its client library present), with a precise cause if not.
     *
     * @return the availability
     */
    default Availability availability() {
        return Availability.available();
    }

    /**
     * Options accepted under {@code metadata.<scheme>.}.
     *
     * @return the options, with their defaults and checks
     */
    default List<OptionSpec> options() {
        return List.of();
    }

    /**
     * Connects to the store. Fails fast (within a few seconds) if the store cannot be reached.
     *
     * @param uri     the store's URI as configured (credentials may be inside)
     * @param options options given under {@code metadata.<scheme>.}
     * @return an open store; the caller owns and closes it

     * @throws org.tent4j.api.TransferException METADATA_UNAVAILABLE naming the URI (credentials masked) and the cause;
     *                                          CONFIG for a malformed URI
     */
    MetadataStore open(URI uri, Map<String, String> options);
}
