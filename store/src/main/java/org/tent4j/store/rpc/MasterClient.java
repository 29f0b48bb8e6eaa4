package org.tent4j.store.rpc;

import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ConnectivityState;
import io.grpc.ForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.netty.handler.ssl.SslContext;
import org.tent4j.store.PrintableId;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.StoreSecurity;
import org.tent4j.store.proto.Answer;
import org.tent4j.store.proto.BatchPutEndRequest;
import org.tent4j.store.proto.BatchPutStartRequest;
import org.tent4j.store.proto.BatchRemoveRequest;
import org.tent4j.store.proto.Call;
import org.tent4j.store.proto.CommitRequest;
import org.tent4j.store.proto.CommitResponse;
import org.tent4j.store.proto.Empty;
import org.tent4j.store.proto.ExistResponse;
import org.tent4j.store.proto.KeyRequest;
import org.tent4j.store.proto.KeysRequest;
import org.tent4j.store.proto.LeaveRequest;
import org.tent4j.store.proto.MasterGrpc;
import org.tent4j.store.proto.MountChallengeResponse;
import org.tent4j.store.proto.MountRequest;
import org.tent4j.store.proto.CountResponse;
import org.tent4j.store.proto.DiskReplica;
import org.tent4j.store.proto.DiskReplicasRequest;
import org.tent4j.store.proto.DiskReplicasResponse;
import org.tent4j.store.proto.DropDiskReplicasRequest;
import org.tent4j.store.proto.OffloadResult;
import org.tent4j.store.proto.OffloadTask;
import org.tent4j.store.proto.OffloadsRequest;
import org.tent4j.store.proto.OffloadsResponse;
import org.tent4j.store.proto.PingRequest;
import org.tent4j.store.proto.PingResponse;
import org.tent4j.store.proto.PutEndRequest;
import org.tent4j.store.proto.PutStartRequest;
import org.tent4j.store.proto.PutStartResponse;
import org.tent4j.store.proto.RegisterResponse;
import org.tent4j.store.proto.RemoveAllRequest;
import org.tent4j.store.proto.RemoveByRegexRequest;
import org.tent4j.store.proto.RemoveRequest;
import org.tent4j.store.proto.ReplicaListResponse;
import org.tent4j.store.proto.Status;
import org.tent4j.store.proto.UnmountRequest;
import org.tent4j.store.rpc.MasterServer;

/**
 * The master's RPCs from a client: the hot ones (puts, replica lists, exists) over one long-lived Calls stream, the
 * rest unary. Each call has a timeout, and transport failures become {@link StoreException}s naming the master
 * ({@link StoreError#RPC_FAIL} when unreachable or the stream broke, {@link StoreError#RPC_TIMEOUT} past the timeout).
 * Batch calls return per-item messages whose status the caller checks. Internal: it speaks the generated protobuf
 * types, which the public client API ({@code org.tent4j.store.client}) never shows.
 */
public final class MasterClient implements AutoCloseable {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(MasterClient.class);
    /** The masters named at construction, in order, and how calls follow the leader among them. */
    private final LeaderFollowing following;
    /** The master calls go to now. */
    private volatile String address;
    private volatile ManagedChannel channel;
    private volatile MasterGrpc.MasterBlockingStub stub;
    private final Duration timeout;
    /** Most calls of this client waiting on the stream at once: bounds what the client buffers for the master. */
    static final int MAX_IN_FLIGHT = 1024;
    private final Semaphore inFlight = new Semaphore(MAX_IN_FLIGHT);
    private final AtomicLong ids = new AtomicLong();
    /** Request ids of this client's mutations (with its client id): a resent one is answered, not applied again. */
    private final AtomicLong requests = new AtomicLong();
    private volatile CallStream stream;
    private final SslContext tls;
    private final String tokenProof;
    private final String adminProof;
    /** {@code <client id>:<credential hex>} once registered, sent with every call (null before). */
    private volatile String session;
    private volatile String clientId;

    /** A client of a master that asks for no token. */
    public MasterClient(String address, Duration timeout) {
        this(address, timeout, StoreSecurity.NONE);
    }

