package org.tent4j.spi.platform;

import org.tent4j.api.MemoryKind;
import org.tent4j.spi.Availability;

/**
 * Entry point of a device platform plugin (CUDA, ROCm, Ascend), found through {@link java.util.ServiceLoader}.
 * Discovery is cheap: native libraries are loaded only by {@link #availability()} or {@link #create()}.
 */
public interface DevicePlatformProvider {
    int SPI_VERSION = 1;

    default int spiVersion() {
        return SPI_VERSION;
    }

    /** {@code cuda}, {@code rocm}, {@code ascend}. */
    String id();

    /** The memory kind of this platform's devices; locations {@code <kind>:N} route to it. */
    MemoryKind memoryKind();

    default String description() {
        return id();
    }

    /** Library loaded and at least one device present, or the precise cause why not. Probed once. */
    Availability availability();

    /** Opens the platform. Called only when available. */
    DevicePlatform create();
}
