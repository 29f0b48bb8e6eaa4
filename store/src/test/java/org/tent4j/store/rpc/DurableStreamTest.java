package org.tent4j.store.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.store.ManualClock;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreError;
import org.tent4j.store.master.Command;
import org.tent4j.store.master.DurableLog;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.proto.Answer;
import org.tent4j.store.proto.Call;
import org.tent4j.store.proto.KeyRequest;
import org.tent4j.store.proto.MasterGrpc;

/**
 * A durable master serves a client's Calls stream without waiting for each call's log entry: the calls behind one
 * whose entry is not applied yet are proposed meanwhile (so they share the log's fsync), and every call is answered
 * once its own entry is applied.
 */
class DurableStreamTest {
    private final List<AutoCloseable> open = new ArrayList<>();
    private final ExecutorService slowWork = Executors.newCachedThreadPool();

    @TempDir
    Path dir;

    @AfterEach
    void close() throws Exception {
        Collections.reverse(open);
        for (AutoCloseable c : open) {
            c.close();
        }
        slowWork.shutdownNow();
    }

    @Test
    void callsBehindOneWaitingForItsEntryAreProposedMeanwhileAndEachIsAnsweredWhenApplied() throws Exception {
        DurableLog log = log();
        StoreMaster master = new StoreMaster(log, StoreClock.system());
        // the applier stops at the read lease of "held" until the test lets it go
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        log.state().journal(e -> {
            if (e.command() instanceof Command.GrantRead g && g.key().equals("held")) {
                held.countDown();
                try {
                    release.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        open.add(release::countDown);
        BlockingQueue<Answer> answers = new LinkedBlockingQueue<>();
        StreamObserver<Call> calls = stream(master, answers);
        calls.onNext(get(1, "held"));
        assertTrue(held.await(10, TimeUnit.SECONDS), "the first call's entry never reached the applier");
        long committed = log.role().commitIndex();
        for (int i = 2; i <= 4; i++) {
            calls.onNext(get(i, "k" + i));
        }
        // the three calls behind the held one are in the log (committed, not applied) while it waits
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (log.role().commitIndex() < committed + 3 && System.nanoTime() < deadline) {
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        }
        assertTrue(log.role().commitIndex() >= committed + 3,
                "the calls behind one waiting for its entry were not proposed meanwhile");
        assertTrue(answers.isEmpty(), "a call was answered before its entry was applied: " + answers);
        // a read off the log sees what was applied (every answered call) and does not wait for the held applier
        calls.onNext(Call.newBuilder().setId(5).setExist(KeyRequest.newBuilder().setKey("k2")).build());
        Answer exist = answers.poll(10, TimeUnit.SECONDS);
        assertEquals(5, exist == null ? -1 : exist.getId(), "the read waited for the applier: " + exist);
        assertEquals(0, exist.getExist().getStatus().getCode(), "the read was refused waiting for the applier: " + exist);
        assertFalse(exist.getExist().getExists());
        assertTrue(answers.isEmpty(), "a call was answered before its entry was applied: " + answers);

        release.countDown();
        for (long id = 1; id <= 4; id++) {
            Answer a = answers.poll(10, TimeUnit.SECONDS);
            assertEquals(id, a == null ? -1 : a.getId(), "entries are applied, so answered, in the order the calls came");
            assertEquals(StoreError.OBJECT_NOT_FOUND.code(), a.getReplicaList().getStatus().getCode(), "call " + id + ": " + a);
        }
        calls.onCompleted();
    }

    /**
     * A read of an object whose read lease still runs at least a quarter of a lease TTL is answered from the state
     * under that lease, with what is left of it, and makes no log entry; past that, the read is an entry again and
     * renews the lease. Virtual time on the master.
     */
    @Test
    void aReadUnderALeaseThatStillRunsAQuarterOfItsTtlIsAnsweredWithoutAnEntry() throws Exception {
        DurableLog log = log();
        ManualClock clock = new ManualClock();
        StoreMaster master = new StoreMaster(log, clock);
        master.apply(new Command.Mount("node", new SegmentSpec("node-mem", "node-engine", "h", 1L << 40, 1 << 20), 7L));
        for (String key : List.of("a", "b")) {
            Command.PutTicket t = master.putStart("node", key, 4096, ReplicateConfig.defaults(), "h");
            master.putEnd("node", key, t.putId());
        }
        BlockingQueue<Answer> answers = new LinkedBlockingQueue<>();
        StreamObserver<Call> calls = stream(master, answers);
        long ttl = MasterConfig.defaults().leaseTtl().toMillis();

        long entries = log.entriesApplied();
        calls.onNext(get(1, "a"));
        assertEquals(ttl, answers.poll(10, TimeUnit.SECONDS).getReplicaList().getLeaseTtlMs(), "a fresh lease");
        assertEquals(entries + 1, log.entriesApplied(), "the first read is an entry");

        clock.advance(java.time.Duration.ofMillis(ttl * 3 / 4 - 1000));
        calls.onNext(get(2, "a"));
        calls.onNext(batch(3, "a", "b"));
        Answer held = answers.poll(10, TimeUnit.SECONDS);
        assertEquals(2, held.getId());
        assertEquals(ttl / 4 + 1000, held.getReplicaList().getLeaseTtlMs(), "what is left of the held lease");
        assertEquals(1, held.getReplicaList().getReplicasCount());
        Answer mixed = answers.poll(10, TimeUnit.SECONDS);
        assertEquals(List.of(ttl / 4 + 1000, ttl), mixed.getBatchReplicaList().getItemsList().stream()
                .map(r -> r.getLeaseTtlMs()).toList(), "a under its held lease, b under a new one");
        assertEquals(entries + 2, log.entriesApplied(), "only b's lease was an entry");

        clock.advance(java.time.Duration.ofMillis(1001));
        calls.onNext(get(4, "a"));
        assertEquals(ttl, answers.poll(10, TimeUnit.SECONDS).getReplicaList().getLeaseTtlMs(),
                "under a quarter of a TTL left: renewed");
        assertEquals(entries + 3, log.entriesApplied());
        calls.onCompleted();
    }

    private static Call batch(long id, String... keys) {
        return Call.newBuilder().setId(id).setBatchGetReplicaList(org.tent4j.store.proto.KeysRequest.newBuilder()
                .addAllKeys(List.of(keys))).build();
    }

    private DurableLog log() throws java.io.IOException {
        DurableLog log = DurableLog.open(MasterConfig.defaults(), dir, "m1", List.of(),
                new DurableLog.Settings(1_000_000, false, 60_000));
        open.add(log);
        return log;
    }

    /** A Calls stream to {@code master} served over real gRPC; its answers go to {@code answers}. */
    private StreamObserver<Call> stream(StoreMaster master, BlockingQueue<Answer> answers) throws java.io.IOException {
        Server server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).directExecutor()
                .addService(new MasterService(master, new RpcStats(), slowWork, ClientCredentials.random()))
                .build().start();
        open.add(() -> {
            server.shutdownNow();
            server.awaitTermination(5, TimeUnit.SECONDS);
        });
        ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext().build();
        open.add(() -> {
            channel.shutdownNow();
            channel.awaitTermination(5, TimeUnit.SECONDS);
        });
        return MasterGrpc.newStub(channel).calls(new StreamObserver<>() {
            @Override
            public void onNext(Answer a) {
                answers.add(a);
            }

            @Override
            public void onError(Throwable t) {
            }

            @Override
            public void onCompleted() {
            }
        });
    }

    private static Call get(long id, String key) {
        return Call.newBuilder().setId(id).setGetReplicaList(KeyRequest.newBuilder().setKey(key)).build();
    }
}
