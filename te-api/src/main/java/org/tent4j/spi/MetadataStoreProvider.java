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

    default int spiVersion() {
        return SPI_VERSION;
    }

    /**
     * Position among metadata store providers, lower first, then by schemes ({@link PluginAdmission#order}): where two
     * serve one scheme, the first one serves it. A constant: the runtime sorts by it without probing.
     */
    default int order() {
        return DEFAULT_ORDER;
    }

    /** URI schemes this provider serves, lower case. */
    List<String> schemes();

    default String description() {
        return String.join(",", schemes());
    }

    default Availability availability() {
        return Availability.available();
    }

    /** Options accepted under {@code metadata.<scheme>.}. */
    default List<OptionSpec> options() {
        return List.of();
    }

    /**
     * Connects to the store. Fails fast (within a few seconds) if the store cannot be reached.
     *
     * @param uri     the store's URI as configured (credentials may be inside)
     * @param options options given under {@code metadata.<scheme>.}
     * @throws org.tent4j.api.TransferException METADATA_UNAVAILABLE naming the URI (credentials masked) and the cause;
     *                                          CONFIG for a malformed URI
     */
    MetadataStore open(URI uri, Map<String, String> options);
}
