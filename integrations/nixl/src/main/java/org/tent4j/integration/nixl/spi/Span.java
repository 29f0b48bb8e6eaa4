package org.tent4j.integration.nixl.spi;

/**
 * One side of one transfer entry: {@code [address, address + length)} inside the region a backend registered (local)
 * or loaded (remote), with the backend's own object for that region.
 */
public record Span(Object region, long address, long length, int devId) {
}
