package org.tent4j.api;

/** Direction of a transfer, seen from the initiator. */
public enum Opcode {
    /** Copy bytes from the target segment into local memory. */
    READ,
    /** Copy bytes from local memory into the target segment. */
    WRITE
}
