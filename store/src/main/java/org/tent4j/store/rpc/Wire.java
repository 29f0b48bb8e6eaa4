package org.tent4j.store.rpc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.tent4j.store.NotLeaderException;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.Tier;
import org.tent4j.store.proto.Replica;
import org.tent4j.store.proto.Segment;
import org.tent4j.store.proto.Status;

/** Conversions between the store's types and their protobuf messages. */
public final class Wire {
    public static final Status OK = Status.getDefaultInstance();

    private Wire() {
    }

    /** The status of a call that failed in a way no {@link StoreError} names (a bug): {@code INTERNAL_ERROR} and why. */
    static Status internalError(Object why) {
        return Status.newBuilder().setCode(StoreError.INTERNAL_ERROR.code()).setMessage(StoreError.INTERNAL_ERROR + ": " + why).build();
    }

    public static Status status(StoreException e) {
        Status.Builder b = Status.newBuilder().setCode(e.error().code()).setMessage(e.getMessage());
        if (e instanceof NotLeaderException n && n.leader() != null) {
            b.setLeader(n.leader());
        }
        return b.build();
    }

    /** Throws the error a non-OK status carries. */
    public static void check(Status s) {
        if (s.getCode() != 0) {
            StoreError error = StoreError.ofCode(s.getCode());
            String prefix = error + ": ";
            String msg = s.getMessage().startsWith(prefix) ? s.getMessage().substring(prefix.length()) : s.getMessage();
            throw error == StoreError.NOT_LEADER
                    ? new NotLeaderException(msg, s.getLeader().isEmpty() ? null : s.getLeader())
                    : new StoreException(error, msg);
        }
    }

    public static Replica replica(ReplicaLocation r) {
        Replica.Builder b = Replica.newBuilder().setSegmentId(r.segmentId()).setEngineSegment(r.engineSegment())
                .setHost(r.host()).setAddress(r.address()).setLength(r.length());
        if (r.onDisk()) {
            b.setTier(org.tent4j.store.proto.Tier.DISK).setCrc32C((int) r.crc32c()).setFile(r.file())
                    .setFileOffset(r.fileOffset());
        }
        return b.build();
    }

    public static ReplicaLocation replica(Replica r) {
        if (r.getTier() == org.tent4j.store.proto.Tier.DISK) {
            return new ReplicaLocation(r.getSegmentId(), r.getEngineSegment(), r.getHost(), r.getAddress(), r.getLength(),
                    Tier.DISK, Integer.toUnsignedLong(r.getCrc32C()), r.getFile(), r.getFileOffset());
        }
        return new ReplicaLocation(r.getSegmentId(), r.getEngineSegment(), r.getHost(), r.getAddress(), r.getLength());
    }

    public static List<ReplicaLocation> replicas(List<Replica> rs) {
        List<ReplicaLocation> out = new ArrayList<>(rs.size());
        for (Replica r : rs) {
            out.add(replica(r));
        }
        return out;
    }

    public static Segment segment(SegmentSpec s) {
        return Segment.newBuilder().setId(s.id()).setEngineSegment(s.engineSegment()).setHost(s.host())
                .setBase(s.base()).setSize(s.size())
                .setTier(s.tier() == Tier.DISK ? org.tent4j.store.proto.Tier.DISK : org.tent4j.store.proto.Tier.MEMORY)
                .setFile(s.file()).build();
    }

    public static SegmentSpec segment(Segment s) {
        Tier tier = switch (s.getTier()) {
            case MEMORY -> Tier.MEMORY;
            case DISK -> Tier.DISK;
            default -> throw new StoreException(StoreError.INVALID_PARAMS, "segment " + s.getId() + " of unknown tier "
                    + s.getTierValue());
        };
        return new SegmentSpec(s.getId(), s.getEngineSegment(), s.getHost(), s.getBase(), s.getSize(), tier, s.getFile());
    }

    public static org.tent4j.store.proto.ReplicateConfig config(ReplicateConfig c) {
        var b = org.tent4j.store.proto.ReplicateConfig.newBuilder().setReplicas(c.replicas())
                .addAllPreferredSegments(c.preferredSegments()).setPreferLocalHost(c.preferLocalHost())
                .setSoftPin(c.softPin()).setSoftPinTtlMs(c.softPinTtl() == null ? -1 : c.softPinTtl().toMillis())
                .setHardPin(c.hardPin()).addAllExcludedSegments(c.excludedSegments());
        if (c.writeThrough() != null) {
            b.setWriteThrough(c.writeThrough());
        }
        return b.build();
    }

    public static ReplicateConfig config(org.tent4j.store.proto.ReplicateConfig c) {
        return new ReplicateConfig(c.getReplicas(), c.getPreferredSegmentsList(), c.getPreferLocalHost(), c.getSoftPin(),
                c.getSoftPinTtlMs() < 0 ? null : Duration.ofMillis(c.getSoftPinTtlMs()), c.getHardPin(),
                c.getExcludedSegmentsList(), c.hasWriteThrough() ? c.getWriteThrough() : null);
    }
}
