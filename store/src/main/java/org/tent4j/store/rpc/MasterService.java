package org.tent4j.store.rpc;

import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Function;
import java.util.function.Supplier;

import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import org.tent4j.store.PrintableId;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.proto.Answer;
import org.tent4j.store.proto.BatchRemoveRequest;
import org.tent4j.store.proto.BatchStatus;
import org.tent4j.store.proto.Call;
import org.tent4j.store.proto.CountResponse;
import org.tent4j.store.proto.Empty;
import org.tent4j.store.proto.KeyRequest;
import org.tent4j.store.proto.LeaveRequest;
import org.tent4j.store.proto.MasterGrpc;
import org.tent4j.store.proto.MountChallengeResponse;
import org.tent4j.store.proto.MountRequest;
import org.tent4j.store.proto.DiskReplicasRequest;
import org.tent4j.store.proto.DiskReplicasResponse;
import org.tent4j.store.proto.DropDiskReplicasRequest;
import org.tent4j.store.proto.AdoptDiskReplicasRequest;
import org.tent4j.store.proto.AdoptDiskReplicasResponse;
import org.tent4j.store.proto.OffloadsRequest;
import org.tent4j.store.proto.OffloadsResponse;
import org.tent4j.store.proto.PingRequest;
import org.tent4j.store.proto.PingResponse;
import org.tent4j.store.proto.ReadyResponse;
import org.tent4j.store.proto.RegisterResponse;
import org.tent4j.store.proto.RemoveAllRequest;
import org.tent4j.store.proto.RemoveByRegexRequest;
import org.tent4j.store.proto.RemoveRequest;
import org.tent4j.store.proto.SizeResponse;
import org.tent4j.store.proto.Status;
import org.tent4j.store.proto.UnmountRequest;

