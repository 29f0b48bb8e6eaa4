package org.tent4j.testkit.transport;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.LocalMemory;

/** Registrations for a transport under test, without an engine. */
public final class TestLocalMemory implements LocalMemory {
    private final List<Buffer> buffers = new CopyOnWriteArrayList<>();
    private final AtomicInteger ids = new AtomicInteger();

    /** No registrations yet. */
    public TestLocalMemory() {
    }


    /**
     * Registers host memory with no backing attributes.
     *
     * @param memory     the memory; the caller keeps it alive until {@link #unregister}
     * @param permission what peers may do with it
     * @return the registration
     */
    public Buffer register(MemorySegment memory, Permission permission) {
        return register(memory, permission, Map.of());
    }

    /**
     * Registers host memory, as the engine does for memory an allocator made.
     *
     * @param memory     the memory; the caller keeps it alive until {@link #unregister}
     * @param permission what peers may do with it
     * @param backing    how it is backed, e.g. a shared-memory file's {@code path}
     * @return the registration
     */
    public Buffer register(MemorySegment memory, Permission permission, Map<String, String> backing) {
        Buffer b = new Buffer(ids.incrementAndGet(), memory, Location.CPU, permission, Map.copyOf(backing));
        buffers.add(b);
        return b;
    }

    /**
     * Removes a registration: {@link #find} no longer returns it (call the transport's {@code unregisterBuffer} too).
     *
     * @param buffer a registration made here
     */
    public void unregister(LocalBuffer buffer) {
        buffers.remove(buffer);
    }

    @Override
    public LocalBuffer find(long address, long length) {
        for (Buffer b : buffers) {
            if (b.contains(address, length)) {
                return b;
            }
        }
        return null;
    }

    /**
     * A registration made by {@link TestLocalMemory}, always at {@code cpu:0}.
     *
     * @param id         small id, unique within this memory
     * @param segment    the registered memory
     * @param location   {@link Location#CPU}
     * @param permission what peers may do with it
     * @param backing    how it is backed
     */
    public record Buffer(int id, MemorySegment segment, Location location, Permission permission,
                         Map<String, String> backing) implements LocalBuffer {
        /**
         * How a peer would see this buffer after {@code transportId} registered it with {@code attributes}.
         *
         * @param transportId the transport that registered it
         * @param attributes  what that transport returned from {@code registerBuffer}
         * @return the descriptor
         */
        public BufferDescriptor describe(String transportId, Map<String, String> attributes) {
            return BufferDescriptor.builder().address(address()).length(length()).location(location)
                    .permission(permission).transports(List.of(transportId))
                    .attributes(Map.of(transportId, attributes)).build();
        }
    }
}
