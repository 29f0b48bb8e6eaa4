package org.tent4j.spi.platform;

import org.tent4j.api.Location;

/**
 * Where an address lives.
 *
 * <p>Make one with {@code of(...)}. The canonical constructor is not part of the contract: a component added in a later
 * version changes it, while {@code of} keeps its signature beside a new overload (BoundariesTest keeps every module on
 * {@code of}).
 *
 * @param location {@code cpu:0} for host memory, {@code cuda:N} and so on for device memory
 * @param pinned   whether host memory is page-locked for device access
 */
public record PointerInfo(Location location, boolean pinned) {
    /**
     * The factory plugins use instead of the constructor.
     *
     * @param location where the address lives
     * @param pinned   whether host memory is page-locked
     * @return the info
     */
    public static PointerInfo of(Location location, boolean pinned) {

        return new PointerInfo(location, pinned);
    }
}
