package org.tent4j.store.rpc;

import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;
import java.util.function.Supplier;

import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command;
import org.tent4j.store.master.MasterState;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.proto.Answer;
import org.tent4j.store.proto.BatchExistResponse;
import org.tent4j.store.proto.BatchPutStartResponse;
import org.tent4j.store.proto.BatchRemoveRequest;
import org.tent4j.store.proto.BatchReplicaListResponse;
import org.tent4j.store.proto.BatchStatus;
import org.tent4j.store.proto.Call;
import org.tent4j.store.proto.CommitItem;
import org.tent4j.store.proto.CommitRequest;
import org.tent4j.store.proto.CommitResponse;
import org.tent4j.store.proto.CountResponse;
import org.tent4j.store.proto.Empty;
import org.tent4j.store.proto.ExistResponse;
import org.tent4j.store.proto.KeyRequest;
import org.tent4j.store.proto.KeysRequest;
import org.tent4j.store.proto.LeaveRequest;
import org.tent4j.store.proto.MasterGrpc;
import org.tent4j.store.proto.MountRequest;
import org.tent4j.store.proto.DiskReplicasRequest;
import org.tent4j.store.proto.DiskReplicasResponse;
import org.tent4j.store.proto.DropDiskReplicasRequest;
import org.tent4j.store.proto.OffloadsRequest;
import org.tent4j.store.proto.OffloadsResponse;
import org.tent4j.store.proto.PingRequest;
import org.tent4j.store.proto.PingResponse;
import org.tent4j.store.proto.PutEndRequest;
import org.tent4j.store.proto.PutStartRequest;
import org.tent4j.store.proto.PutStartResponse;
import org.tent4j.store.proto.ReadyResponse;
import org.tent4j.store.proto.RemoveAllRequest;
import org.tent4j.store.proto.RemoveByRegexRequest;
import org.tent4j.store.proto.RemoveRequest;
import org.tent4j.store.proto.ReplicaListResponse;
import org.tent4j.store.proto.Reservation;
import org.tent4j.store.proto.SizeResponse;
import org.tent4j.store.proto.Status;
import org.tent4j.store.proto.UnmountRequest;

/** The master's RPCs over gRPC: each one turns into {@link Command}s applied to a {@link StoreMaster}. */
public final class MasterService extends MasterGrpc.MasterImplBase {
    /** Most items one batch RPC may carry; a peer chooses the count, so it is bounded. */
    public static final int MAX_BATCH = 65_536;
    public static final String VERSION = "tent4j-store/1";
    /**
     * Batches above this many items are served off the I/O thread: the server runs handlers on its event loops
     * (one thread hand-off less per RPC, which is most of a small RPC's latency on a busy host), so anything that
     * may take milliseconds goes to {@code slowWork} instead of stalling the other RPCs of that loop.
     */
    static final int INLINE_BATCH = 1024;
    /** Most calls of one stream handed to {@code slowWork} at once; the stream is not read while that many run. */
    static final int MAX_SLOW_CALLS = 4;

    private final StoreMaster master;
    private final RpcStats stats;
    private final Executor slowWork;
    private final LoggedBatch.Step<PutStartRequest, Command.PutTicket, PutStartResponse> putStartStep;
    private final LoggedBatch.Step<PutEndRequest, Void, Status> putEndStep;
    private final LoggedBatch.Step<PutEndRequest, Void, Status> putRevokeStep;

    /** {@code slowWork} runs sweeps over all objects (removal by regex or all, unmounts, mounts) and large batches. */
    public MasterService(StoreMaster master, RpcStats stats, Executor slowWork) {
        this.master = master;
        this.stats = stats;
        this.slowWork = slowWork;
        this.putStartStep = new LoggedBatch.Step<>(master, MasterService::putStartCommand, (req, t) -> putStartAnswer(t));
        this.putEndStep = new LoggedBatch.Step<>(master,
                req -> new Command.PutEnd(req.getClientId(), req.getKey(), req.getPutId()), (req, v) -> Wire.OK);
        this.putRevokeStep = new LoggedBatch.Step<>(master,
                req -> new Command.PutRevoke(req.getClientId(), req.getKey(), req.getPutId()), (req, v) -> Wire.OK);
    }

