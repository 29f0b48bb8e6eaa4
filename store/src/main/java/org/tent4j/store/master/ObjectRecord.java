package org.tent4j.store.master;

/**
 * One object's metadata, kept small because a master holds tens of millions of them: primitives only, replicas packed
 * as {@code segment index << 44 | offset} longs, the first inline. About 88 bytes of object plus the key and the map
 * entry. Guarded by its shard's lock.
 */
final class ObjectRecord {
    static final byte PROCESSING = 0;
    static final byte COMPLETE = 1;

    static final byte HARD_PIN = 1;
    static final byte SOFT_PIN = 2;
    /** A COMPLETE object with an upsert in flight: {@link #pending} holds the new replicas. */
    static final byte UPSERTING = 4;

    static final int OFFSET_BITS = 44;
    static final long OFFSET_MASK = (1L << OFFSET_BITS) - 1;
    static final int MAX_SEGMENTS = 1 << (64 - OFFSET_BITS - 1);

    long size;
    /** Size of the upsert in flight. */
    long pendingSize;
    /** Read lease deadline (nanos); removal and eviction wait for it. */
    long lease;
    /** Start of the put in flight (PROCESSING or UPSERTING), in nanos. */
    long putStart;
    /** Soft pin: its TTL in nanos while the put is in flight, its deadline once readable. */
    long pin;
    long putId;
    long replica0;
    /** Replicas after the first; null for single-replica objects. */
    long[] more;
    /** New replicas of an upsert in flight; null otherwise. */
    long[] pending;
    int owner;
    byte state;
    byte flags;

    static long pack(int segment, long offset) {
        return ((long) segment << OFFSET_BITS) | offset;
    }

    static int segment(long replica) {
        return (int) (replica >>> OFFSET_BITS);
    }

    static long offset(long replica) {
        return replica & OFFSET_MASK;
    }

    long[] replicas() {
        if (replica0 == -1) {
            return new long[0];
        }
        if (more == null) {
            return new long[]{replica0};
        }
        long[] all = new long[more.length + 1];
        all[0] = replica0;
        System.arraycopy(more, 0, all, 1, more.length);
        return all;
    }

    void setReplicas(long[] all) {
        if (all.length == 0) {
            replica0 = -1;
            more = null;
        } else {
            replica0 = all[0];
            more = all.length == 1 ? null : java.util.Arrays.copyOfRange(all, 1, all.length);
        }
    }

    boolean hasReplicas() {
        return replica0 != -1;
    }

    boolean inFlight() {
        return state == PROCESSING || (flags & UPSERTING) != 0;
    }
}
