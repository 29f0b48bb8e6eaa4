package org.tent4j.store.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.common.util.concurrent.MoreExecutors;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.proto.CountResponse;
import org.tent4j.store.proto.MasterGrpc;
import org.tent4j.store.proto.RemoveAllRequest;

/** Slow calls from any caller (a pathological regex, a flood of sweeps) cost bounded time and threads on a real master. */
class SlowCallsTest {
    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        Collections.reverse(open);
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    private MasterServer serve() throws Exception {
        MasterServer server = MasterServer.start(MasterConfig.defaults(), StoreClock.system(), "127.0.0.1", 0, 0);
        open.add(server);
        server.master().mount("node", new SegmentSpec("seg", "engine-seg", "host", 1L << 32, 1 << 20), 1L);
        return server;
    }

    private MasterClient client(MasterServer server, Duration timeout) {
        MasterClient c = new MasterClient("127.0.0.1:" + server.port(), timeout);
        open.add(c);
        return c;
    }

    private static void put(StoreMaster master, String key) {
        Command.PutTicket t = master.putStart("node", key, 64, ReplicateConfig.defaults(), "host");
        master.putEnd("node", key, t.putId());
    }

    @Test
    void catastrophicRegexReturnsWhileOtherClientsAreServed() throws Exception {
        MasterServer server = serve();
        StoreMaster master = server.master();
        // a backtracking matcher spends seconds per key on these ((.*a){20} against n a's and a '!': C(n, 20) paths)
        put(master, "a".repeat(28) + "!");
        put(master, "a".repeat(29) + "!");
        put(master, "a".repeat(25));
        for (int i = 0; i < 8; i++) {
            put(master, "honest/" + i);
        }
        List<Command<?>> logged = Collections.synchronizedList(new ArrayList<>());
        master.state().journal(e -> logged.add(e.command()));
        MasterClient honest = client(server, Duration.ofSeconds(5));
        String honestId = honest.register();
        master.mount(honestId, new SegmentSpec("honest-seg", "engine-seg-2", "host", 1L << 32, 1 << 20), 1L);
        MasterClient attacker = client(server, Duration.ofSeconds(120));

        long start = System.nanoTime();
        CompletableFuture<Long> removal = CompletableFuture.supplyAsync(() -> attacker.removeByRegex("(.*a){20}", false));
        int served = 0;
        // each honest call must be answered within its 5 s timeout for as long as the removal runs (a master that
        // matches under its ordering point answers none of them until the match ends)
        while (!removal.isDone() || served < 10) {
            honest.getReplicaList("honest/" + served % 8);
            assertFalse(honest.ping(honestId, 0, 0));
            served++;
        }
        assertEquals(1, removal.get(60, TimeUnit.SECONDS), "only the 25 a's match whole");
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(30), "the removal took "
                + (System.nanoTime() - start) / 1_000_000 + " ms");
        // the log carries the matched keys, not the pattern, so a replay runs no match under the ordering point
        List<Command.RemoveKeys> removals = logged.stream().filter(c -> c instanceof Command.RemoveKeys)
                .map(c -> (Command.RemoveKeys) c).toList();
        assertEquals(List.of(new Command.RemoveKeys(List.of("a".repeat(25)), false)), removals);
    }

    @Test
    void unsupportedPatternsAreRefusedNamingThePattern() throws Exception {
        MasterClient c = client(serve(), Duration.ofSeconds(10));
        for (String regex : List.of("(a)\\1", "a(?=b)", "(")) {
            StoreException e = assertThrows(StoreException.class, () -> c.removeByRegex(regex, false));
            assertEquals(StoreError.INVALID_PARAMS, e.error(), e.getMessage());
            assertTrue(e.getMessage().contains("bad regex '" + regex + "'"), e.getMessage());
        }
    }

    @Test
    void floodOfSlowCallsBeyondThePoolIsRefusedNotQueued() throws Exception {
        MasterServer server = serve();
        // every slow call blocks on the ordering point while the test holds it, so each one keeps its thread or queue slot
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Thread holder = Thread.ofPlatform().start(() -> server.master().state().inOrder(() -> {
            held.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return null;
        }));
        open.add(() -> {
            release.countDown();
            holder.join();
        });
        assertTrue(held.await(30, TimeUnit.SECONDS));
        // from several connections: one alone may have at most Limits.DEFAULT.callsPerConnection() calls open
        List<MasterGrpc.MasterFutureStub> stubs = new ArrayList<>();
        for (int c = 0; c < 8; c++) {
            ManagedChannel channel = NettyChannelBuilder.forTarget("127.0.0.1:" + server.port()).usePlaintext().build();
            open.add(() -> {
                channel.shutdownNow();
                channel.awaitTermination(5, TimeUnit.SECONDS);
            });
            stubs.add(MasterGrpc.newFutureStub(channel));
        }

        int calls = 100;
        int admitted = MasterServer.SLOW_WORK_THREADS + MasterServer.SLOW_WORK_QUEUE;
        CountDownLatch refusedLatch = new CountDownLatch(calls - admitted);
        CountDownLatch answered = new CountDownLatch(calls);
        AtomicInteger refused = new AtomicInteger();
        List<String> messages = Collections.synchronizedList(new ArrayList<>());
        for (int i = 0; i < calls; i++) {
            ListenableFuture<CountResponse> f = stubs.get(i % stubs.size()).removeAll(RemoveAllRequest.newBuilder().setForce(false).build());
            Futures.addCallback(f, new FutureCallback<>() {
                @Override
                public void onSuccess(CountResponse r) {
                    if (r.getStatus().getCode() == StoreError.UNAVAILABLE_IN_CURRENT_STATUS.code()) {
                        refused.incrementAndGet();
                        messages.add(r.getStatus().getMessage());
                        refusedLatch.countDown();
                    }
                    answered.countDown();
                }

                @Override
                public void onFailure(Throwable t) {
                    messages.add("failed: " + t);
                    answered.countDown();
                }
            }, MoreExecutors.directExecutor());
        }
        assertTrue(refusedLatch.await(30, TimeUnit.SECONDS), "refused while the pool is full: " + refused.get());
        assertTrue(messages.getFirst().contains("RemoveAll refused: the master's slow-work pool is full"), messages.getFirst());
        long slowThreads = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("store-master-slow-")).count();
        assertTrue(slowThreads <= MasterServer.SLOW_WORK_THREADS, slowThreads + " slow-work threads");

        release.countDown();
        assertTrue(answered.await(60, TimeUnit.SECONDS), "the admitted calls are served once the point is free");
        assertEquals(calls - admitted, refused.get(), String.valueOf(messages));
    }
}
