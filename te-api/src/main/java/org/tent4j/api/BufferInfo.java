package org.tent4j.api;

import java.util.List;

/**
 * One registered buffer of a segment, as its owner published it. Requests address it by {@code address + offset}.
 *
 * @param address    base address in the owner's address space (the value requests use as target offset)
 * @param length     bytes
 * @param location   where the memory lives
 * @param permission what peers may do with it
 * @param transports ids of the transports that registered it, in the owner's preference order
 */
public record BufferInfo(long address, long length, Location location, Permission permission, List<String> transports) {
    /** Copies {@code transports}, so the record is immutable. */
    public BufferInfo {
        transports = List.copyOf(transports);
    }

    /**
     * Whether {@code [addr, addr + len)} lies inside this buffer, without overflow.
     *
     * @param addr start address in the owner's address space
     * @param len  bytes, &gt;= 0
     * @return {@code true} if the whole range is inside
     */
    public boolean contains(long addr, long len) {

        return len >= 0 && addr >= address && addr - address <= length - len;
    }
}
