package org.tent4j.runtime.plugins;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.MemoryKind;
import org.tent4j.spi.Availability;
import org.tent4j.spi.platform.DevicePlatform;
import org.tent4j.spi.platform.DevicePlatformProvider;

/**
 * The device platforms on the class path, opened on first use (a platform probe loads a native library, so an
 * engine that never touches device memory never probes one) and closed with the engine. One per memory kind: the
 * first available provider, in {@code order()} then id order, wins.
 */
public final class DevicePlatforms implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(DevicePlatforms.class);

    private volatile List<DevicePlatform> opened;
    private boolean closed;

    /** The available platforms, opened now if this is the first call. */
    public List<DevicePlatform> get() {
        List<DevicePlatform> p = opened;
        if (p == null) {
            synchronized (this) {
                if (opened == null) {
                    opened = closed ? List.of() : open();
                }
                p = opened;
            }
        }
        return p;
    }

    private static List<DevicePlatform> open() {
        List<DevicePlatformProvider> providers = PluginLoader.load(PluginLoader.DEVICE_PLATFORMS);
        Set<MemoryKind> kinds = new LinkedHashSet<>();
        List<DevicePlatform> out = new ArrayList<>();
        for (DevicePlatformProvider p : providers) {
            if (kinds.contains(p.memoryKind())) {
                continue;
            }
            Availability a;
            try {
                a = p.availability();
            } catch (RuntimeException | LinkageError e) {
                a = Availability.unavailable(e);
            }
            if (!a.isAvailable()) {
                log.debug("device platform '{}' unavailable: {}", p.id(), a.reason());
                continue;
            }
            try {
                out.add(p.create());
                kinds.add(p.memoryKind());
            } catch (RuntimeException | LinkageError e) {
                log.warn("device platform '{}' failed to open: {}", p.id(), e.toString());
            }
        }
        return List.copyOf(out);
    }

    @Override
    public synchronized void close() {
        closed = true;
        List<DevicePlatform> p = opened;
        opened = List.of();
        if (p != null) {
            for (DevicePlatform d : p) {
                try {
                    d.close();
                } catch (RuntimeException e) {
                    log.warn("device platform {} failed to close: {}", d.memoryKind(), e.getMessage());
                }
            }
        }
    }
}
