package org.tent4j.store.rpc;

import java.util.ArrayList;
import java.util.List;

import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.proto.AdoptDiskReplicasRequest;
import org.tent4j.store.proto.AdoptDiskReplicasResponse;
import org.tent4j.store.proto.CountResponse;
import org.tent4j.store.proto.DiskReplica;
import org.tent4j.store.proto.DiskReplicasRequest;
import org.tent4j.store.proto.DiskReplicasResponse;
import org.tent4j.store.proto.DropDiskReplicasRequest;
import org.tent4j.store.proto.FreedRange;
import org.tent4j.store.proto.OffloadResult;
import org.tent4j.store.proto.OffloadTask;
import org.tent4j.store.proto.OffloadsRequest;
import org.tent4j.store.proto.OffloadsResponse;

/** The disk tier's calls ({@code Offloads}, a scrub's {@code DiskReplicas} and {@code DropDiskReplicas}): wire to commands and back. */
final class DiskTierCalls {
    /** Most offload results one call reports and tasks it takes: the call runs on an event loop. */
    static final int MAX_OFFLOADS_PER_CALL = 1024;
    /** Most disk replicas one scrub page lists or one drop names. */
    static final int MAX_SCRUB_PAGE = 65_536;

    private DiskTierCalls() {
    }

    static OffloadsResponse offloads(StoreMaster master, OffloadsRequest req) {
        if (req.getResultsCount() > MAX_OFFLOADS_PER_CALL || req.getMax() > MAX_OFFLOADS_PER_CALL) {
            throw new StoreException(StoreError.INVALID_PARAMS, "client " + req.getClientId() + " reported "
                    + req.getResultsCount() + " offloads and asked for " + req.getMax() + " (at most "
                    + MAX_OFFLOADS_PER_CALL + " each)");
        }
        List<Command.OffloadResult> results = new ArrayList<>(req.getResultsCount());
        for (OffloadResult r : req.getResultsList()) {
            String error = r.getError().length() > 1024 ? r.getError().substring(0, 1024) + "…" : r.getError();
            results.add(new Command.OffloadResult(r.getTaskId(), r.getOk(), Integer.toUnsignedLong(r.getCrc32C()), error));
        }
        master.offloadDone(req.getClientId(), results);
        OffloadsResponse.Builder b = OffloadsResponse.newBuilder();
        Command.DiskWork work = master.takeDiskWork(req.getClientId(), req.getMax(), req.getFreedAck());
        for (Command.Freed f : work.freed()) {
            b.addFreed(FreedRange.newBuilder().setSeq(f.seq()).setOffset(f.offset()).setLength(f.length()));
        }
        for (Command.OffloadTask t : work.tasks()) {
            b.addTasks(OffloadTask.newBuilder().setTaskId(t.taskId()).setKey(t.key()).setSize(t.size())
                    .setSource(Wire.replica(t.source())).setTarget(Wire.replica(t.target()))
                    .setTtlMs(Math.max(0, t.ttlNanos() / 1_000_000)).setPromote(t.promote()).setRepair(t.repair())
                    .setPutId(t.putId()));
        }
        return b.build();
    }

    static DiskReplicasResponse diskReplicas(StoreMaster master, DiskReplicasRequest req) {
        int limit = req.getLimit() <= 0 || req.getLimit() > MAX_SCRUB_PAGE ? MAX_SCRUB_PAGE : req.getLimit();
        DiskReplicasResponse.Builder b = DiskReplicasResponse.newBuilder();
        for (Command.DiskReplica r : master.diskReplicas(req.getClientId(), req.getSegmentId(), req.getFrom(), limit)) {
            b.addReplicas(DiskReplica.newBuilder().setKey(r.key()).setOffset(r.offset()).setSize(r.size())
                    .setCrc32C((int) r.crc32c()));
        }
        return b.build();
    }

    static AdoptDiskReplicasResponse adoptDiskReplicas(StoreMaster master, AdoptDiskReplicasRequest req) {
        if (req.getReplicasCount() > MAX_SCRUB_PAGE) {
            throw new StoreException(StoreError.INVALID_PARAMS, "client " + req.getClientId() + " reported "
                    + req.getReplicasCount() + " disk replicas to adopt (at most " + MAX_SCRUB_PAGE + ")");
        }
        List<Command.Adopted> held = new ArrayList<>(req.getReplicasCount());
        for (DiskReplica r : req.getReplicasList()) {
            held.add(new Command.Adopted(r.getKey(), r.getOffset(), r.getSize(), Integer.toUnsignedLong(r.getCrc32C()),
                    r.getPutId()));
        }
        return AdoptDiskReplicasResponse.newBuilder()
                .addAllRefusedOffsets(master.adoptDiskReplicas(req.getClientId(), req.getSegmentId(), held)).build();
    }

    static CountResponse dropDiskReplicas(StoreMaster master, DropDiskReplicasRequest req) {
        if (req.getReplicasCount() > MAX_SCRUB_PAGE) {
            throw new StoreException(StoreError.INVALID_PARAMS, "client " + req.getClientId() + " named "
                    + req.getReplicasCount() + " disk replicas to drop (at most " + MAX_SCRUB_PAGE + ")");
        }
        List<Command.DiskReplica> bad = new ArrayList<>(req.getReplicasCount());
        for (DiskReplica r : req.getReplicasList()) {
            bad.add(new Command.DiskReplica(r.getKey(), r.getOffset(), r.getSize(), Integer.toUnsignedLong(r.getCrc32C())));
        }
        return CountResponse.newBuilder().setCount(master.dropDiskReplicas(req.getClientId(), req.getSegmentId(), bad)).build();
    }
}
