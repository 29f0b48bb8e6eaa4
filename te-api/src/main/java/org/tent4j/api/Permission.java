package org.tent4j.api;

/** What a remote peer may do with a registered buffer. The local engine can always read and write it. */
public enum Permission {
    /** Usable only as the local side of this engine's own requests; peers cannot touch it. */
    LOCAL_ONLY,
    /** Peers may READ from it. */
    READ_ONLY,
    /** Peers may READ from and WRITE into it. */
    READ_WRITE;

    /**
     * Whether a peer's request with {@code remoteOp} (as the peer names it) is allowed on this buffer.
     *
     * @param remoteOp the peer's opcode: READ reads this buffer, WRITE writes it
     * @return whether it is allowed
     */

    public boolean allowsRemote(Opcode remoteOp) {
        return switch (this) {
            case LOCAL_ONLY -> false;
            case READ_ONLY -> remoteOp == Opcode.READ;
            case READ_WRITE -> true;
        };
    }
}
