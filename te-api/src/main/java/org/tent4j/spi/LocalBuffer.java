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
    /**
     * Small id, unique within the engine while registered.
     *
     * @return the id
     */
    int id();

    /**
     * The whole registered memory. A transport may read and write it between {@link Transport#registerBuffer} and the
     * return of {@link Transport#unregisterBuffer}; it never frees it.
     *
     * @return the segment
     */
    MemorySegment segment();

    /**
     * The base address, which peers use as target address.
     *
     * @return {@code segment().address()}
     */
    default long address() {
        return segment().address();
    }

    /**
     * The registered length.
     *
     * @return bytes
     */
    default long length() {
        return segment().byteSize();
    }

    /**
     * Where the memory lives.
     *
     * @return the location, never the wildcard
     */
    Location location();

    /**
     * What peers may do with it.
     *
     * @return the permission given at registration
     */
    Permission permission();

    /**
     * How the memory is backed when a {@link MemoryAllocator} made it (e.g. {@code path} of a shared-memory file);
     * empty for memory the application registered itself.
     *
     * @return attribute name to value
     */
    Map<String, String> backing();

    /**
     * Whether {@code [address, address + length)} lies inside this buffer.
     *
     * @param address an address
     * @param length  bytes, &gt;= 0
     * @return {@code true} if the whole range is inside, without overflow
     */

    default boolean contains(long address, long length) {
        return length >= 0 && address >= address() && address - address() <= length() - length;
    }
}
