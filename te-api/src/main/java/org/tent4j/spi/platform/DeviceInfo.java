package org.tent4j.spi.platform;

/**
 * One device.
 *
 * @param ordinal     device index as the platform numbers it
 * @param name        product name
 * @param totalMemory bytes of device memory
 * @param pciBusId    PCI bus id, or empty when unknown
 */
public record DeviceInfo(int ordinal, String name, long totalMemory, String pciBusId) {
}
