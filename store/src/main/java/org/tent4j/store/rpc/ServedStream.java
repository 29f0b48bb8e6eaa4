package org.tent4j.store.rpc;

import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Function;

import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import org.tent4j.store.master.Command;
import org.tent4j.store.proto.Answer;
import org.tent4j.store.proto.BatchExistResponse;
import org.tent4j.store.proto.BatchPutStartResponse;
import org.tent4j.store.proto.BatchReplicaListResponse;
import org.tent4j.store.proto.BatchStatus;
import org.tent4j.store.proto.Call;
import org.tent4j.store.proto.CommitResponse;
import org.tent4j.store.proto.ExistResponse;
import org.tent4j.store.proto.KeysRequest;
import org.tent4j.store.proto.PutEndRequest;
import org.tent4j.store.proto.PutStartRequest;
import org.tent4j.store.proto.PutStartResponse;
import org.tent4j.store.proto.ReplicaListResponse;
import org.tent4j.store.proto.Status;

/**
 * One client's Calls stream on the master ({@link MasterService#calls}): its calls served in order, one at a time,
 * on the stream's event loop, batches over {@link MasterService#INLINE_BATCH} items on the slow-work pool, at most
 * {@link MasterService#MAX_SLOW_CALLS} of them at once. Every call naming a client is checked against the client the
 * stream's credential proved when it opened.
 */
final class ServedStream implements StreamObserver<Call> {
    private final MasterService svc;
    private final ServerCallStreamObserver<Answer> out;
    /** The client this stream's credential proves, checked once when it opened; null: none. */
    private final String session;
    private final LoggedBatch.Step<PutStartRequest, Command.PutTicket, PutStartResponse> putStartStep;
    private final LoggedBatch.Step<PutEndRequest, Void, Status> putEndStep;
    private final LoggedBatch.Step<PutEndRequest, Void, Status> putRevokeStep;
    // guarded by this: the event loop and slowWork's threads both answer and ask for the next call
    private boolean requested;
    private boolean closed;
    private boolean halfClosed;
    private int slowInFlight;

    ServedStream(MasterService svc, ServerCallStreamObserver<Answer> out, String session) {
        this.svc = svc;
        this.out = out;
        this.session = session;
        this.putStartStep = new LoggedBatch.Step<>(svc.master, req -> ClientCommands.putStartCommand(session, req), (req, t) -> ClientCommands.putStartAnswer(t));
        this.putEndStep = new LoggedBatch.Step<>(svc.master,
                req -> ClientCommands.once(req.getClientId(), req.getRequestSeq(),
                        new Command.PutEnd(ClientCommands.self(session, req.getClientId()), req.getKey(), req.getPutId())), (req, v) -> Wire.OK);
        this.putRevokeStep = new LoggedBatch.Step<>(svc.master,
                req -> ClientCommands.once(req.getClientId(), req.getRequestSeq(),
                        new Command.PutRevoke(ClientCommands.self(session, req.getClientId()), req.getKey(), req.getPutId())), (req, v) -> Wire.OK);
        out.disableAutoRequest();
        out.setOnReadyHandler(this::pump);
        out.setOnCancelHandler(() -> {
            synchronized (this) {
                closed = true;
            }
        });
        pump();
    }

    private synchronized void pump() {
        if (!requested && !closed && !halfClosed && slowInFlight < MasterService.MAX_SLOW_CALLS && out.isReady()) {
            requested = true;
            out.request(1);
        }
    }

    /** An answer to call {@code id}, stamped with this master's term now. */
    private Answer.Builder answerTo(long id) {
        return Answer.newBuilder().setId(id).setTerm(svc.master.term());
    }

    private synchronized void answer(Answer a) {
        if (!closed) {
            try {
                out.onNext(a);
            } catch (StatusRuntimeException cancelled) {
                // the client went away between the check and the answer: nobody is left to tell
                closed = true;
            }
        }
    }

