package org.tent4j.store.rpc;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import org.tent4j.store.PrintableId;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command;
import org.tent4j.store.master.MasterState;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.proto.CommitItem;
import org.tent4j.store.proto.CommitRequest;
import org.tent4j.store.proto.CommitResponse;
import org.tent4j.store.proto.ExistResponse;
import org.tent4j.store.proto.PutEndRequest;
import org.tent4j.store.proto.PutStartRequest;
import org.tent4j.store.proto.PutStartResponse;
import org.tent4j.store.proto.ReplicaListResponse;
import org.tent4j.store.proto.Reservation;
import org.tent4j.store.proto.Status;

/**
 * A client's requests as {@link Command}s on the master, and their answers: the per-item half of
 * {@link MasterService}, for the calls of a client's stream ({@link ServedStream}) and the unary RPCs. Every request
 * that names a client is checked to be the call's own ({@link #self}) and carries its request id ({@link #once}).
 */
final class ClientCommands {
    private final StoreMaster master;

    ClientCommands(StoreMaster master) {
        this.master = master;
    }

    /**
     * {@code named} if it is the client this call's credential proves (the session, null for none); else
     * {@code ILLEGAL_CLIENT}, before anything is applied. Every call that names a client goes through here, so a
     * client acts only for itself: another's segment, put or reservation is then refused by the state's own owner
     * checks, as it names this client, not the owner.
     */
    static String self(String session, String named) {
        if (session == null) {
            throw new StoreException(StoreError.ILLEGAL_CLIENT, "client '" + PrintableId.forLog(named) + "' is not this "
                    + "call's registered client: the call carries no valid client credential (Register first, and send "
                    + "the credential it issued)");
        }
        if (!session.equals(named)) {
            throw new StoreException(StoreError.ILLEGAL_CLIENT, "this call's credential is client " + session
                    + "'s, and it names client '" + PrintableId.forLog(named) + "': a client acts only for itself");
        }
        return named;
    }

    PutStartResponse putStart(String session, PutStartRequest req) {
        return putStartAnswer(master.apply(putStartCommand(session, req)));
    }

    /**
     * {@code command} with the request id {@code seq} of {@code client} (checked by the caller to be the call's own),
     * so the state answers it again rather than apply it twice; as is without one (or without a client: a call
     * with no credential is not deduplicated).
     */
    static <R> Command<R> once(String client, long seq, Command<R> command) {
        return seq == 0 || client == null ? command : new Command.Once<>(client, seq, command);
    }

    static Command<Command.PutTicket> putStartCommand(String session, PutStartRequest req) {
        self(session, req.getClientId());
        if (req.getSize() > Long.MAX_VALUE / 2) {
            throw new StoreException(StoreError.INVALID_PARAMS, "size of key '" + req.getKey() + "' is out of range");
        }
        return once(req.getClientId(), req.getRequestSeq(), new Command.PutStart(req.getClientId(), req.getKey(),
                req.getSize(), Wire.config(req.getConfig()), req.getWriterHost(), req.getUpsert(),
                ThreadLocalRandom.current().nextLong()));
    }

    static PutStartResponse putStartAnswer(Command.PutTicket t) {
        PutStartResponse.Builder b = PutStartResponse.newBuilder().setPutId(t.putId());
        t.replicas().forEach(r -> b.addReplicas(Wire.replica(r)));
        return b.build();
    }

    Status putEnd(String session, PutEndRequest req) {
        String id = self(session, req.getClientId());
        master.apply(once(id, req.getRequestSeq(), new Command.PutEnd(id, req.getKey(), req.getPutId())));
        return Wire.OK;
    }

    Status putRevoke(String session, PutEndRequest req) {
        String id = self(session, req.getClientId());
        master.apply(once(id, req.getRequestSeq(), new Command.PutRevoke(id, req.getKey(), req.getPutId())));
        return Wire.OK;
    }

    CommitResponse commit(String session, CommitRequest req) {
        return commitAnswer(master.apply(commitCommand(session, req)));
    }

    static Command<Command.CommitResult> commitCommand(String session, CommitRequest req) {
        self(session, req.getClientId());
        if (req.getItemsCount() > MasterState.MAX_COMMIT_ITEMS) {
            throw new StoreException(StoreError.INVALID_PARAMS, "commit of " + req.getItemsCount()
                    + " items exceeds the limit of " + MasterState.MAX_COMMIT_ITEMS);
        }
        List<Command.CommitItem> items = new ArrayList<>(req.getItemsCount());
        for (CommitItem it : req.getItemsList()) {
            if (it.getSize() > MasterState.MAX_RESERVATION_BYTES) {
                throw new StoreException(StoreError.INVALID_PARAMS, "size of key '" + it.getKey() + "' is out of range");
            }
            items.add(new Command.CommitItem(it.getKey(), it.getSize(),
                    it.getReservationList().stream().mapToLong(Long::longValue).toArray(),
                    it.getAddressList().stream().mapToLong(Long::longValue).toArray()));
        }
        Command.Reserve refill = req.hasRefill() ? new Command.Reserve(Math.min(req.getRefill().getBytes(), Long.MAX_VALUE / 2),
                req.getRefill().getReplicas(), req.getRefill().getWriterHost()) : null;
        return once(req.getClientId(), req.getRequestSeq(), new Command.Commit(
                req.getClientId(), items, req.getRetireList(), refill, ThreadLocalRandom.current().nextLong()));
    }

    static CommitResponse commitAnswer(Command.CommitResult r) {
        CommitResponse.Builder b = CommitResponse.newBuilder();
        for (StoreException e : r.failures()) {
            b.addItems(e == null ? Wire.OK : Wire.status(e));
        }
        for (Command.Grant g : r.granted()) {
            b.addGranted(Reservation.newBuilder().setId(g.id()).setRange(Wire.replica(g.range())));
        }
        if (r.refillFailure() != null) {
            b.setRefillStatus(Wire.status(r.refillFailure()));
        }
        return b.build();
    }

    ReplicaListResponse replicaList(String key) {
        return replicaList(master.getReplicas(key), null);
    }

    /** With a table: replicas as indexes into it (the batch answer carries it), else named in full. */
    static ReplicaListResponse replicaList(Command.ReplicaList list, SegmentTable table) {
        ReplicaListResponse.Builder b = ReplicaListResponse.newBuilder().setSize(list.size())
                .setLeaseTtlMs(list.leaseTtl().toMillis());
        if (table != null) {
            table.add(b, list.replicas());
        } else {
            list.replicas().forEach(r -> b.addReplicas(Wire.replica(r)));
        }
        return b.build();
    }

    ExistResponse exist(String key) {
        return ExistResponse.newBuilder().setExists(master.exists(key)).build();
    }

    /** {@link #exist} for the items of one batch call: one read check for the batch ({@link StoreMaster#existsInBatch}). */
    java.util.function.Function<String, ExistResponse> existBatch() {
        java.util.function.Predicate<String> exists = master.existsInBatch();
        return key -> ExistResponse.newBuilder().setExists(exists.test(key)).build();
    }
}
