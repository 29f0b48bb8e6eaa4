package org.tent4j.spi.platform;

import org.tent4j.api.Location;

/**
 * Where an address lives.
 *
 * @param location {@code cpu:0} for host memory, {@code cuda:N} and so on for device memory
 * @param pinned   whether host memory is page-locked for device access
 */
public record PointerInfo(Location location, boolean pinned) {
}
