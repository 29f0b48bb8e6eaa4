package org.tent4j.store.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.grpc.ForwardingServerCallListener;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.proto.Answer;
import org.tent4j.store.proto.Call;
import org.tent4j.store.proto.KeysRequest;
import org.tent4j.store.proto.MasterGrpc;

/** The Calls stream between a {@link MasterClient} and a real master when the stream breaks, is abused, or the master restarts. */
class MasterCallStreamTest {
    private final List<AutoCloseable> open = new ArrayList<>();
    private final ExecutorService slowWork = Executors.newCachedThreadPool();

    @AfterEach
    void close() throws Exception {
        Collections.reverse(open);
        for (AutoCloseable c : open) {
            c.close();
        }
        slowWork.shutdownNow();
    }

    /** A real master service behind {@code interceptor}, on a free port. */
    private String serve(ServerInterceptor interceptor) throws Exception {
        StoreMaster master = new StoreMaster(MasterConfig.defaults(), StoreClock.system());
        open.add(master);
        Server server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).directExecutor()
                .maxInboundMessageSize(MasterServer.MAX_MESSAGE_BYTES)
                .addService(ServerInterceptors.intercept(new MasterService(master, new RpcStats(), slowWork, ClientCredentials.random()), interceptor))
                .build().start();
        open.add(() -> {
            server.shutdownNow();
            server.awaitTermination(5, TimeUnit.SECONDS);
        });
        return "127.0.0.1:" + server.getPort();
    }

    private MasterClient client(String address) {
        MasterClient c = new MasterClient(address, Duration.ofSeconds(10));
        open.add(c);
        return c;
    }

    /** Counts Calls streams; on the first one, takes {@code cutAfter} calls without serving them, then breaks it. */
    private static final class CutFirstStream implements ServerInterceptor {
        final AtomicInteger streams = new AtomicInteger();
        final int cutAfter;

        CutFirstStream(int cutAfter) {
            this.cutAfter = cutAfter;
        }

        @Override
        public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers, ServerCallHandler<Q, A> next) {
            ServerCall.Listener<Q> served = next.startCall(call, headers);
            if (!call.getMethodDescriptor().equals(MasterGrpc.getCallsMethod()) || streams.incrementAndGet() > 1) {
                return served;
            }
            return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(served) {
                int taken;

                @Override
                public void onMessage(Q message) {
                    call.request(1);
                    if (++taken == cutAfter) {
                        call.close(io.grpc.Status.UNAVAILABLE.withDescription("stream cut by the test"), new Metadata());
                    }
                }
            };
        }
    }

    @Test
    void aStreamBrokenMidCallFailsEveryPendingCallNamingTheMasterAndTheNextCallReopensIt() throws Exception {
        CutFirstStream cut = new CutFirstStream(3);
        String address = serve(cut);
        MasterClient c = client(address);
        List<CompletableFuture<Boolean>> pending = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            String key = "k" + i;
            pending.add(CompletableFuture.supplyAsync(() -> c.exists(key), slowWork));
        }
        for (CompletableFuture<Boolean> f : pending) {
            CompletionException e = assertThrows(CompletionException.class, f::join);
            StoreException se = assertInstanceOf(StoreException.class, e.getCause());
            assertEquals(StoreError.RPC_FAIL, se.error());
            assertTrue(se.getMessage().contains("Exist to master " + address) && se.getMessage().contains("stream cut by the test"),
                    se.getMessage());
        }
        assertFalse(c.exists("k0"), "the next call opens a new stream");
        assertFalse(c.batchExists(List.of("k1", "k2")).getFirst().getExists());
        assertEquals(2, cut.streams.get());
    }

    @Test
    void callsOverTheBoundsAreRefusedPreciselyAndTheStreamCarriesOn() throws Exception {
        CutFirstStream count = new CutFirstStream(Integer.MAX_VALUE);
        String address = serve(new ServerInterceptor() {
            @Override
            public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers, ServerCallHandler<Q, A> next) {
                if (call.getMethodDescriptor().equals(MasterGrpc.getCallsMethod())) {
                    count.streams.incrementAndGet();
                }
                return next.startCall(call, headers);
            }
        });
        MasterClient c = client(address);
        List<String> tooMany = new ArrayList<>();
        for (int i = 0; i <= MasterService.MAX_BATCH; i++) {
            tooMany.add("k" + i);
        }
        StoreException refused = assertThrows(StoreException.class, () -> c.batchExists(tooMany));
        assertEquals(StoreError.INVALID_PARAMS, refused.error());
        assertTrue(refused.getMessage().contains("BatchExist refused by master " + address)
                && refused.getMessage().contains("batch of 65537 items exceeds the limit of 65536"), refused.getMessage());
        assertFalse(c.exists("k0"));
        assertEquals(1, count.streams.get(), "a refused call leaves the stream open");

        // a call over the master's message limit is refused before it is sent: sent, it would break the stream
        String longKey = "k".repeat(4000);
        List<String> tooLarge = Collections.nCopies(MasterServer.MAX_MESSAGE_BYTES / 4000 + 16, longKey);
        StoreException large = assertThrows(StoreException.class, () -> c.batchExists(tooLarge));
        assertEquals(StoreError.INVALID_PARAMS, large.error());
        assertTrue(large.getMessage().contains("exceeds the message limit of master " + address), large.getMessage());
        assertFalse(c.exists("k0"));
        assertEquals(1, count.streams.get());

        // sent anyway (a client without that check), the master refuses to read it and ends that stream only
        ManagedChannel raw = NettyChannelBuilder.forTarget(address).usePlaintext().build();
        open.add(raw::shutdownNow);
        CompletableFuture<Throwable> ended = new CompletableFuture<>();
        StreamObserver<Call> calls = MasterGrpc.newStub(raw).calls(new StreamObserver<>() {
            @Override
            public void onNext(Answer a) {
                ended.complete(new AssertionError("answered " + a));
            }

            @Override
            public void onError(Throwable t) {
                ended.complete(t);
            }

            @Override
            public void onCompleted() {
                ended.complete(new AssertionError("completed"));
            }
        });
        calls.onNext(Call.newBuilder().setId(1).setBatchExist(KeysRequest.newBuilder().addAllKeys(tooLarge)).build());
        io.grpc.Status status = io.grpc.Status.fromThrowable(ended.get(10, TimeUnit.SECONDS));
        assertTrue(status.getCode() == io.grpc.Status.Code.RESOURCE_EXHAUSTED || status.getCode() == io.grpc.Status.Code.CANCELLED, status.toString());
        assertFalse(c.exists("k0"), "other clients' streams are unaffected");
        assertEquals(2, count.streams.get());
    }

    @Test
    void aRestartedMasterIsReachedByTheNextCall() throws Exception {
        MasterServer first = MasterServer.start(MasterConfig.defaults(), StoreClock.system(), "127.0.0.1", 0, 0);
        int port = first.port();
        String address = "127.0.0.1:" + port;
        MasterClient c = client(address);
        assertFalse(c.exists("k"));
        first.close();
        StoreException down = assertThrows(StoreException.class, () -> c.exists("k"));
        assertEquals(StoreError.RPC_FAIL, down.error());
        assertTrue(down.getMessage().contains("Exist to master " + address), down.getMessage());
        try (MasterServer second = MasterServer.start(MasterConfig.defaults(), StoreClock.system(), "127.0.0.1", port, 0)) {
            assertFalse(c.exists("k"));
            assertTrue(c.batchGetReplicaList(List.of("k")).items().getFirst().getStatus().getMessage().contains("'k'"));
        }
    }
}