    /**
     * A client proving {@code security}'s tokens on every call (and speaking its TLS). {@code addresses} is one
     * master's {@code host:port}, or the masters of a group separated by commas: calls go to the leader, found and
     * followed as {@link #follow} says.
     */
    public MasterClient(String addresses, Duration timeout, StoreSecurity security) {
        this.following = new LeaderFollowing(LeaderFollowing.parse(addresses), timeout, () -> address, this::moveTo);
        this.address = following.masters().getFirst();
        this.timeout = timeout;
        this.tls = security.tls() ? StoreTls.client(security) : null;
        this.tokenProof = StoreAuth.tokenProof(security.token());
        this.adminProof = StoreAuth.adminProof(security.adminToken());
        this.channel = channel(address);
        this.stub = MasterGrpc.newBlockingStub(channel);
    }

    private ManagedChannel channel(String address) {
        // no retries: the client decides what to retry (a failed RPC is an error naming the master), and the retry
        // machinery costs every call a buffering wrapper
        NettyChannelBuilder b = NettyChannelBuilder.forTarget(address).disableRetry()
                // answers on the Calls stream only complete a future, so they run on the event loop: no hand-off
                .directExecutor()
                .intercept(new Proofs())
                .maxInboundMessageSize(MasterServer.MAX_MESSAGE_BYTES);
        if (tls != null) {
            b.sslContext(tls);
        } else {
            b.usePlaintext();
        }
        return b.build();
    }

