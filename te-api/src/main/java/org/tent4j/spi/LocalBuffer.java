package org.tent4j.spi;

import java.lang.foreign.MemorySegment;
import java.util.Map;

import org.tent4j.api.Location;
import org.tent4j.api.Permission;

/**
 * A buffer registered with the local engine, as transports see it. The same object is handed out for the life of the
 * registration, so transports may key caches on it.
 */
public interface LocalBuffer {
    /** Small id, unique within the engine while registered. */
    int id();

    /** The whole registered memory. */
    MemorySegment segment();

    default long address() {
        return segment().address();
    }

    default long length() {
        return segment().byteSize();
    }

    Location location();

    Permission permission();

    /**
     * How the memory is backed when a {@link MemoryAllocator} made it (e.g. {@code path} of a shared-memory file);
     * empty for memory the application registered itself.
     */
    Map<String, String> backing();

    /** Whether {@code [address, address + length)} lies inside this buffer. */
    default boolean contains(long address, long length) {
        return length >= 0 && address >= address() && address - address() <= length() - length;
    }
}
