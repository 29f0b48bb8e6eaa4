package org.tent4j.integration.nixl;

/** What a descriptor's address means (NIXL's {@code nixl_mem_t} without object storage). */
public enum MemoryType {
    /** Host memory: {@code address} is a virtual address, {@code devId} a NUMA node or 0. */
    DRAM,
    /** Device memory: {@code address} is a device virtual address, {@code devId} the GPU index. */
    VRAM,
    /** A file: {@code address} is an offset in it, {@code devId} names the file. */
    FILE,
    /** A block device: {@code address} is a byte offset, {@code devId} the volume. */
    BLK
}