    @Override
    public void onNext(Call c) {
        synchronized (this) {
            requested = false;
        }
        long id = c.getId();
        Answer.Builder a = answerTo(id);
        switch (c.getBodyCase()) {
            case PUT_START -> answer(a.setPutStart(svc.one("PutStart", () -> svc.commands.putStart(session, c.getPutStart()),
                    s -> PutStartResponse.newBuilder().setStatus(s).build())).build());
            case PUT_END -> answer(a.setStatus(svc.one("PutEnd", () -> svc.commands.putEnd(session, c.getPutEnd()), s -> s)).build());
            case PUT_REVOKE -> answer(a.setStatus(svc.one("PutRevoke", () -> svc.commands.putRevoke(session, c.getPutRevoke()), s -> s)).build());
            case GET_REPLICA_LIST -> answer(a.setReplicaList(svc.one("GetReplicaList", () -> svc.commands.replicaList(c.getGetReplicaList().getKey()),
                    s -> ReplicaListResponse.newBuilder().setStatus(s).build())).build());
            case EXIST -> answer(a.setExist(svc.one("Exist", () -> svc.commands.exist(c.getExist().getKey()),
                    s -> ExistResponse.newBuilder().setStatus(s).build())).build());
            case BATCH_PUT_START -> batch("BatchPutStart", id, c.getBatchPutStart().getItemsList(), putStartStep,
                    s -> PutStartResponse.newBuilder().setStatus(s).build(),
                    items -> a.setBatchPutStart(BatchPutStartResponse.newBuilder().addAllItems(items)).build());
            case BATCH_PUT_END -> batch("BatchPutEnd", id, c.getBatchPutEnd().getItemsList(), putEndStep, s -> s,
                    items -> a.setBatchStatus(BatchStatus.newBuilder().addAllItems(items)).build());
            case BATCH_PUT_REVOKE -> batch("BatchPutRevoke", id, c.getBatchPutRevoke().getItemsList(), putRevokeStep, s -> s,
                    items -> a.setBatchStatus(BatchStatus.newBuilder().addAllItems(items)).build());
            case BATCH_GET_REPLICA_LIST -> {
                KeysRequest req = c.getBatchGetReplicaList();
                // one table per answer; a batch is served by one thread at a time, inline or on slowWork
                SegmentTable table = req.getSegmentTable() ? new SegmentTable() : null;
                batch("BatchGetReplicaList", id, req.getKeysList(), new LoggedBatch.Step<>(svc.master, Command.GrantRead::new,
                        (k, list) -> ClientCommands.replicaList(list, table)),
                        s -> ReplicaListResponse.newBuilder().setStatus(s).build(),
                        items -> a.setBatchReplicaList(BatchReplicaListResponse.newBuilder().addAllItems(items)
                                .addAllSegments(table == null ? List.of() : table.segments())).build());
            }
            case BATCH_EXIST -> batch("BatchExist", id, c.getBatchExist().getKeysList(), svc.commands.existBatch(),
                    s -> ExistResponse.newBuilder().setStatus(s).build(),
                    items -> a.setBatchExist(BatchExistResponse.newBuilder().addAllItems(items)).build());
            case COMMIT -> answer(a.setCommit(svc.one("Commit", () -> svc.commands.commit(session, c.getCommit()),
                    s -> CommitResponse.newBuilder().setRefillStatus(s).build())).build());
            case BODY_NOT_SET -> answer(a.setRefused(MasterService.refusal("call " + id + " names no operation")).build());
        }
        pump();
    }

    private <I, T> void batch(String method, long id, List<I> items, Function<I, T> each, Function<Status, T> onError,
                              Function<List<T>, Answer> wrap) {
        if (items.size() > MasterService.MAX_BATCH) {
            svc.stats.record(method, 0, true);
            answer(answerTo(id).setRefused(MasterService.refusal(method + ": batch of " + items.size()
                    + " items exceeds the limit of " + MasterService.MAX_BATCH)).build());
        } else if (items.size() > MasterService.INLINE_BATCH) {
            synchronized (this) {
                slowInFlight++;
            }
            try {
                svc.slowWork.execute(() -> {
                    try {
                        answer(wrap.apply(svc.serveBatch(method, items, each, onError)));
                    } finally {
                        slowDone();
                    }
                });
            } catch (RejectedExecutionException full) {
                svc.stats.record(method, 0, true);
                answer(answerTo(id).setRefused(MasterService.busy(method)).build());
                slowDone();
            }
        } else {
            answer(wrap.apply(svc.serveBatch(method, items, each, onError)));
        }
    }

    private void slowDone() {
        synchronized (this) {
            slowInFlight--;
        }
        finishIfDrained();
        pump();
    }

    @Override
    public void onError(Throwable t) {
        synchronized (this) {
            closed = true;
        }
    }

    @Override
    public void onCompleted() {
        synchronized (this) {
            halfClosed = true;
        }
        finishIfDrained();
    }

    private synchronized void finishIfDrained() {
        if (halfClosed && slowInFlight == 0 && !closed) {
            closed = true;
            out.onCompleted();
        }
    }
}
