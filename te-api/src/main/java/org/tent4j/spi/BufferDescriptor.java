package org.tent4j.spi;

import java.util.List;
import java.util.Map;

import org.tent4j.api.BufferInfo;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;

/**
 * A registered buffer as published in a segment descriptor.
 *
 * @param address    base address in the owner's address space
 * @param length     bytes
 * @param location   where the memory lives
 * @param permission what peers may do with it
 * @param transports transport ids that registered it
 * @param attributes per transport id, what that transport published for this buffer (keys, handles, paths)
 */
public record BufferDescriptor(long address, long length, Location location, Permission permission,
                               List<String> transports, Map<String, Map<String, String>> attributes) {
    public BufferDescriptor {
        transports = List.copyOf(transports);
        attributes = Map.copyOf(attributes);
    }

    /** What {@code transportId} published for this buffer (empty if nothing). */
    public Map<String, String> attributes(String transportId) {
        return attributes.getOrDefault(transportId, Map.of());
    }

    public boolean contains(long addr, long len) {
        return len >= 0 && addr >= address && addr - address <= length - len;
    }

    public BufferInfo info() {
        return new BufferInfo(address, length, location, permission, transports);
    }
}