    @Override
    public void serviceReady(Empty request, StreamObserver<ReadyResponse> out) {
        reply(out, ReadyResponse.newBuilder().setVersion(VERSION).build());
    }

    @Override
    public void ping(PingRequest req, StreamObserver<PingResponse> out) {
        if (req.getLeaseExpiredReads() > 0 && req.getLeaseExpiredReads() < Integer.MAX_VALUE) {
            stats.addClientLeaseExpiries(req.getLeaseExpiredReads());
        }
        if (req.getChecksumFailures() > 0 && req.getChecksumFailures() < Integer.MAX_VALUE) {
            stats.addClientChecksumFailures(req.getChecksumFailures());
        }
        one("Ping", out, () -> PingResponse.newBuilder().setNeedRemount(
                        master.heartbeat(req.getClientId()) == Command.ClientStatus.NEED_REMOUNT).build(),
                s -> PingResponse.newBuilder().setStatus(s).build());
    }

    @Override
    public void offloads(OffloadsRequest req, StreamObserver<OffloadsResponse> out) {
        one("Offloads", out, () -> DiskTierCalls.offloads(master, req), s -> OffloadsResponse.newBuilder().setStatus(s).build());
    }

    @Override
    public void diskReplicas(DiskReplicasRequest req, StreamObserver<DiskReplicasResponse> out) {
        // a walk over every object: off the event loop
        offload("DiskReplicas", out, () -> DiskTierCalls.diskReplicas(master, req),
                s -> DiskReplicasResponse.newBuilder().setStatus(s).build());
    }

    @Override
    public void dropDiskReplicas(DropDiskReplicasRequest req, StreamObserver<CountResponse> out) {
        offload("DropDiskReplicas", out, () -> DiskTierCalls.dropDiskReplicas(master, req),
                s -> CountResponse.newBuilder().setStatus(s).build());
    }

    @Override
    public void mountSegment(MountRequest req, StreamObserver<Status> out) {
        offload("MountSegment", out, () -> {
            master.mount(req.getClientId(), Wire.segment(req.getSegment()));
            return Wire.OK;
        }, s -> s);
    }

    @Override
    public void unmountSegment(UnmountRequest req, StreamObserver<Status> out) {
        offload("UnmountSegment", out, () -> {
            master.unmount(req.getClientId(), req.getSegmentId());
            return Wire.OK;
        }, s -> s);
    }

    @Override
    public void leave(LeaveRequest req, StreamObserver<Status> out) {
        // a segment still mounted is dropped with a sweep over all objects
        slowWork.execute(() -> one("Leave", out, () -> {
            master.leave(req.getClientId());
            return Wire.OK;
        }, s -> s));
    }

    /**
     * The hot calls of one client. Calls are served in order, one at a time, on the stream's event loop; batches over
     * {@link #INLINE_BATCH} items go to {@code slowWork}, at most {@link #MAX_SLOW_CALLS} of them per stream. The
     * next call is read only when the previous one is served (or handed off) and the transport can take another
     * answer, so a client that sends without reading its answers stops being read, and the master buffers at most
     * one flow-control window of its calls.
     */
    @Override
    public StreamObserver<Call> calls(StreamObserver<Answer> answers) {
        return new ServedStream((ServerCallStreamObserver<Answer>) answers);
    }

    private final class ServedStream implements StreamObserver<Call> {
        private final ServerCallStreamObserver<Answer> out;
        // guarded by this: the event loop and slowWork's threads both answer and ask for the next call
        private boolean requested;
        private boolean closed;
        private boolean halfClosed;
        private int slowInFlight;

