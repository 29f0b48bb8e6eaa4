package org.tent4j.store.client;

import java.util.List;
import java.util.Objects;

import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.Tier;

/**
 * What a put did: its {@link #status()}, and for a stored value how many replicas were stored and where, against how
 * many were asked. The master places as many replicas as it finds segments with room for (at least one), so a put
 * asking 2 when one segment has room is stored with {@code replicas() == 1, asked() == 2}. The count is the master's
 * answer at put start (or the reservation the value went into): a segment unmounted before the put ended drops its
 * replica, which a later read no longer sees.
 *
 * <p>A put of a key another writer still has in flight is an error, never one of these.
 */
public final class PutResult {
    /** Whether the value was stored. */
    public enum Status {
        STORED,
        /** The key was already readable; the store keeps the first value (use upsert to replace it). */
        ALREADY_EXISTS
    }

    /** Where one replica of a stored value lives: a segment (its id, as the master names it) and its tier. */
    public static final class Replica {
        private final String segmentId;
        private final Tier tier;

        Replica(String segmentId, Tier tier) {
            this.segmentId = Objects.requireNonNull(segmentId, "segmentId");
            this.tier = Objects.requireNonNull(tier, "tier");
        }

        public String segmentId() {
            return segmentId;
        }

        public Tier tier() {
            return tier;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Replica r && r.segmentId.equals(segmentId) && r.tier == tier;
        }

        @Override
        public int hashCode() {
            return Objects.hash(segmentId, tier);
        }

        @Override
        public String toString() {
            return segmentId + "(" + tier + ")";
        }
    }

    private final Status status;
    private final int asked;
    private final List<Replica> replicas;

    private PutResult(Status status, int asked, List<Replica> replicas) {
        this.status = status;
        this.asked = asked;
        this.replicas = List.copyOf(replicas);
    }

    /** A value stored in {@code where}, {@code asked} replicas having been asked for. */
    static PutResult stored(int asked, List<ReplicaLocation> where) {
        return new PutResult(Status.STORED, asked, where.stream().map(r -> new Replica(r.segmentId(), r.tier())).toList());
    }

    /** The key was there already: this put stored nothing. */
    static PutResult alreadyExists(int asked) {
        return new PutResult(Status.ALREADY_EXISTS, asked, List.of());
    }

    public Status status() {
        return status;
    }

    /** Whether this put stored the value (false: the key was already there). */
    public boolean stored() {
        return status == Status.STORED;
    }

    /** How many replicas this put stored (0 when the key already existed). */
    public int replicas() {
        return replicas.size();
    }

    /** How many replicas the put asked for. */
    public int asked() {
        return asked;
    }

    /** Where the stored replicas live, one per distinct segment. */
    public List<Replica> locations() {
        return replicas;
    }

    /** Stored with fewer replicas than asked (the master found room on fewer segments). */
    public boolean underReplicated() {
        return status == Status.STORED && replicas.size() < asked;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PutResult r && r.status == status && r.asked == asked && r.replicas.equals(replicas);
    }

    @Override
    public int hashCode() {
        return Objects.hash(status, asked, replicas);
    }

    @Override
    public String toString() {
        return status == Status.STORED ? "STORED " + replicas.size() + " of " + asked + " replicas " + replicas
                : status.toString();
    }
}
