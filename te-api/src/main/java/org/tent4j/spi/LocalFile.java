package org.tent4j.spi;

import java.nio.file.Path;

import org.tent4j.api.Permission;

/**
 * A file registered with the local engine, as transports see it ({@link Transport#registerFile}). The same object is
 * handed out for the life of the registration. Files are never part of {@link LocalMemory}: a transport that moves
 * memory only never sees their addresses as memory.
 */
public interface LocalFile {
    /**
     * Small id, unique within the engine while registered.
     *
     * @return the id
     */
    int id();

    /**
     * Absolute, normalized path of the file or block device.
     *
     * @return the path
     */
    Path path();

    /**
     * Base of the file's range in the segment's address space; see {@link org.tent4j.api.RegisteredFile#address()}.
     *
     * @return the base address
     */
    long address();

    /**
     * Bytes of the file that requests may address.
     *
     * @return the registered size
     */
    long length();

    /**
     * What peers may do with the file.
     *
     * @return READ_ONLY or READ_WRITE
     */
    Permission permission();

    /**
     * Whether {@code [address, address + length)} lies inside this file's range.
     *
     * @param address a segment address
     * @param length  bytes, &gt;= 0
     * @return {@code true} if the whole range is inside, without overflow
     */

    default boolean contains(long address, long length) {
        return length >= 0 && address >= address() && address - address() <= length() - length;
    }
}
