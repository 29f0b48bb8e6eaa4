package org.tent4j.api;

import java.lang.foreign.MemorySegment;

/**
 * A buffer registered with an engine. Peers address it by {@link #address()} plus an offset; local requests pass
 * {@link #segment()} or any slice of it.
 */
public interface RegisteredMemory {
    /**
     * The whole registered memory.
     *
     * @return the segment; usable until unregistered
     */
    MemorySegment segment();

    /**
     * The base address, which peers use as target offset.
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
     * @return the location given at registration
     */
    Location location();

    /**
     * What peers may do with it.
     *
     * @return the permission given at registration
     */
    Permission permission();

    /**
     * Whether the engine allocated this memory (and frees it on unregister / close).
     *
     * @return {@code true} for memory from {@link TransferEngine#allocate}
     */

    boolean engineAllocated();
}
