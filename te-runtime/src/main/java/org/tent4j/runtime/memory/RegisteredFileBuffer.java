package org.tent4j.runtime.memory;

import java.nio.file.Path;
import java.util.Map;

import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredFile;
import org.tent4j.spi.LocalFile;

/** One file registration: what the application holds ({@link RegisteredFile}) and what transports see ({@link LocalFile}). */
public final class RegisteredFileBuffer implements RegisteredFile, LocalFile {
    private final int id;
    private final Path path;
    private final long address;
    private final long length;
    private final Permission permission;
    /** Bit i set: transport with index i serves this file. Written once before the file is published. */
    private long transportMask;
    /** What each transport published for this file, by transport id. */
    private Map<String, Map<String, String>> transportAttributes = Map.of();

    RegisteredFileBuffer(int id, Path path, long address, long length, Permission permission) {
        this.id = id;
        this.path = path;
        this.address = address;
        this.length = length;
        this.permission = permission;
    }

    @Override public int id() { return id; }
    @Override public Path path() { return path; }
    @Override public long address() { return address; }
    @Override public long length() { return length; }
    @Override public Permission permission() { return permission; }

    /** Records which transports registered this file and what they published; called once, before it is published. */
    void registered(long mask, Map<String, Map<String, String>> attributes) {
        this.transportMask = mask;
        this.transportAttributes = attributes;
    }

    Map<String, Map<String, String>> transportAttributes() {
        return transportAttributes;
    }

    boolean registeredWith(int transportIndex) {
        return (transportMask & (1L << transportIndex)) != 0;
    }

    @Override
    public String toString() {
        return "file#" + id + "[" + path + ", +" + length + " at 0x" + Long.toHexString(address) + ", " + permission + "]";
    }
}
