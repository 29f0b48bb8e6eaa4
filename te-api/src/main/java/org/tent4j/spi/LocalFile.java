package org.tent4j.spi;

import java.nio.file.Path;

import org.tent4j.api.Permission;

/**
 * A file registered with the local engine, as transports see it ({@link Transport#registerFile}). The same object is
 * handed out for the life of the registration. Files are never part of {@link LocalMemory}: a transport that moves
 * memory only never sees their addresses as memory.
 */
public interface LocalFile {
    /** Small id, unique within the engine while registered. */
    int id();

    /** Absolute, normalized path of the file or block device. */
    Path path();

    /** Base of the file's range in the segment's address space; see {@link org.tent4j.api.RegisteredFile#address()}. */
    long address();

    /** Bytes of the file that requests may address. */
    long length();

    Permission permission();

    /** Whether {@code [address, address + length)} lies inside this file's range. */
    default boolean contains(long address, long length) {
        return length >= 0 && address >= address() && address - address() <= length() - length;
    }
}
