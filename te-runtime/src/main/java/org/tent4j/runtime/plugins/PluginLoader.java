package org.tent4j.runtime.plugins;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.function.Function;
import java.util.function.ToIntFunction;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.spi.PluginAdmission;
import org.tent4j.spi.TransportProvider;
import org.tent4j.spi.platform.DevicePlatformProvider;

/**
 * Finds the providers of every SPI the runtime loads, admits them by {@link PluginAdmission}'s version rule and orders
 * them by its order; the one place that logs what was loaded, what was skipped and why. Whether an admitted provider
 * can run here (its availability) is the caller's to ask, later and only if needed: probing loads native libraries.
 */
public final class PluginLoader {
    private static final Logger log = LoggerFactory.getLogger(PluginLoader.class);

    /** How the loader reads one SPI's providers. */
    public record Spi<P>(Class<P> type, String name, int runtimeVersion, ToIntFunction<P> version, ToIntFunction<P> order,
                  Function<P, String> id) {
    }

    public static final Spi<TransportProvider> TRANSPORTS = new Spi<>(TransportProvider.class, "transport",
            TransportProvider.SPI_VERSION, TransportProvider::spiVersion, TransportProvider::order, TransportProvider::id);
    public static final Spi<DevicePlatformProvider> DEVICE_PLATFORMS = new Spi<>(DevicePlatformProvider.class, "device platform",
            DevicePlatformProvider.SPI_VERSION, DevicePlatformProvider::spiVersion, DevicePlatformProvider::order,
            DevicePlatformProvider::id);
    public static final Spi<MetadataStoreProvider> METADATA_STORES = new Spi<>(MetadataStoreProvider.class, "metadata store",
            MetadataStoreProvider.SPI_VERSION, MetadataStoreProvider::spiVersion, MetadataStoreProvider::order,
            p -> String.join(",", p.schemes()));

    private PluginLoader() {
    }

    /** The admitted providers on the class path, in order. */
    public static <P> List<P> load(Spi<P> spi) {
        List<P> found = new ArrayList<>();
        Iterator<P> it = ServiceLoader.load(spi.type()).iterator();
        // a provider whose class or constructor fails makes one step throw; ServiceLoader goes on with the next one
        for (int step = 0; step < 1000; step++) {
            try {
                if (!it.hasNext()) {
                    break;
                }
                found.add(it.next());
            } catch (ServiceConfigurationError | LinkageError e) {
                log.warn("a {} plugin skipped: it could not be loaded: {}{}", spi.name(), e.getMessage(),
                        e.getCause() == null ? "" : " (" + e.getCause() + ")");
            }
        }
        return admit(spi, found);
    }

    /** The providers of {@code found} that the version rule admits, in order. */
    public static <P> List<P> admit(Spi<P> spi, List<? extends P> found) {
        List<P> admitted = new ArrayList<>();
        for (P p : found) {
            Optional<String> refusal = PluginAdmission.refusal(spi.name(), spi.version().applyAsInt(p), spi.runtimeVersion());
            if (refusal.isPresent()) {
                log.warn("{} plugin '{}' ({}) refused: {}", spi.name(), spi.id().apply(p), p.getClass().getName(), refusal.get());
                continue;
            }
            admitted.add(p);
        }
        admitted.sort(PluginAdmission.order(spi.order(), spi.id()));
        if (log.isDebugEnabled()) {
            log.debug("{} plugins loaded, in order: {}", spi.name(), admitted.stream().map(p -> spi.id().apply(p) + " (order "
                    + spi.order().applyAsInt(p) + ", SPI version " + spi.version().applyAsInt(p) + ", " + p.getClass().getName() + ")").toList());
        }
        return List.copyOf(admitted);
    }
}