/**
 * The master's RPCs over gRPC: each one turns into {@link Command}s applied to a {@link StoreMaster}. The calls of a
 * client's stream are served by {@link ServedStream}, their commands built by {@link ClientCommands}; this class
 * holds the unary RPCs and how a call is run, timed and answered.
 */
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

    final StoreMaster master;
    /** The requests of a client's stream, as commands on {@link #master}. */
    final ClientCommands commands;
    final RpcStats stats;
    final Executor slowWork;
    private final ClientCredentials credentials;
    private final MountProof proof;

    /**
     * {@code slowWork} runs sweeps over all objects (removal by regex or all, unmounts, mounts) and large batches;
     * {@code credentials} issues client ids at {@code Register}. Calls reach it through an {@link AuthInterceptor},
     * which says which client each call's credential proves.
     */
    public MasterService(StoreMaster master, RpcStats stats, Executor slowWork, ClientCredentials credentials) {
        this(master, stats, slowWork, credentials, new MountProof(null, credentials));
    }

    /** As above, mounts checked by {@code proof}. */
    MasterService(StoreMaster master, RpcStats stats, Executor slowWork, ClientCredentials credentials, MountProof proof) {
        this.master = master;
        this.commands = new ClientCommands(master);
        this.stats = stats;
        this.slowWork = slowWork;
        this.credentials = credentials;
        this.proof = proof;
    }

    @Override
    public void serviceReady(Empty request, StreamObserver<ReadyResponse> out) {
        reply(out, ReadyResponse.newBuilder().setVersion(VERSION).build());
    }

    /** Changes no state: the credential is checked by its MAC alone (ClientCredentials), so there is nothing to log. */
    @Override
    public void register(Empty request, StreamObserver<RegisterResponse> out) {
        one("Register", out, () -> {
            ClientCredentials.Issued issued = credentials.issue();
            return RegisterResponse.newBuilder().setClientId(issued.clientId())
                    .setCredential(com.google.protobuf.ByteString.copyFrom(issued.credential())).build();
        }, s -> RegisterResponse.newBuilder().setStatus(s).build());
    }

    private static String session() {
        return AuthInterceptor.CLIENT.get();
    }

    /** {@code PERMISSION_DENIED} unless this call proved the admin token (or the master is open). */
    private static void requireAdmin(String what) {
        if (!Boolean.TRUE.equals(AuthInterceptor.ADMIN.get())) {
            throw new StoreException(StoreError.PERMISSION_DENIED, what + " is an admin operation: the call must "
                    + "prove the master's admin token (--admin-token-file); nothing was removed");
        }
    }

    @Override
    public void ping(PingRequest req, StreamObserver<PingResponse> out) {
        String session = session();
        one("Ping", out, () -> {
            String id = ClientCommands.self(session, req.getClientId());
            if (req.getLeaseExpiredReads() > 0 && req.getLeaseExpiredReads() < Integer.MAX_VALUE) {
                stats.addClientLeaseExpiries(req.getLeaseExpiredReads());
            }
            if (req.getChecksumFailures() > 0 && req.getChecksumFailures() < Integer.MAX_VALUE) {
                stats.addClientChecksumFailures(req.getChecksumFailures());
            }
            return PingResponse.newBuilder().setNeedRemount(master.heartbeat(id) == Command.ClientStatus.NEED_REMOUNT).build();
        }, s -> PingResponse.newBuilder().setStatus(s).build());
    }

    @Override
    public void offloads(OffloadsRequest req, StreamObserver<OffloadsResponse> out) {
        String session = session();
        one("Offloads", out, () -> {
            ClientCommands.self(session, req.getClientId());
            return DiskTierCalls.offloads(master, req);
        }, s -> OffloadsResponse.newBuilder().setStatus(s).build());
    }

    @Override
    public void diskReplicas(DiskReplicasRequest req, StreamObserver<DiskReplicasResponse> out) {
        // a walk over every object: off the event loop
        String session = session();
        offload("DiskReplicas", out, () -> {
            ClientCommands.self(session, req.getClientId());
            return DiskTierCalls.diskReplicas(master, req);
        },
                s -> DiskReplicasResponse.newBuilder().setStatus(s).build());
    }

    @Override
    public void adoptDiskReplicas(AdoptDiskReplicasRequest req, StreamObserver<AdoptDiskReplicasResponse> out) {
        String session = session();
        offload("AdoptDiskReplicas", out, () -> {
            ClientCommands.self(session, req.getClientId());
            return DiskTierCalls.adoptDiskReplicas(master, req);
        },
                s -> AdoptDiskReplicasResponse.newBuilder().setStatus(s).build());
    }

    @Override
    public void dropDiskReplicas(DropDiskReplicasRequest req, StreamObserver<CountResponse> out) {
        String session = session();
        offload("DropDiskReplicas", out, () -> {
            ClientCommands.self(session, req.getClientId());
            return DiskTierCalls.dropDiskReplicas(master, req);
        },
                s -> CountResponse.newBuilder().setStatus(s).build());
    }

    @Override
    public void mountChallenge(MountRequest req, StreamObserver<MountChallengeResponse> out) {
        String session = session();
        one("MountChallenge", out, () -> MountChallengeResponse.newBuilder().setNonce(com.google.protobuf.ByteString.copyFrom(
                        proof.challenge(ClientCommands.self(session, req.getClientId()), Wire.segment(req.getSegment())))).build(),
                s -> MountChallengeResponse.newBuilder().setStatus(s).build());
    }

    /** With a mount proof, the segment's first bytes are read back before the mount is applied (on slowWork). */
    @Override
    public void mountSegment(MountRequest req, StreamObserver<Status> out) {
        String session = session();
        offload("MountSegment", out, () -> {
            String id = ClientCommands.self(session, req.getClientId());
            SegmentSpec spec = Wire.segment(req.getSegment());
            if (req.getIncarnation() == 0) {
                throw new StoreException(StoreError.INVALID_PARAMS, "mount of segment '" + PrintableId.forLog(spec.id())
                        + "' by client " + id + " carries no incarnation (0): a client sends its own, random and never 0");
            }
            proof.check(id, spec);
            master.apply(ClientCommands.once(id, req.getRequestSeq(), new Command.Mount(id, spec, req.getIncarnation())));
            return Wire.OK;
        }, s -> s);
    }

    @Override
    public void unmountSegment(UnmountRequest req, StreamObserver<Status> out) {
        String session = session();
        offload("UnmountSegment", out, () -> {
            String id = ClientCommands.self(session, req.getClientId());
            master.apply(ClientCommands.once(id, req.getRequestSeq(), new Command.Unmount(id, req.getSegmentId())));
            return Wire.OK;
        }, s -> s);
    }

    @Override
    public void leave(LeaveRequest req, StreamObserver<Status> out) {
        String session = session();
        // a segment still mounted is dropped with a sweep over all objects
        offload("Leave", out, () -> {
            String id = ClientCommands.self(session, req.getClientId());
            master.apply(ClientCommands.once(id, req.getRequestSeq(), new Command.Leave(id)));
            return Wire.OK;
        }, s -> s);
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
        return new ServedStream(this, (ServerCallStreamObserver<Answer>) answers, session());
    }

    static Status refusal(String what) {
        return Status.newBuilder().setCode(StoreError.INVALID_PARAMS.code()).setMessage(what).build();
    }

    static Status busy(String method) {
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
        String session = session();
        one("Remove", out, () -> {
            master.apply(ClientCommands.once(session, req.getRequestSeq(), new Command.Remove(req.getKey(), req.getForce())));
            return Wire.OK;
        }, s -> s);
    }

    @Override
    public void batchRemove(BatchRemoveRequest req, StreamObserver<BatchStatus> out) {
        if (req.getForce() && !admin("BatchRemove with force", out)) {
            return;
        }
        // items by index: the i-th key's request id is the first one plus i
        String session = session();
        long first = req.getFirstRequestSeq();
        List<String> keys = req.getKeysList();
        batch("BatchRemove", out, java.util.stream.IntStream.range(0, keys.size()).boxed().toList(),
                new LoggedBatch.Step<>(master, i -> ClientCommands.once(session, first == 0 ? 0 : first + i,
                        new Command.Remove(keys.get(i), req.getForce())), (i, v) -> Wire.OK),
                s -> s, items -> BatchStatus.newBuilder().addAllItems(items).build());
    }

    @Override
    public void removeByRegex(RemoveByRegexRequest req, StreamObserver<CountResponse> out) {
        if (req.getForce() && !admin("RemoveByRegex with force", out)) {
            return;
        }
        String session = session();
        offload("RemoveByRegex", out, () -> CountResponse.newBuilder().setCount(master.apply(ClientCommands.once(session,
                        req.getRequestSeq(), master.removalByRegex(req.getRegex(), req.getForce())))).build(),
                s -> CountResponse.newBuilder().setStatus(s).build());
    }

    @Override
    public void removeAll(RemoveAllRequest req, StreamObserver<CountResponse> out) {
        if (!admin("RemoveAll", out)) {
            return;
        }
        String session = session();
        offload("RemoveAll", out, () -> CountResponse.newBuilder().setCount(master.apply(ClientCommands.once(session,
                        req.getRequestSeq(), new Command.RemoveAll(req.getForce())))).build(),
                s -> CountResponse.newBuilder().setStatus(s).build());
    }

    /**
     * Whether this call may run an admin operation; if not it is refused as a whole ({@code PERMISSION_DENIED},
     * counted as a failed call) before anything is matched or removed.
     */
    private boolean admin(String what, StreamObserver<?> out) {
        try {
            requireAdmin(what);
            return true;
        } catch (StoreException e) {
            stats.record(what.split(" ")[0], 0, true);
            out.onError(io.grpc.Status.PERMISSION_DENIED.withDescription(e.getMessage()).asRuntimeException());
            return false;
        }
    }

    // ---------------------------------------------------------------- plumbing

    private <T> void one(String method, StreamObserver<T> out, Supplier<T> body, Function<Status, T> onError) {
        reply(out, one(method, body, onError));
    }

    <T> T one(String method, Supplier<T> body, Function<Status, T> onError) {
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
            result = onError.apply(Wire.internalError(e));
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
     * Serves a batch's items in order. Items that are commands go as one {@link StoreMaster#applyAll} per
     * {@link LoggedBatch#ENTRY_ITEMS} items: one log entry on a durable master, and in memory one hold of the ordering
     * point, so they take consecutive indexes and their keys are looked up together. Other items: a batch of at most
     * {@link #INLINE_BATCH} holds the ordering point throughout; a larger one (on {@code slowWork}) takes it per item,
     * so it does not hold every other call up for its whole length.
     */
    <I, T> List<T> serveBatch(String method, List<I> items, Function<I, T> each, Function<Status, T> onError) {
        if (each instanceof LoggedBatch.Step<I, ?, T> step) {
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
                results.add(onError.apply(Wire.internalError(e)));
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
