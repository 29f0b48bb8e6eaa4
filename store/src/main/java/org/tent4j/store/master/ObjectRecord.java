package org.tent4j.store.master;

/**
 * One object's metadata, kept small because a master holds tens of millions of them: primitives only, replicas packed
 * as {@code segment index << 44 | offset} longs, the first inline. About 104 bytes of object plus the key and the map
 * entry. Guarded by its shard's lock. {@link #replicas()} are memory replicas; {@link #disk} the disk one.
 */
final class ObjectRecord {
    static final byte PROCESSING = 0;
    static final byte COMPLETE = 1;

    static final byte HARD_PIN = 1;
    static final byte SOFT_PIN = 2;
    /** A COMPLETE object with an upsert in flight: {@link #pending} holds the new replicas. */
    static final byte UPSERTING = 4;
    /** An offload of this object failed or expired: the next eviction drops it rather than trying again. */
    static final byte OFFLOAD_FAILED = 8;
    /** Fewer memory replicas than {@link #asked} and no disk one: its key is among {@link Repairs}' candidates. */
    static final byte UNDER_REPLICATED = 16;
    /** The put in flight is written through: its end starts an offload ({@link Offloads#writeThrough}). */
    static final byte WRITE_THROUGH = 32;

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
    /** The disk replica (packed like a memory one, on a DISK segment), -1 if none. */
    long disk = -1;
    /** The offload in flight ({@link Offloads}' task id), 0 if none: at most one per object at a time. */
    long offloadTask;
    /** Replicas after the first; null for single-replica objects. */
    long[] more;
    /** New replicas of an upsert in flight; null otherwise. */
    long[] pending;
    int owner;
    /** CRC32C of the bytes of {@link #disk}, reported by the node that made them durable. */
    int crc;
    /**
     * When the first of {@link #hits} was counted, in milliseconds of command time cut to 32 bits (the promotion window
     * is at most a day, so the difference of two such stamps is exact; an int fits beside the other fields at no cost).
     */
    int hitsSince;
    byte state;
    byte flags;
    /** Reads of this object from disk since it was last in memory (promotion counts them). */
    byte hits;
    /** Memory replicas the put asked for ({@link Repairs} brings the object back to it); 0 before the put ends. */
    byte asked;
    /** Replicas the upsert in flight asked for. */
    byte pendingAsked;

    /**
     * Counts a read from disk towards promotion (the shard lock held). With a window ({@code windowMillis} above 0),
     * hits older than it are forgotten: the count starts again when the first hit counted lies more than a window
     * back. {@link #hitsSince} is 32 bits of milliseconds, so two stamps 49.7 days apart would look close;
     * {@code leasedUntil} (the lease before this read: every counted hit leased the object, and nothing else extends
     * the lease of an object read only from disk) catches that case: a lease that ended more than a window ago means
     * every counted hit is older than the window.
     */
    void countHit(long now, long leasedUntil, long windowMillis) {
        int nowMillis = (int) Math.floorDiv(now, 1_000_000L);
        if (windowMillis > 0 && hits > 0 && (now - leasedUntil > windowMillis * 1_000_000L
                || Integer.toUnsignedLong(nowMillis - hitsSince) > windowMillis)) {
            hits = 0;
        }
        if (hits == 0) {
            hitsSince = nowMillis;
        }
        if (hits < Byte.MAX_VALUE) {
            hits++;
        }
    }

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

    /** Whether it has a memory replica. */
    boolean hasReplicas() {
        return replica0 != -1;
    }

    /** Whether any replica, memory or disk, is left. */
    boolean readable() {
        return replica0 != -1 || disk != -1;
    }

    /** Memory replicas and the disk one, for releasing them all. */
    long[] allReplicas() {
        long[] mem = replicas();
        if (disk == -1) {
            return mem;
        }
        long[] all = java.util.Arrays.copyOf(mem, mem.length + 1);
        all[mem.length] = disk;
        return all;
    }

    /** How many memory replicas it has. */
    int replicaCount() {
        return replica0 == -1 ? 0 : more == null ? 1 : more.length + 1;
    }

    boolean inFlight() {
        return state == PROCESSING || (flags & UPSERTING) != 0;
    }
}
