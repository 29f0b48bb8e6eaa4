package org.tent4j.store.rpc;

import java.util.List;
import java.util.concurrent.CompletableFuture;
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
import org.tent4j.store.proto.CommitRequest;
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
    /**
     * Most calls of one stream waiting for their log entry at once (durable master): the stream is not read past
     * them, so the master holds at most this many of a client's calls, and their answers, per stream.
     */
    static final int MAX_LOGGED_CALLS = 32;
    private final MasterService svc;
    private final ServerCallStreamObserver<Answer> out;
    /** The client this stream's credential proves, checked once when it opened; null: none. */
    private final String session;
    private final LoggedBatch.Step<PutStartRequest, Command.PutTicket, PutStartResponse> putStartStep;
    private final LoggedBatch.Step<PutEndRequest, Void, Status> putEndStep;
    private final LoggedBatch.Step<PutEndRequest, Void, Status> putRevokeStep;
    private final LoggedBatch.Step<CommitRequest, Command.CommitResult, CommitResponse> commitStep;
    // guarded by this: the event loop and slowWork's threads both answer and ask for the next call
    private boolean requested;
    private boolean closed;
    private boolean halfClosed;
    private int slowInFlight;
    private int loggedInFlight;

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
        this.commitStep = new LoggedBatch.Step<>(svc.master, req -> ClientCommands.commitCommand(session, req),
                (req, r) -> ClientCommands.commitAnswer(r));
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
        if (!requested && !closed && !halfClosed && slowInFlight < MasterService.MAX_SLOW_CALLS
                && loggedInFlight < MAX_LOGGED_CALLS && out.isReady()) {
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
        if (svc.master.durable() && logged(c, a)) {
            pump();
            return;
        }
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

    /**
     * On a durable master, a call that is one log entry is proposed here and answered once the entry is applied (on the
     * log's applier thread), so this event loop serves other calls, this stream's next ones included, meanwhile and
     * their entries share the log's fsync. Calls are proposed in the order they arrive, so they are applied in that
     * order, but for reads, whose entry (if they need one) is proposed once their read check is done; answers may
     * overtake each other (they carry the call's id). False: not such a call here.
     */
    private boolean logged(Call c, Answer.Builder a) {
        switch (c.getBodyCase()) {
            case PUT_START -> logged("PutStart", List.of(c.getPutStart()), putStartStep,
                    s -> PutStartResponse.newBuilder().setStatus(s).build(), items -> a.setPutStart(items.getFirst()).build());
            case PUT_END -> logged("PutEnd", List.of(c.getPutEnd()), putEndStep, s -> s,
                    items -> a.setStatus(items.getFirst()).build());
            case PUT_REVOKE -> logged("PutRevoke", List.of(c.getPutRevoke()), putRevokeStep, s -> s,
                    items -> a.setStatus(items.getFirst()).build());
            case GET_REPLICA_LIST -> logged("GetReplicaList", List.of(c.getGetReplicaList().getKey()),
                    readStep(List.of(c.getGetReplicaList().getKey()), null),
                    s -> ReplicaListResponse.newBuilder().setStatus(s).build(),
                    items -> a.setReplicaList(items.getFirst()).build());
            case COMMIT -> logged("Commit", List.of(c.getCommit()), commitStep,
                    s -> CommitResponse.newBuilder().setRefillStatus(s).build(), items -> a.setCommit(items.getFirst()).build());
            case BATCH_PUT_START -> {
                if (c.getBatchPutStart().getItemsCount() > MasterService.INLINE_BATCH) {
                    return false;
                }
                logged("BatchPutStart", c.getBatchPutStart().getItemsList(), putStartStep,
                        s -> PutStartResponse.newBuilder().setStatus(s).build(),
                        items -> a.setBatchPutStart(BatchPutStartResponse.newBuilder().addAllItems(items)).build());
            }
            case BATCH_PUT_END, BATCH_PUT_REVOKE -> {
                boolean end = c.getBodyCase() == Call.BodyCase.BATCH_PUT_END;
                List<PutEndRequest> req = (end ? c.getBatchPutEnd() : c.getBatchPutRevoke()).getItemsList();
                if (req.size() > MasterService.INLINE_BATCH) {
                    return false;
                }
                logged(end ? "BatchPutEnd" : "BatchPutRevoke", req, end ? putEndStep : putRevokeStep, s -> s,
                        items -> a.setBatchStatus(BatchStatus.newBuilder().addAllItems(items)).build());
            }
            case BATCH_GET_REPLICA_LIST -> {
                KeysRequest req = c.getBatchGetReplicaList();
                if (req.getKeysCount() > MasterService.INLINE_BATCH) {
                    return false;
                }
                // filled by the answer step, on the applier thread, after the entry is applied
                SegmentTable table = req.getSegmentTable() ? new SegmentTable() : null;
                logged("BatchGetReplicaList", req.getKeysList(), readStep(req.getKeysList(), table),
                        s -> ReplicaListResponse.newBuilder().setStatus(s).build(),
                        items -> a.setBatchReplicaList(BatchReplicaListResponse.newBuilder().addAllItems(items)
                                .addAllSegments(table == null ? List.of() : table.segments())).build());
            }
            default -> {
                return false;
            }
        }
        return true;
    }

    /**
     * A replica list's step, known once its read check is done: a read lease as an entry, or none for a key whose
     * lease still runs ({@link org.tent4j.store.master.StoreMaster#heldReads}); replicas named through {@code table}
     * when not null.
     */
    private CompletableFuture<LoggedBatch.Step<String, Command.ReplicaList, ReplicaListResponse>> readStep(List<String> keys,
                                                                                                          SegmentTable table) {
        return svc.master.heldReads(keys).thenApply(held -> new LoggedBatch.Step<>(svc.master, Command.GrantRead::new,
                (k, list) -> ClientCommands.replicaList(list, table), held));
    }

    private <I, R, T> void logged(String method, List<I> items, LoggedBatch.Step<I, R, T> step,
                                  Function<Status, T> onError, Function<List<T>, Answer> wrap) {
        logged(method, items, CompletableFuture.completedFuture(step), onError, wrap);
    }

    /** As above, the step known once {@code step} completes (a read's, after its read check). */
    private <I, R, T> void logged(String method, List<I> items, CompletableFuture<LoggedBatch.Step<I, R, T>> step,
                                  Function<Status, T> onError, Function<List<T>, Answer> wrap) {
        synchronized (this) {
            loggedInFlight++;
        }
        step.thenCompose(s -> LoggedBatch.serveAsync(svc.master, method, items, s, onError, svc.stats)).whenComplete((answers, err) -> {
            try {
                // serveAsync answers every item, a failed entry too: err is a bug, still answered so no call hangs
                answer(wrap.apply(answers != null ? answers : items.stream().map(i -> onError.apply(Wire.internalError(err)))
                        .toList()));
            } finally {
                synchronized (this) {
                    loggedInFlight--;
                }
                finishIfDrained();
                pump();
            }
        });
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
        if (halfClosed && slowInFlight == 0 && loggedInFlight == 0 && !closed) {
            closed = true;
            out.onCompleted();
        }
    }
}
