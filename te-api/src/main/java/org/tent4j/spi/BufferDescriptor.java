package org.tent4j.spi;

import java.util.List;
import java.util.Map;

import org.tent4j.api.BufferInfo;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;

/**
 * A registered buffer as published in a segment descriptor.
 *
 * <p>Build one with {@link #builder()}. The canonical constructor is not part of the contract: a component added in a
 * later version changes it, while the builder only gains a setter (BoundariesTest keeps every module on the builder).
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

    public static Builder builder() {
        return new Builder();
    }

    /** A builder holding this descriptor's values, to change some of them. */
    public Builder toBuilder() {
        return new Builder().address(address).length(length).location(location).permission(permission)
                .transports(transports).attributes(attributes);
    }

    public BufferInfo info() {
        return new BufferInfo(address, length, location, permission, transports);
    }

    /** Builds a {@link BufferDescriptor}; unset: host memory, READ_WRITE, no transports, no attributes. */
    public static final class Builder {
        private long address;
        private long length;
        private Location location = Location.CPU;
        private Permission permission = Permission.READ_WRITE;
        private List<String> transports = List.of();
        private Map<String, Map<String, String>> attributes = Map.of();

        private Builder() {
        }

        public Builder address(long address) {
            this.address = address;
            return this;
        }

        public Builder length(long length) {
            this.length = length;
            return this;
        }

        public Builder location(Location location) {
            this.location = location;
            return this;
        }

        public Builder permission(Permission permission) {
            this.permission = permission;
            return this;
        }

        public Builder transports(List<String> transports) {
            this.transports = transports;
            return this;
        }

        public Builder attributes(Map<String, Map<String, String>> attributes) {
            this.attributes = attributes;
            return this;
        }

        public BufferDescriptor build() {
            return new BufferDescriptor(address, length, location, permission, transports, attributes);
        }
    }
}