        ServedStream(ServerCallStreamObserver<Answer> out) {
            this.out = out;
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
            if (!requested && !closed && !halfClosed && slowInFlight < MAX_SLOW_CALLS && out.isReady()) {
                requested = true;
                out.request(1);
            }
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
            Answer.Builder a = Answer.newBuilder().setId(id);
            switch (c.getBodyCase()) {
                case PUT_START -> answer(a.setPutStart(one("PutStart", () -> putStart(c.getPutStart()),
                        s -> PutStartResponse.newBuilder().setStatus(s).build())).build());
                case PUT_END -> answer(a.setStatus(one("PutEnd", () -> putEnd(c.getPutEnd()), s -> s)).build());
                case PUT_REVOKE -> answer(a.setStatus(one("PutRevoke", () -> putRevoke(c.getPutRevoke()), s -> s)).build());
                case GET_REPLICA_LIST -> answer(a.setReplicaList(one("GetReplicaList", () -> replicaList(c.getGetReplicaList().getKey()),
                        s -> ReplicaListResponse.newBuilder().setStatus(s).build())).build());
                case EXIST -> answer(a.setExist(one("Exist", () -> exist(c.getExist().getKey()),
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
                    batch("BatchGetReplicaList", id, req.getKeysList(), new LoggedBatch.Step<>(master, Command.GrantRead::new,
                            (k, list) -> replicaList(list, table)),
                            s -> ReplicaListResponse.newBuilder().setStatus(s).build(),
                            items -> a.setBatchReplicaList(BatchReplicaListResponse.newBuilder().addAllItems(items)
                                    .addAllSegments(table == null ? List.of() : table.segments())).build());
                }
                case BATCH_EXIST -> batch("BatchExist", id, c.getBatchExist().getKeysList(), MasterService.this::exist,
                        s -> ExistResponse.newBuilder().setStatus(s).build(),
                        items -> a.setBatchExist(BatchExistResponse.newBuilder().addAllItems(items)).build());
                case COMMIT -> answer(a.setCommit(one("Commit", () -> commit(c.getCommit()),
                        s -> CommitResponse.newBuilder().setRefillStatus(s).build())).build());
                case BODY_NOT_SET -> answer(a.setRefused(refusal("call " + id + " names no operation")).build());
            }
            pump();
        }

        private <I, T> void batch(String method, long id, List<I> items, Function<I, T> each, Function<Status, T> onError,
                                  Function<List<T>, Answer> wrap) {
            if (items.size() > MAX_BATCH) {
                stats.record(method, 0, true);
                answer(Answer.newBuilder().setId(id).setRefused(refusal(method + ": batch of " + items.size()
                        + " items exceeds the limit of " + MAX_BATCH)).build());
            } else if (items.size() > INLINE_BATCH) {
                synchronized (this) {
                    slowInFlight++;
                }
                try {
                    slowWork.execute(() -> {
                        try {
                            answer(wrap.apply(serveBatch(method, items, each, onError)));
                        } finally {
                            slowDone();
                        }
                    });
                } catch (RejectedExecutionException full) {
                    stats.record(method, 0, true);
                    answer(Answer.newBuilder().setId(id).setRefused(busy(method)).build());
                    slowDone();
                }
            } else {
                answer(wrap.apply(serveBatch(method, items, each, onError)));
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

    private static Status refusal(String what) {
        return Status.newBuilder().setCode(StoreError.INVALID_PARAMS.code()).setMessage(what).build();
    }

    private static Status busy(String method) {
        return Status.newBuilder().setCode(StoreError.UNAVAILABLE_IN_CURRENT_STATUS.code()).setMessage(
                StoreError.UNAVAILABLE_IN_CURRENT_STATUS + ": " + method + " refused: the master's slow-work pool is "
                        + "full (every thread busy and the queue full); try again later").build();
    }

    /** Runs a slow call on {@code slowWork}, or answers it refused at once when the bounded pool takes no more. */
    private <T> void offload(String method, StreamObserver<T> out, Supplier<T> body, Function<Status, T> onError) {
        try {
            slowWork.execute(() -> one(method, out, body, onError));
        } catch (RejectedExecutionException full) {
            stats.record(method, 0, true);
            reply(out, onError.apply(busy(method)));
        }
    }

    @Override
    public void size(KeyRequest req, StreamObserver<SizeResponse> out) {
        one("Size", out, () -> SizeResponse.newBuilder().setSize(master.size(req.getKey())).build(),
                s -> SizeResponse.newBuilder().setStatus(s).build());
    }

    @Override
    public void remove(RemoveRequest req, StreamObserver<Status> out) {
        one("Remove", out, () -> {
            master.remove(req.getKey(), req.getForce());
            return Wire.OK;
        }, s -> s);
    }

    @Override
    public void batchRemove(BatchRemoveRequest req, StreamObserver<BatchStatus> out) {
        batch("BatchRemove", out, req.getKeysList(), k -> {
            master.remove(k, req.getForce());
            return Wire.OK;
        }, s -> s, items -> BatchStatus.newBuilder().addAllItems(items).build());
    }

    @Override
    public void removeByRegex(RemoveByRegexRequest req, StreamObserver<CountResponse> out) {
        offload("RemoveByRegex", out, () -> CountResponse.newBuilder()
                        .setCount(master.removeByRegex(req.getRegex(), req.getForce())).build(),
                s -> CountResponse.newBuilder().setStatus(s).build());
    }

    @Override
    public void removeAll(RemoveAllRequest req, StreamObserver<CountResponse> out) {
        offload("RemoveAll", out, () -> CountResponse.newBuilder().setCount(master.removeAll(req.getForce())).build(),
                s -> CountResponse.newBuilder().setStatus(s).build());
    }

    // ---------------------------------------------------------------- per item

    private PutStartResponse putStart(PutStartRequest req) {
        return putStartAnswer(master.apply(putStartCommand(req)));
    }

    private static Command.PutStart putStartCommand(PutStartRequest req) {
        if (req.getSize() > Long.MAX_VALUE / 2) {
            throw new StoreException(StoreError.INVALID_PARAMS, "size of key '" + req.getKey() + "' is out of range");
        }
        return new Command.PutStart(req.getClientId(), req.getKey(), req.getSize(), Wire.config(req.getConfig()),
                req.getWriterHost(), req.getUpsert(), ThreadLocalRandom.current().nextLong());
    }

    private static PutStartResponse putStartAnswer(Command.PutTicket t) {
        PutStartResponse.Builder b = PutStartResponse.newBuilder().setPutId(t.putId());
        t.replicas().forEach(r -> b.addReplicas(Wire.replica(r)));
        return b.build();
    }

    private Status putEnd(PutEndRequest req) {
        master.putEnd(req.getClientId(), req.getKey(), req.getPutId());
        return Wire.OK;
    }

    private Status putRevoke(PutEndRequest req) {
        master.putRevoke(req.getClientId(), req.getKey(), req.getPutId());
        return Wire.OK;
    }

    private CommitResponse commit(CommitRequest req) {
        if (req.getItemsCount() > MasterState.MAX_COMMIT_ITEMS) {
            throw new StoreException(StoreError.INVALID_PARAMS, "commit of " + req.getItemsCount()
                    + " items exceeds the limit of " + MasterState.MAX_COMMIT_ITEMS);
        }
        List<Command.CommitItem> items = new java.util.ArrayList<>(req.getItemsCount());
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
        Command.CommitResult r = master.commit(req.getClientId(), items, req.getRetireList(), refill);
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

    private ReplicaListResponse replicaList(String key) {
        return replicaList(master.getReplicas(key), null);
    }

    /** With a table: replicas as indexes into it (the batch answer carries it), else named in full. */
    private static ReplicaListResponse replicaList(Command.ReplicaList list, SegmentTable table) {
        ReplicaListResponse.Builder b = ReplicaListResponse.newBuilder().setSize(list.size())
                .setLeaseTtlMs(list.leaseTtl().toMillis());
        if (table != null) {
            table.add(b, list.replicas());
        } else {
            list.replicas().forEach(r -> b.addReplicas(Wire.replica(r)));
        }
        return b.build();
    }

    private ExistResponse exist(String key) {
        return ExistResponse.newBuilder().setExists(master.exists(key)).build();
    }

    // ---------------------------------------------------------------- plumbing

    private <T> void one(String method, StreamObserver<T> out, Supplier<T> body, Function<Status, T> onError) {
        reply(out, one(method, body, onError));
    }

    private <T> T one(String method, Supplier<T> body, Function<Status, T> onError) {
        long start = System.nanoTime();
        T result;
        boolean failed = false;
        try {
            result = body.get();
        } catch (StoreException e) {
            failed = true;
            result = onError.apply(Wire.status(e));
        } catch (RuntimeException e) {
            failed = true;
            result = onError.apply(Status.newBuilder().setCode(StoreError.INTERNAL_ERROR.code())
                    .setMessage(StoreError.INTERNAL_ERROR + ": " + e).build());
        }
        stats.record(method, System.nanoTime() - start, failed);
        return result;
    }

    private <I, T, R> void batch(String method, StreamObserver<R> out, List<I> items, Function<I, T> each,
                                 Function<Status, T> onError, Function<List<T>, R> wrap) {
        if (items.size() > MAX_BATCH) {
            stats.record(method, 0, true);
            out.onError(io.grpc.Status.INVALID_ARGUMENT.withDescription(StoreError.INVALID_PARAMS + ": batch of "
                    + items.size() + " items exceeds the limit of " + MAX_BATCH).asRuntimeException());
            return;
        }
        if (items.size() > INLINE_BATCH) {
            try {
                slowWork.execute(() -> reply(out, wrap.apply(serveBatch(method, items, each, onError))));
            } catch (RejectedExecutionException full) {
                stats.record(method, 0, true);
                out.onError(io.grpc.Status.RESOURCE_EXHAUSTED.withDescription(busy(method).getMessage()).asRuntimeException());
            }
        } else {
            reply(out, wrap.apply(serveBatch(method, items, each, onError)));
        }
    }

    /**
     * Serves a batch's items in order. One of at most {@link #INLINE_BATCH} items holds the master's ordering point
     * throughout, so its commands take consecutive log indexes and the lock is paid for once; a larger one (on
     * {@code slowWork}) takes it per item, so it does not hold every other call up for its whole length.
     */
    private <I, T> List<T> serveBatch(String method, List<I> items, Function<I, T> each, Function<Status, T> onError) {
        if (master.durable() && each instanceof LoggedBatch.Step<I, ?, T> step) {
            return LoggedBatch.serve(master, method, items, step, onError, stats);
        }
        return items.size() <= INLINE_BATCH
                ? master.inOrder(() -> serveItems(method, items, each, onError))
                : serveItems(method, items, each, onError);
    }

    private <I, T> List<T> serveItems(String method, List<I> items, Function<I, T> each, Function<Status, T> onError) {
        long start = System.nanoTime();
        java.util.ArrayList<T> results = new java.util.ArrayList<>(items.size());
        boolean failed = false;
        for (I item : items) {
            try {
                results.add(each.apply(item));
            } catch (StoreException e) {
                failed = true;
                results.add(onError.apply(Wire.status(e)));
            } catch (RuntimeException e) {
                failed = true;
                results.add(onError.apply(Status.newBuilder().setCode(StoreError.INTERNAL_ERROR.code())
                        .setMessage(StoreError.INTERNAL_ERROR + ": " + e).build()));
            }
        }
        stats.record(method, System.nanoTime() - start, failed);
        return results;
    }

    private static <T> void reply(StreamObserver<T> out, T value) {
        out.onNext(value);
        out.onCompleted();
    }

}
