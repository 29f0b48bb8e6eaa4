package org.tent4j.spi.platform;

import org.tent4j.api.MemoryKind;
import org.tent4j.spi.Availability;

/**
 * Entry point of a device platform plugin (CUDA, ROCm, Ascend), found through {@link java.util.ServiceLoader}.
 * Discovery is cheap: native libraries are loaded only by {@link #availability()} or {@link #create()}.
 */
public interface DevicePlatformProvider {
    /** Version of this SPI; a loader refuses a provider built against a newer one ({@link org.tent4j.spi.PluginAdmission}). */
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
     * Position among device platforms, lower first, then by id ({@link org.tent4j.spi.PluginAdmission#order}): the order
     * in which they are probed and, where two serve one memory kind, which one is opened. A constant: loaders sort by it
     * without probing.
     *
     * @return the order
     */
    default int order() {
        return DEFAULT_ORDER;
    }

    /**
     * The platform's id.
     *
     * @return {@code cuda}, {@code rocm}, {@code ascend}
     */
    String id();

    /**
     * The memory kind of this platform's devices; locations {@code <kind>:N} route to it.
     *
     * @return the kind, constant
     */
    MemoryKind memoryKind();

    /**
     * One line for {@code tent4j doctor}.
     *
     * @return a description; must not probe anything
     */
    default String description() {
        return id();
    }

    /**
     * Library loaded and at least one device present, or the precise cause why not. Probed once.
     *
     * @return the availability; never throws
     */
    Availability availability();

    /**
     * Opens the platform. Called only when available, at most once per engine.
     *
     * @return the platform, owned and closed by the engine
     */

    DevicePlatform create();
}
