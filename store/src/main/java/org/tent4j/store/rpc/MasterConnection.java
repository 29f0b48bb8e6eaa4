package org.tent4j.store.rpc;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ConnectivityState;
import io.grpc.ForwardingClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.netty.handler.ssl.SslContext;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.StoreSecurity;
import org.tent4j.store.proto.Answer;
import org.tent4j.store.proto.Call;
import org.tent4j.store.proto.MasterGrpc;

/**
 * {@link MasterClient}'s connection to the master it talks to now: the channel with the proofs every call carries,
 * the long-lived Calls stream the hot calls share, and transport failures turned into {@link StoreException}s naming
 * the master ({@link StoreError#RPC_FAIL} when unreachable or the stream broke, {@link StoreError#RPC_TIMEOUT} past the
 * timeout, {@code NOT_LEADER} as a {@link org.tent4j.store.NotLeaderException}). Which master that is, and what is sent
 * again, {@link LeaderFollowing} and the client decide.
 */
final class MasterConnection implements AutoCloseable {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(MasterConnection.class);
    /** Most calls of this client waiting on the stream at once: bounds what the client buffers for the master. */
    static final int MAX_IN_FLIGHT = 1024;
    /** The master calls go to now. */
    private volatile String address;
    private volatile ManagedChannel channel;
    private volatile MasterGrpc.MasterBlockingStub stub;
    private final Duration timeout;
    private final Semaphore inFlight = new Semaphore(MAX_IN_FLIGHT);
    private final AtomicLong ids = new AtomicLong();
    /** The highest term an answer carried (0: masters without a durable log, or no answer yet). */
    private final AtomicLong highestTerm = new AtomicLong();
    private volatile CallStream stream;
    private final SslContext tls;
    private final String tokenProof;
    private final String adminProof;
    /** {@code <client id>:<credential hex>} once registered, sent with every call (null before). */
    private volatile String session;

    MasterConnection(String address, Duration timeout, StoreSecurity security) {
        this.address = address;
        this.timeout = timeout;
        this.tls = security.tls() ? StoreTls.client(security) : null;
        this.tokenProof = StoreAuth.tokenProof(security.token());
        this.adminProof = StoreAuth.adminProof(security.adminToken());
        this.channel = channel(address);
        this.stub = MasterGrpc.newBlockingStub(channel);
    }

    String address() {
        return address;
    }

    boolean registered() {
        return session != null;
    }

    /**
     * Carries {@code session} (the credential {@code Register} issued) on every later call. Calls already on the Calls
     * stream finish there, later ones go on a new stream that carries it.
     */
    void session(String session) {
        this.session = session;
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

    /**
     * Sends later calls to {@code next} (a fresh channel and stream), unless another thread already moved away from
     * {@code from}. The credential goes along: a durable group shares its key ({@link ClientCredentials}).
     */
    void moveTo(String from, String next) {
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

    MasterGrpc.MasterBlockingStub stub() {
        return stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    <T> T call(String what, Supplier<T> rpc) {
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

    /** The answer to {@code call} over the Calls stream, which is opened now if none is open or the last one broke. */
    Answer exchange(String what, Call.Builder call) {
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
            noteTerm(what, a.getTerm());
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

    /** The highest Raft term the masters' answers carried so far (0: masters without a durable log). */
    long term() {
        return highestTerm.get();
    }

    /**
     * Keeps the highest term seen. An answer of a lower term comes from a master that has not learned of a later
     * leader (deposed, or cut off): its writes cannot have committed (the log refuses them), but a read it serves may
     * be stale, so it is logged. It is not refused: a master whose data dir was wiped starts again from term 1, and
     * refusing it would lock this client out until restarted.
     */
    private void noteTerm(String what, long term) {
        long highest = highestTerm.accumulateAndGet(term, Math::max);
        if (term < highest) {
            LOG.warn("{} answered by master {} in term {}, after an answer of term {}: a master that has not heard of "
                    + "a later leader (its reads may be stale) or that lost its log", what, address, term, highest);
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
