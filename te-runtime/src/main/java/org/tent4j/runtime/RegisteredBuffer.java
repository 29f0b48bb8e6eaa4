package org.tent4j.runtime;

import java.lang.foreign.MemorySegment;
import java.util.Map;

import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.spi.LocalBuffer;

/** One registration: what the application holds ({@link RegisteredMemory}) and what transports see ({@link LocalBuffer}). */
final class RegisteredBuffer implements RegisteredMemory, LocalBuffer {
    private final int id;
    private final MemorySegment segment;
    private final long address;
    private final long length;
    private final Location location;
    private final Permission permission;
    private final Map<String, String> backing;
    private final Runnable release;
    /** Bit i set: transport with index i registered this buffer. Written once before the buffer is published. */
    long transportMask;
    /** What each transport published for this buffer, by transport id. */
    Map<String, Map<String, String>> transportAttributes = Map.of();

    RegisteredBuffer(int id, MemorySegment segment, Location location, Permission permission,
                     Map<String, String> backing, Runnable release) {
        this.id = id;
        this.segment = segment;
        this.address = segment.address();
        this.length = segment.byteSize();
        this.location = location;
        this.permission = permission;
        this.backing = backing;
        this.release = release;
    }

    @Override public int id() { return id; }
    @Override public MemorySegment segment() { return segment; }
    @Override public long address() { return address; }
    @Override public long length() { return length; }
    @Override public Location location() { return location; }
    @Override public Permission permission() { return permission; }
    @Override public Map<String, String> backing() { return backing; }
    @Override public boolean engineAllocated() { return release != null; }

    boolean registeredWith(int transportIndex) {
        return (transportMask & (1L << transportIndex)) != 0;
    }

    void release() {
        if (release != null) {
            release.run();
        }
    }

    @Override
    public String toString() {
        return "buffer#" + id + "[0x" + Long.toHexString(address) + ", +" + length + ", " + location + ", " + permission + "]";
    }
}
