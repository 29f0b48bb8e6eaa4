package org.tent4j.store;

/**
 * Why a store operation failed. Codes follow Mooncake Store's numbering where it has one, so logs and dashboards
 * read the same; the ones it lacks are numbered outside its ranges.
 */
public enum StoreError {
    INTERNAL_ERROR(-1),
    SEGMENT_NOT_FOUND(-101),
    SEGMENT_ALREADY_EXISTS(-102),
    CLIENT_NOT_FOUND(-103),
    NO_AVAILABLE_HANDLE(-200),
    INVALID_KEY(-400),
    INVALID_PARAMS(-600),
    ILLEGAL_CLIENT(-601),
    INVALID_WRITE(-700),
    REPLICA_IS_NOT_READY(-703),
    OBJECT_NOT_FOUND(-704),
    OBJECT_ALREADY_EXISTS(-705),
    OBJECT_HAS_LEASE(-706),
    LEASE_EXPIRED(-707),
    /** Another writer's put of the key is still in flight (Mooncake reports this as success; we do not). */
    OBJECT_IN_FLIGHT(-715),
    /** The object is larger than the largest segment mounted, so no amount of eviction can place it. */
    OBJECT_TOO_LARGE(-716),
    TRANSFER_FAIL(-800),
    RPC_FAIL(-900),
    RPC_TIMEOUT(-901),
    UNAVAILABLE_IN_CURRENT_STATUS(-1010),
    /** The master wants a token (or TLS) this caller did not present, or presented a wrong one; nothing was done. */
    UNAUTHENTICATED(-1100),
    /** An admin operation (forced bulk removal) without the master's admin token; nothing was done. */
    PERMISSION_DENIED(-1101),
    /**
     * A disk replica's bytes do not match the CRC32C recorded when they were offloaded (the file was changed behind
     * the store's back, or the disk returned wrong bytes); the message names key, segment, node, file and offset.
     */
    CHECKSUM_MISMATCH(-1800),
    /**
     * This master is a follower of its group (or a leader that lost its term) and applies nothing: the call was not
     * applied; ask the leader it names ({@link NotLeaderException#leader()}), or another master when it knows none.
     */
    NOT_LEADER(-1200);

    private final int code;

    StoreError(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    public static StoreError ofCode(int code) {
        for (StoreError e : values()) {
            if (e.code == code) {
                return e;
            }
        }
        return INTERNAL_ERROR;
    }
}
