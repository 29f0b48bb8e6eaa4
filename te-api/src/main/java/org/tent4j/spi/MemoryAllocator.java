package org.tent4j.spi;

import java.lang.foreign.MemorySegment;
import java.util.Map;

import org.tent4j.api.Location;

/** Provided by a transport that needs memory allocated its own way (shared memory, device IPC memory). */
public interface MemoryAllocator {

    /** Whether this allocator can allocate at {@code location}. */
    boolean supports(Location location);

    /** Allocates zeroed memory; {@link Allocation#backing()} is attached to the registration as {@link LocalBuffer#backing()}. */
    Allocation allocate(long size, Location location);

    /**
     * Memory made by an allocator.
     *
     * @param segment the memory
     * @param backing how it is backed, for peers (e.g. {@code path})
     * @param release frees it; called once when it is unregistered
     */
    record Allocation(MemorySegment segment, Map<String, String> backing, Runnable release) {
        public Allocation {
            backing = Map.copyOf(backing);
        }
    }
}
