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
    /** Copies the list and map, so the record is immutable. */
    public BufferDescriptor {
        transports = List.copyOf(transports);
        attributes = Map.copyOf(attributes);
    }

    /**
     * What {@code transportId} published for this buffer (empty if nothing).
     *
     * @param transportId the transport's id
     * @return the attributes; hostile until checked
     */
    public Map<String, String> attributes(String transportId) {
        return attributes.getOrDefault(transportId, Map.of());
    }

    /**
     * Whether {@code [addr, addr + len)} lies inside this buffer, without overflow.
     *
     * @param addr start in the owner's address space
     * @param len  bytes, &gt;= 0
     * @return {@code true} if the whole range is inside
     */
    public boolean contains(long addr, long len) {
        return len >= 0 && addr >= address && addr - address <= length - len;
    }

    /**
     * A builder with the defaults the {@link Builder} names.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * A builder holding this descriptor's values, to change some of them.
     *
     * @return a new builder
     */
    public Builder toBuilder() {
        return new Builder().address(address).length(length).location(location).permission(permission)
                .transports(transports).attributes(attributes);
    }

    /**
     * The API's view of this buffer.
     *
     * @return the buffer without attributes
     */
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

        /**
         * Sets {@code address}.
         *
         * @param address base address in the owner's address space
         * @return this builder
         */
        public Builder address(long address) {
            this.address = address;
            return this;
        }

        /**
         * Sets {@code length}.
         *
         * @param length bytes
         * @return this builder
         */
        public Builder length(long length) {
            this.length = length;
            return this;
        }

        /**
         * Sets {@code location}.
         *
         * @param location where the memory lives
         * @return this builder
         */
        public Builder location(Location location) {
            this.location = location;
            return this;
        }

        /**
         * Sets {@code permission}.
         *
         * @param permission what peers may do with it
         * @return this builder
         */
        public Builder permission(Permission permission) {
            this.permission = permission;
            return this;
        }

        /**
         * Sets {@code transports}.
         *
         * @param transports transport ids that registered it
         * @return this builder
         */
        public Builder transports(List<String> transports) {
            this.transports = transports;
            return this;
        }

        /**
         * Sets {@code attributes}.
         *
         * @param attributes per transport id, what that transport published for this buffer (keys, handles, paths)
         * @return this builder
         */
        public Builder attributes(Map<String, Map<String, String>> attributes) {
            this.attributes = attributes;
            return this;
        }

        /**
         * The descriptor.
         *
         * @return a new immutable descriptor
         */
        public BufferDescriptor build() {

            return new BufferDescriptor(address, length, location, permission, transports, attributes);
        }
    }
}