    /** Puts the token proofs and this client's credential on every call (a stream's once, when it opens). */
    private final class Proofs implements ClientInterceptor {
        @Override
        public <Q, A> ClientCall<Q, A> interceptCall(MethodDescriptor<Q, A> method, CallOptions options, Channel next) {
            return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
                @Override
                public void start(Listener<A> listener, Metadata headers) {
                    if (tokenProof != null) {
                        headers.put(StoreAuth.TOKEN, tokenProof);
                    }
                    if (adminProof != null) {
                        headers.put(StoreAuth.ADMIN, adminProof);
                    }
                    String s = session;
                    if (s != null) {
                        headers.put(StoreAuth.CLIENT, s);
                    }
                    super.start(listener, headers);
                }
            };
        }
    }

    /** See {@link LeaderFollowing#follow}. */
    private <T> T follow(String what, boolean repeatable, Supplier<T> attempt) {
        return following.follow(what, repeatable, attempt);
    }

    /**
     * Sends later calls to {@code next} (a fresh channel and stream), unless another thread already moved away from
     * {@code from}. The credential goes along: a durable group shares its key ({@link ClientCredentials}).
     */
    private void moveTo(String from, String next) {
        ManagedChannel old;
        CallStream oldStream;
        synchronized (this) {
            if (!address.equals(from) || next.equals(from)) {
                return;
            }
            LOG.info("store master {} is not serving this client; following to {}", from, next);
            address = next;
            old = channel;
            oldStream = stream;
            channel = channel(next);
            stub = MasterGrpc.newBlockingStub(channel);
            stream = null;
        }
        if (oldStream != null) {
            oldStream.fail(io.grpc.Status.UNAVAILABLE.withDescription("the client followed the leader to " + next)
                    .asRuntimeException());
        }
        old.shutdownNow();
    }

    /**
     * Asks the master for a client id and its credential, which every later call carries; the id. Calls already on
     * the Calls stream finish there, later ones go on a new stream that carries the new credential.
     */
    public String register() {
        RegisterResponse r = follow("Register", true, () -> {
            RegisterResponse a = call("Register", () -> stub().register(Empty.getDefaultInstance()));
            Wire.check(a.getStatus());
            return a;
        });
        PrintableId.require("client id issued by master " + address, r.getClientId());
        session = r.getClientId() + ":" + HexFormat.of().formatHex(r.getCredential().toByteArray());
        clientId = r.getClientId();
        CallStream old;
        synchronized (this) {
            old = stream;
            stream = null;
        }
        if (old != null && old.broken == null) {
            synchronized (old) {
                old.requests.onCompleted();
            }
        }
        return clientId;
    }

    /** The id {@link #register} got; null before. */
    public String clientId() {
        return clientId;
    }

    public String address() {
        return address;
    }

    private MasterGrpc.MasterBlockingStub stub() {
        return stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    private <T> T call(String what, Supplier<T> rpc) {
        try {
            return rpc.get();
        } catch (StatusRuntimeException e) {
            throw translate(what, e);
        }
    }

    private StoreException translate(String what, StatusRuntimeException e) {
        io.grpc.Status.Code code = e.getStatus().getCode();
        String detail = e.getStatus().getDescription() == null ? code.toString() : e.getStatus().getDescription();
        if (code == io.grpc.Status.Code.FAILED_PRECONDITION && detail.startsWith(LeaderGate.NOT_LEADER)) {
            Metadata trailers = e.getTrailers();
            return new org.tent4j.store.NotLeaderException(what + " refused by master " + address + ": "
                    + detail.substring(LeaderGate.NOT_LEADER.length() + 2),
                    trailers == null ? null : trailers.get(LeaderGate.LEADER));
        }
        if (code == io.grpc.Status.Code.DEADLINE_EXCEEDED) {
            return new StoreException(StoreError.RPC_TIMEOUT, what + " to master " + address + " got no answer within " + timeout.toMillis() + " ms", e);
        }
        if (code == io.grpc.Status.Code.UNAUTHENTICATED) {
            return new StoreException(StoreError.UNAUTHENTICATED, what + " refused by master " + address + ": " + detail
                    + (tokenProof == null ? " (this client has no token)" : ""), e);
        }
        if (code == io.grpc.Status.Code.PERMISSION_DENIED) {
            return new StoreException(StoreError.PERMISSION_DENIED, what + " refused by master " + address + ": " + detail, e);
        }
        if (code == io.grpc.Status.Code.INVALID_ARGUMENT) {
            return new StoreException(StoreError.INVALID_PARAMS, what + " refused by master " + address + ": " + detail, e);
        }
        return new StoreException(StoreError.RPC_FAIL, what + " to master " + address + " failed (" + code
                + (code == io.grpc.Status.Code.UNAVAILABLE ? ", master unreachable" : "") + "): " + detail, e);
    }

    public String serviceReady() {
        return follow("ServiceReady", true, () -> call("ServiceReady", () -> stub().serviceReady(Empty.getDefaultInstance()).getVersion()));
    }

    /** Whether the master wants this client to mount its segments again. */
    public boolean ping(String clientId, long leaseExpiredReads, long checksumFailures) {
        return follow("Ping", true, () -> {
            PingResponse r = call("Ping", () -> stub().ping(PingRequest.newBuilder().setClientId(clientId)
                    .setLeaseExpiredReads(leaseExpiredReads).setChecksumFailures(checksumFailures).build()));
            Wire.check(r.getStatus());
            return r.getNeedRemount();
        });
    }

    /** The bytes to write at {@code segment}'s base before {@link #mount}; empty when the master checks no mounts. */
    public byte[] mountChallenge(String clientId, SegmentSpec segment) {
        return follow("MountChallenge", true, () -> {
            MountChallengeResponse r = call("MountChallenge", () -> stub().mountChallenge(MountRequest.newBuilder()
                    .setClientId(clientId).setSegment(Wire.segment(segment)).build()));
            Wire.check(r.getStatus());
            return r.getNonce().toByteArray();
        });
    }

    /** A page of the disk replicas on the client's disk segment (its scrub). */
    public List<DiskReplica> diskReplicas(String clientId, String segmentId, long from, int limit) {
        return follow("DiskReplicas", true, () -> {
            DiskReplicasResponse r = call("DiskReplicas", () -> stub().diskReplicas(DiskReplicasRequest.newBuilder()
                    .setClientId(clientId).setSegmentId(segmentId).setFrom(from).setLimit(limit).build()));
            Wire.check(r.getStatus());
            return r.getReplicasList();
        });
    }

    /** Drops disk replicas the scrub found corrupt; how many were still there. */
    public long dropDiskReplicas(String clientId, String segmentId, List<DiskReplica> bad) {
        return follow("DropDiskReplicas", false, () -> {
            CountResponse r = call("DropDiskReplicas", () -> stub().dropDiskReplicas(DropDiskReplicasRequest.newBuilder()
                    .setClientId(clientId).setSegmentId(segmentId).addAllReplicas(bad).build()));
            Wire.check(r.getStatus());
            return r.getCount();
        });
    }

    /** Reports finished offloads and takes up to {@code max} waiting ones. */
    public List<OffloadTask> offloads(String clientId, List<OffloadResult> results, int max) {
        // not resent after a broken call: tasks it took would be lost (they expire at the master and are handed again)
        return follow("Offloads", false, () -> {
            OffloadsResponse r = call("Offloads", () -> stub().offloads(OffloadsRequest.newBuilder().setClientId(clientId)
                    .addAllResults(results).setMax(max).build()));
            Wire.check(r.getStatus());
            return r.getTasksList();
        });
    }

    public void mount(String clientId, SegmentSpec segment) {
        MountRequest req = MountRequest.newBuilder().setClientId(clientId).setSegment(Wire.segment(segment))
                .setRequestSeq(requests.incrementAndGet()).build();
        once("MountSegment", () -> call("MountSegment", () -> stub().mountSegment(req)));
    }

    public void unmount(String clientId, String segmentId) {
        UnmountRequest req = UnmountRequest.newBuilder().setClientId(clientId).setSegmentId(segmentId)
                .setRequestSeq(requests.incrementAndGet()).build();
        once("UnmountSegment", () -> call("UnmountSegment", () -> stub().unmountSegment(req)));
    }

    /** Tells the master this client is closing cleanly (it is then never counted as expired). */
    public void leave(String clientId) {
        checked("Leave", () -> call("Leave", () -> stub().leave(LeaveRequest.newBuilder().setClientId(clientId).build())));
    }

    /** A mutation answered by a status: followed on {@code NOT_LEADER}, never sent again once it may have applied. */
    private void checked(String what, Supplier<Status> rpc) {
        follow(what, false, () -> {
            Wire.check(rpc.get());
            return null;
        });
    }

    /** A mutation carrying a request id: sent again to the next master as well, as it is applied at most once. */
    private void once(String what, Supplier<Status> rpc) {
        follow(what, true, () -> {
            Wire.check(rpc.get());
            return null;
        });
    }

    /** {@code req} with a new request id unless it carries one (a caller resending it keeps its id). */
    private PutStartRequest withId(PutStartRequest req) {
        return req.getRequestSeq() != 0 ? req : req.toBuilder().setRequestSeq(requests.incrementAndGet()).build();
    }

    /**
     * Throws the {@code NOT_LEADER} a batch's items carry when its entry was refused by a master that lost its term
     * (every item then carries it, and nothing was applied), so {@link #follow} sends the batch to the leader.
     */
    private static <T> T leaderOrThrow(T answer, List<Status> items) {
        if (!items.isEmpty() && items.stream().allMatch(i -> i.getCode() == StoreError.NOT_LEADER.code())) {
            Wire.check(items.getFirst());
        }
        return answer;
    }

    public static PutStartRequest putStartRequest(String clientId, String key, long size, ReplicateConfig cfg, String host, boolean upsert) {
        return PutStartRequest.newBuilder().setClientId(clientId).setKey(key).setSize(size).setConfig(Wire.config(cfg))
                .setWriterHost(host).setUpsert(upsert).build();
    }

    public PutStartResponse putStart(PutStartRequest request) {
        PutStartRequest req = withId(request);
        return follow("PutStart", true, () -> {
            PutStartResponse r = exchange("PutStart", Call.newBuilder().setPutStart(req)).getPutStart();
            Wire.check(r.getStatus());
            return r;
        });
    }

    public List<PutStartResponse> batchPutStart(List<PutStartRequest> reqs) {
        return follow("BatchPutStart", false, () -> {
            List<PutStartResponse> r = exchange("BatchPutStart", Call.newBuilder().setBatchPutStart(
                    BatchPutStartRequest.newBuilder().addAllItems(reqs))).getBatchPutStart().getItemsList();
            return leaderOrThrow(r, r.stream().map(PutStartResponse::getStatus).toList());
        });
    }

    public void putEnd(String clientId, String key, long putId) {
        PutEndRequest req = endRequest(clientId, key, putId).toBuilder().setRequestSeq(requests.incrementAndGet()).build();
        once("PutEnd", () -> exchange("PutEnd", Call.newBuilder().setPutEnd(req)).getStatus());
    }

    public void putRevoke(String clientId, String key, long putId) {
        PutEndRequest req = endRequest(clientId, key, putId).toBuilder().setRequestSeq(requests.incrementAndGet()).build();
        once("PutRevoke", () -> exchange("PutRevoke", Call.newBuilder().setPutRevoke(req)).getStatus());
    }

    public List<Status> batchPutEnd(List<PutEndRequest> reqs) {
        return follow("BatchPutEnd", false, () -> {
            List<Status> r = exchange("BatchPutEnd", Call.newBuilder().setBatchPutEnd(BatchPutEndRequest.newBuilder()
                    .addAllItems(reqs))).getBatchStatus().getItemsList();
            return leaderOrThrow(r, r);
        });
    }

    public List<Status> batchPutRevoke(List<PutEndRequest> reqs) {
        return follow("BatchPutRevoke", false, () -> {
            List<Status> r = exchange("BatchPutRevoke", Call.newBuilder().setBatchPutRevoke(BatchPutEndRequest.newBuilder()
                    .addAllItems(reqs))).getBatchStatus().getItemsList();
            return leaderOrThrow(r, r);
        });
    }

    /** Commits puts into reservations, retires and refills reservations: one round trip. */
    public CommitResponse commit(CommitRequest request) {
        CommitRequest req = request.toBuilder().setRequestSeq(requests.incrementAndGet()).build();
        return follow("Commit", true, () -> {
            CommitResponse r = exchange("Commit", Call.newBuilder().setCommit(req)).getCommit();
            return leaderOrThrow(r, r.getItemsList());
        });
    }

    public static PutEndRequest endRequest(String clientId, String key, long putId) {
        return PutEndRequest.newBuilder().setClientId(clientId).setKey(key).setPutId(putId).build();
    }

    public ReplicaListResponse getReplicaList(String key) {
        return follow("GetReplicaList", true, () -> {
            ReplicaListResponse r = exchange("GetReplicaList", Call.newBuilder().setGetReplicaList(
                    KeyRequest.newBuilder().setKey(key))).getReplicaList();
            Wire.check(r.getStatus());
            return r;
        });
    }

    /** Replica lists of {@code keys}, in order, each segment named once in the answer (checked: {@link SegmentTable#decode}). */
    public SegmentTable.Decoded batchGetReplicaList(List<String> keys) {
        return follow("BatchGetReplicaList", true, () -> {
            var answer = exchange("BatchGetReplicaList", Call.newBuilder().setBatchGetReplicaList(
                    KeysRequest.newBuilder().addAllKeys(keys).setSegmentTable(true))).getBatchReplicaList();
            leaderOrThrow(null, answer.getItemsList().stream().map(ReplicaListResponse::getStatus).toList());
            return SegmentTable.decode(answer, keys, address);
        });
    }

    public boolean exists(String key) {
        return follow("Exist", true, () -> {
            ExistResponse r = exchange("Exist", Call.newBuilder().setExist(KeyRequest.newBuilder().setKey(key))).getExist();
            Wire.check(r.getStatus());
            return r.getExists();
        });
    }

    public List<ExistResponse> batchExists(List<String> keys) {
        return follow("BatchExist", true, () -> exchange("BatchExist", Call.newBuilder().setBatchExist(
                KeysRequest.newBuilder().addAllKeys(keys))).getBatchExist().getItemsList());
    }

    public long size(String key) {
        return follow("Size", true, () -> {
            var r = call("Size", () -> stub().size(KeyRequest.newBuilder().setKey(key).build()));
            Wire.check(r.getStatus());
            return r.getSize();
        });
    }

    public void remove(String key, boolean force) {
        RemoveRequest req = RemoveRequest.newBuilder().setKey(key).setForce(force).setRequestSeq(requests.incrementAndGet()).build();
        // the master keys a remove's request id by the credential's client: without one it is not deduplicated
        if (session != null) {
            once("Remove", () -> call("Remove", () -> stub().remove(req)));
        } else {
            checked("Remove", () -> call("Remove", () -> stub().remove(req)));
        }
    }

    public List<Status> batchRemove(List<String> keys, boolean force) {
        return follow("BatchRemove", false, () -> {
            List<Status> r = call("BatchRemove", () -> stub().batchRemove(BatchRemoveRequest.newBuilder()
                    .addAllKeys(keys).setForce(force).build())).getItemsList();
            return leaderOrThrow(r, r);
        });
    }

    public long removeByRegex(String regex, boolean force) {
        return follow("RemoveByRegex", false, () -> {
            var r = call("RemoveByRegex", () -> stub().removeByRegex(RemoveByRegexRequest.newBuilder().setRegex(regex)
                    .setForce(force).build()));
            Wire.check(r.getStatus());
            return r.getCount();
        });
    }

    public long removeAll(boolean force) {
        return follow("RemoveAll", false, () -> {
            var r = call("RemoveAll", () -> stub().removeAll(RemoveAllRequest.newBuilder().setForce(force).build()));
            Wire.check(r.getStatus());
            return r.getCount();
        });
    }

    /** The answer to {@code call} over the Calls stream, which is opened now if none is open or the last one broke. */
    private Answer exchange(String what, Call.Builder call) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long id = ids.incrementAndGet();
        Call c = call.setId(id).build();
        if (c.getSerializedSize() > MasterServer.MAX_MESSAGE_BYTES) {
            // the master would refuse it by breaking the stream, failing every other call on it too
            throw new StoreException(StoreError.INVALID_PARAMS, what + " of " + c.getSerializedSize()
                    + " bytes exceeds the message limit of master " + address + " (" + MasterServer.MAX_MESSAGE_BYTES + " bytes)");
        }
        try {
            if (!inFlight.tryAcquire(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                throw new StoreException(StoreError.RPC_TIMEOUT, what + " to master " + address + " waited " + timeout.toMillis()
                        + " ms behind " + MAX_IN_FLIGHT + " calls in flight");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreException(StoreError.RPC_FAIL, what + " to master " + address + " interrupted", e);
        }
        CallStream s = null;
        try {
            s = stream();
            s.send(id, c);
            Answer a = s.pending.get(id).get(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
            if (a.getBodyCase() == Answer.BodyCase.REFUSED) {
                throw new StoreException(StoreError.INVALID_PARAMS, what + " refused by master " + address + ": "
                        + a.getRefused().getMessage());
            }
            return a;
        } catch (TimeoutException e) {
            throw new StoreException(StoreError.RPC_TIMEOUT, what + " to master " + address + " got no answer within "
                    + timeout.toMillis() + " ms", e);
        } catch (ExecutionException e) {
            throw failure(what, e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreException(StoreError.RPC_FAIL, what + " to master " + address + " interrupted", e);
        } finally {
            if (s != null) {
                s.pending.remove(id);
            }
            inFlight.release();
        }
    }

    private StoreException failure(String what, Throwable cause) {
        if (cause instanceof StatusRuntimeException e) {
            return translate(what, e);
        }
        return new StoreException(StoreError.RPC_FAIL, what + " to master " + address + " failed: " + cause, cause);
    }

    private CallStream stream() {
        CallStream s = stream;
        if (s != null && s.broken == null) {
            return s;
        }
        synchronized (this) {
            if (stream == null || stream.broken != null) {
                if (channel.getState(false) == ConnectivityState.TRANSIENT_FAILURE) {
                    // A channel whose connection failed fails every new call at once until a back-off timer lets it
                    // try again (seconds), even when the master is back. A fresh channel makes one connection
                    // attempt now: the call succeeds on a restarted master and fails at once on an unreachable one.
                    ManagedChannel old = channel;
                    channel = channel(address);
                    stub = MasterGrpc.newBlockingStub(channel);
                    old.shutdown();
                }
                CallStream fresh = new CallStream();
                fresh.requests = (ClientCallStreamObserver<Call>) MasterGrpc.newStub(channel).calls(fresh);
                stream = fresh;
            }
            return stream;
        }
    }

    /**
     * One Calls stream: calls wait in {@link #pending} by id until their answer arrives (on the channel's event loop)
     * or the stream breaks, which fails every one of them.
     */
    private final class CallStream implements StreamObserver<Answer> {
        final ConcurrentHashMap<Long, CompletableFuture<Answer>> pending = new ConcurrentHashMap<>();
        ClientCallStreamObserver<Call> requests;
        volatile Throwable broken;

        void send(long id, Call call) {
            pending.put(id, new CompletableFuture<>());
            Throwable b = broken;
            if (b != null) {
                // broke between stream() and now: fail() may have run before this call was registered
                pending.get(id).completeExceptionally(b);
                return;
            }
            synchronized (this) {
                requests.onNext(call);
            }
        }

        @Override
        public void onNext(Answer a) {
            CompletableFuture<Answer> f = pending.get(a.getId());
            if (f != null) {
                f.complete(a);
            }
        }

        @Override
        public void onError(Throwable t) {
            fail(t);
        }

        @Override
        public void onCompleted() {
            fail(io.grpc.Status.UNAVAILABLE.withDescription("master closed the call stream").asRuntimeException());
        }

        private void fail(Throwable t) {
            broken = t;
            pending.values().forEach(f -> f.completeExceptionally(t));
        }
    }

    @Override
    public void close() {
        channel.shutdownNow();
        try {
            channel.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
