package org.tent4j.store.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.netty.NettyChannelBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreError;
import org.tent4j.store.master.Command;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.proto.Answer;
import org.tent4j.store.proto.Call;
import org.tent4j.store.proto.KeysRequest;
import org.tent4j.store.proto.MasterGrpc;
import org.tent4j.store.proto.ReplicaListResponse;
import org.tent4j.testkit.Poll;

/**
 * A client that sends calls on its Calls stream and never reads the answers (issue 29: 800 MiB of answers queued on
 * the master for one such client). The master serves the next call only when the transport can take another answer,
 * so what it holds for the stream stays about a flow-control window, and it serves every call once the client reads.
 */
class UnreadAnswersTest {
    /** Each call asks for this many missing keys of {@link #KEY_CHARS}; each item's answer names its key: ~60 KB each. */
    private static final int KEYS_PER_CALL = 256;
    private static final int KEY_CHARS = 200;
    private static final int CALLS = 100;
    /**
     * Calls served while no answer is read, at most: the client's 64 KiB window and gRPC's 32 KiB ready threshold
     * take two answers of ~60 KB, one more is served before the stream stops being ready; twice that for slack. An
     * unbounded master serves all {@link #CALLS}, holding ~6 MB of answers.
     */
    private static final int SERVED_UNREAD = 8;
    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable c : open.reversed()) {
            c.close();
        }
    }

    @Test
    void answersAClientDoesNotReadStayAboutAWindowAndOthersAreServed() throws Exception {
        MasterServer server = MasterServer.start(MasterConfig.defaults(), StoreClock.system(), "127.0.0.1", 0, 0);
        open.add(server);
        StoreMaster master = server.master();
        master.mount("node", new SegmentSpec("seg", "engine-seg", "host", 1L << 32, 1 << 20), 1L);
        Command.PutTicket t = master.putStart("node", "honest", 64, ReplicateConfig.defaults(), "host");
        master.putEnd("node", "honest", t.putId());

        ManagedChannel channel = NettyChannelBuilder.forTarget("127.0.0.1:" + server.port()).usePlaintext()
                .flowControlWindow(64 << 10).build();
        open.add(() -> {
            channel.shutdownNow();
            channel.awaitTermination(5, TimeUnit.SECONDS);
        });
        ClientCall<Call, Answer> stream = channel.newCall(MasterGrpc.getCallsMethod(), CallOptions.DEFAULT);
        List<Answer> answers = new CopyOnWriteArrayList<>();
        stream.start(new ClientCall.Listener<>() {
            @Override
            public void onMessage(Answer a) {
                answers.add(a);
            }
        }, new Metadata());
        // no request(): the client takes no answer, so gRPC does not give the master's stream its window back
        KeysRequest.Builder keys = KeysRequest.newBuilder();
        for (int k = 0; k < KEYS_PER_CALL; k++) {
            keys.addKeys(String.format("%0" + KEY_CHARS + "d", k));
        }
        for (int i = 0; i < CALLS; i++) {
            stream.sendMessage(Call.newBuilder().setId(i).setBatchGetReplicaList(keys).build());
        }

        Poll.until("the master serves the first calls", Duration.ofSeconds(30), Duration.ofMillis(5),
                () -> served(server) >= 1);
        // the wrong behaviour shows within milliseconds: give it a second to, under load
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
        while (System.nanoTime() < end && served(server) <= SERVED_UNREAD) {
            Thread.sleep(10);
        }
        long unread = served(server);
        assertTrue(unread <= SERVED_UNREAD, unread + " of " + CALLS + " calls served for a client that reads no answer");

        // another client is served meanwhile
        try (MasterClient honest = new MasterClient("127.0.0.1:" + server.port(), Duration.ofSeconds(5))) {
            assertEquals(t.replicas().size(), honest.getReplicaList("honest").getReplicasCount());
            honest.ping(honest.register(), 0, 0); // answered (need_remount: it mounts nothing), not timed out
        }
        assertTrue(served(server) <= SERVED_UNREAD, served(server) + " served");

        // once the client reads, every call is served and answered in order
        stream.request(CALLS);
        Poll.until("every call answered", Duration.ofSeconds(30), Duration.ofMillis(5), () -> answers.size() == CALLS);
        for (int i = 0; i < CALLS; i++) {
            Answer a = answers.get(i);
            assertEquals(i, a.getId());
            List<ReplicaListResponse> items = a.getBatchReplicaList().getItemsList();
            assertEquals(KEYS_PER_CALL, items.size());
            assertEquals(StoreError.OBJECT_NOT_FOUND.code(), items.getLast().getStatus().getCode(), items.getLast().toString());
        }
        assertEquals(CALLS, served(server));
        stream.halfClose();
    }

    private static long served(MasterServer server) {
        RpcStats.Method m = server.stats().methods().get("BatchGetReplicaList");
        return m == null ? 0 : m.calls();
    }
}
