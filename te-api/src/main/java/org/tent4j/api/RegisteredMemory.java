package org.tent4j.api;

import java.lang.foreign.MemorySegment;

/**
 * A buffer registered with an engine. Peers address it by {@link #address()} plus an offset; local requests pass
 * {@link #segment()} or any slice of it.
 */
public interface RegisteredMemory {
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

    /** Whether the engine allocated this memory (and frees it on unregister / close). */
    boolean engineAllocated();
}
