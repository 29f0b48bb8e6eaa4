package org.tent4j.integration.nixl;

/** What a descriptor's address means (NIXL's {@code nixl_mem_t} without object storage). */
public enum MemoryType {
    /** Host memory: {@code address} is a virtual address, {@code devId} a NUMA node or 0. */
    DRAM,
    /** Device memory: {@code address} is a device virtual address, {@code devId} the GPU index. */
    VRAM,
    /**
     * A file: {@code address} is an offset in it, {@code devId} an open file descriptor of the registering process
     * (NIXL's convention; the tent4j backend resolves it through {@code /proc/self/fd}). On a peer's list, {@code devId}
     * is the peer's descriptor. A file is only ever a transfer target.
     */
    FILE,
    /** A block device: {@code address} is a byte offset, {@code devId} an open file descriptor of it (as for FILE). */
    BLK
}
