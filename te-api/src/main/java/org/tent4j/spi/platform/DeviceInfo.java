package org.tent4j.spi.platform;

/**
 * One device.
 *
 * <p>Make one with {@code of(...)}. The canonical constructor is not part of the contract: a component added in a later
 * version changes it, while {@code of} keeps its signature beside a new overload (BoundariesTest keeps every module on
 * {@code of}).
 *
 * @param ordinal     device index as the platform numbers it
 * @param name        product name
 * @param totalMemory bytes of device memory
 * @param pciBusId    PCI bus id, or empty when unknown
 */
public record DeviceInfo(int ordinal, String name, long totalMemory, String pciBusId) {
    /**
     * The factory plugins use instead of the constructor.
     *
     * @param ordinal     device index as the platform numbers it
     * @param name        product name
     * @param totalMemory bytes of device memory
     * @param pciBusId    PCI bus id, or empty when unknown
     * @return the info
     */
    public static DeviceInfo of(int ordinal, String name, long totalMemory, String pciBusId) {

        return new DeviceInfo(ordinal, name, totalMemory, pciBusId);
    }
}
