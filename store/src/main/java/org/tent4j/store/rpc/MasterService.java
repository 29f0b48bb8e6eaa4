package org.tent4j.store.rpc;

import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;
import java.util.function.Supplier;

import io.grpc.stub.StreamObserver;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.proto.BatchExistResponse;
import org.tent4j.store.proto.BatchPutEndRequest;
import org.tent4j.store.proto.BatchPutStartRequest;
import org.tent4j.store.proto.BatchPutStartResponse;
import org.tent4j.store.proto.BatchRemoveRequest;
import org.tent4j.store.proto.BatchReplicaListResponse;
import org.tent4j.store.proto.BatchStatus;
import org.tent4j.store.proto.CountResponse;
import org.tent4j.store.proto.Empty;
import org.tent4j.store.proto.ExistResponse;
import org.tent4j.store.proto.KeyRequest;
import org.tent4j.store.proto.KeysRequest;
import org.tent4j.store.proto.MasterGrpc;
import org.tent4j.store.proto.MountRequest;
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

    private final StoreMaster master;
    private final RpcStats stats;
    private final Executor slowWork;

    /** {@code slowWork} runs sweeps over all objects (removal by regex or all, unmounts, mounts) and large batches. */
    public MasterService(StoreMaster master, RpcStats stats, Executor slowWork) {
        this.master = master;
        this.stats = stats;
        this.slowWork = slowWork;
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
        one("Ping", out, () -> PingResponse.newBuilder().setNeedRemount(
                        master.heartbeat(req.getClientId()) == Command.ClientStatus.NEED_REMOUNT).build(),
                s -> PingResponse.newBuilder().setStatus(s).build());
    }

    @Override
    public void mountSegment(MountRequest req, StreamObserver<Status> out) {
        slowWork.execute(() -> one("MountSegment", out, () -> {
            master.mount(req.getClientId(), Wire.segment(req.getSegment()));
            return Wire.OK;
        }, s -> s));
    }

    @Override
    public void unmountSegment(UnmountRequest req, StreamObserver<Status> out) {
        slowWork.execute(() -> one("UnmountSegment", out, () -> {
            master.unmount(req.getClientId(), req.getSegmentId());
            return Wire.OK;
        }, s -> s));
    }

    @Override
    public void putStart(PutStartRequest req, StreamObserver<PutStartResponse> out) {
        one("PutStart", out, () -> putStart(req), s -> PutStartResponse.newBuilder().setStatus(s).build());
    }

    @Override
    public void putEnd(PutEndRequest req, StreamObserver<Status> out) {
        one("PutEnd", out, () -> putEnd(req), s -> s);
    }

    @Override
    public void putRevoke(PutEndRequest req, StreamObserver<Status> out) {
        one("PutRevoke", out, () -> putRevoke(req), s -> s);
    }

    @Override
    public void batchPutStart(BatchPutStartRequest req, StreamObserver<BatchPutStartResponse> out) {
        batch("BatchPutStart", out, req.getItemsList(), this::putStart, s -> PutStartResponse.newBuilder().setStatus(s).build(),
                items -> BatchPutStartResponse.newBuilder().addAllItems(items).build());
    }

    @Override
    public void batchPutEnd(BatchPutEndRequest req, StreamObserver<BatchStatus> out) {
        batch("BatchPutEnd", out, req.getItemsList(), this::putEnd, s -> s, items -> BatchStatus.newBuilder().addAllItems(items).build());
    }

    @Override
    public void batchPutRevoke(BatchPutEndRequest req, StreamObserver<BatchStatus> out) {
        batch("BatchPutRevoke", out, req.getItemsList(), this::putRevoke, s -> s, items -> BatchStatus.newBuilder().addAllItems(items).build());
    }

    @Override
    public void getReplicaList(KeyRequest req, StreamObserver<ReplicaListResponse> out) {
        one("GetReplicaList", out, () -> replicaList(req.getKey()), s -> ReplicaListResponse.newBuilder().setStatus(s).build());
    }

    @Override
    public void batchGetReplicaList(KeysRequest req, StreamObserver<BatchReplicaListResponse> out) {
        batch("BatchGetReplicaList", out, req.getKeysList(), this::replicaList, s -> ReplicaListResponse.newBuilder().setStatus(s).build(),
                items -> BatchReplicaListResponse.newBuilder().addAllItems(items).build());
    }

    @Override
    public void exist(KeyRequest req, StreamObserver<ExistResponse> out) {
        one("Exist", out, () -> exist(req.getKey()), s -> ExistResponse.newBuilder().setStatus(s).build());
    }

    @Override
    public void batchExist(KeysRequest req, StreamObserver<BatchExistResponse> out) {
        batch("BatchExist", out, req.getKeysList(), this::exist, s -> ExistResponse.newBuilder().setStatus(s).build(),
                items -> BatchExistResponse.newBuilder().addAllItems(items).build());
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
        slowWork.execute(() -> one("RemoveByRegex", out, () -> CountResponse.newBuilder()
                        .setCount(master.removeByRegex(req.getRegex(), req.getForce())).build(),
                s -> CountResponse.newBuilder().setStatus(s).build()));
    }

    @Override
    public void removeAll(RemoveAllRequest req, StreamObserver<CountResponse> out) {
        slowWork.execute(() -> one("RemoveAll", out, () -> CountResponse.newBuilder().setCount(master.removeAll(req.getForce())).build(),
                s -> CountResponse.newBuilder().setStatus(s).build()));
    }

    // ---------------------------------------------------------------- per item

    private PutStartResponse putStart(PutStartRequest req) {
        if (req.getSize() > Long.MAX_VALUE / 2) {
            throw new StoreException(StoreError.INVALID_PARAMS, "size of key '" + req.getKey() + "' is out of range");
        }
        Command.PutTicket t = master.apply(new Command.PutStart(req.getClientId(), req.getKey(), req.getSize(),
                Wire.config(req.getConfig()), req.getWriterHost(), req.getUpsert(), ThreadLocalRandom.current().nextLong()));
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

    private ReplicaListResponse replicaList(String key) {
        Command.ReplicaList list = master.getReplicas(key);
        ReplicaListResponse.Builder b = ReplicaListResponse.newBuilder().setSize(list.size())
                .setLeaseTtlMs(list.leaseTtl().toMillis());
        list.replicas().forEach(r -> b.addReplicas(Wire.replica(r)));
        return b.build();
    }

    private ExistResponse exist(String key) {
        return ExistResponse.newBuilder().setExists(master.exists(key)).build();
    }

    // ---------------------------------------------------------------- plumbing

    private <T> void one(String method, StreamObserver<T> out, Supplier<T> body, Function<Status, T> onError) {
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
        reply(out, result);
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
            slowWork.execute(() -> serveBatch(method, out, items, each, onError, wrap));
        } else {
            serveBatch(method, out, items, each, onError, wrap);
        }
    }

    private <I, T, R> void serveBatch(String method, StreamObserver<R> out, List<I> items, Function<I, T> each,
                                      Function<Status, T> onError, Function<List<T>, R> wrap) {
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
        reply(out, wrap.apply(results));
    }

    private static <T> void reply(StreamObserver<T> out, T value) {
        out.onNext(value);
        out.onCompleted();
    }

}
