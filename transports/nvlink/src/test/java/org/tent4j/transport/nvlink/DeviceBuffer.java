package org.tent4j.transport.nvlink;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;

import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.LocalBuffer;

/** A registered buffer at any location (the testkit's registrations are host memory only). */
record DeviceBuffer(int id, MemorySegment segment, Location location, Permission permission,
                    Map<String, String> backing) implements LocalBuffer {

    DeviceBuffer(int id, MemorySegment segment, Location location, Permission permission) {
        this(id, segment, location, permission, Map.of());
    }

    /** How a peer sees this buffer once nvlink registered it with {@code attributes}. */
    BufferDescriptor describe(Map<String, String> attributes) {
        return BufferDescriptor.builder().address(address()).length(length()).location(location)
                .permission(permission).transports(List.of(NvlinkTransportProvider.ID))
                .attributes(Map.of(NvlinkTransportProvider.ID, attributes)).build();
    }
}
