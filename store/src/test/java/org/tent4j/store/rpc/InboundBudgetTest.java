package org.tent4j.store.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import io.grpc.Metadata;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2Connection;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2ConnectionHandlerBuilder;
import io.netty.handler.codec.http2.Http2FrameAdapter;
import io.netty.handler.codec.http2.Http2Headers;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreSecurity;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.proto.MasterGrpc;
import org.tent4j.store.proto.PutStartResponse;
import org.tent4j.testkit.Poll;

/**
 * The master's inbound bytes budget (issue 29): a raw HTTP/2 peer declares large gRPC messages and sends only their
 * first part, on several streams. Beyond the budget the stream that would exceed it is refused RESOURCE_EXHAUSTED
 * naming the budget, while the others stay open and an honest client's puts and reads go on; when the peer's
 * connection closes, what it held is released.
 */
class InboundBudgetTest {
    private static final long BUDGET = 1 << 20;
    /** Each hostile message declares this much... */
    private static final int DECLARED = 4 << 20;
    /** ...and sends this much: two such fit in the budget, three do not. */
    private static final int SENT = 400 << 10;
    private static final Duration LIMIT = Duration.ofSeconds(30);
    private static final Duration PAUSE = Duration.ofMillis(5);
    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable c : open.reversed()) {
            c.close();
        }
    }

    @Test
    void partlySentMessagesBeyondTheBudgetAreRefusedWhileSmallCallsGoOn() throws Exception {
        MasterServer m = MasterServer.start(new StoreMaster(MasterConfig.defaults(), StoreClock.system()), "127.0.0.1", 0,
                0, r -> { }, StoreSecurity.NONE, ClientCredentials.random(), null,
                new MasterServer.Limits(1024, 64, 16, BUDGET));
        open.add(m);
        MasterClient honest = new MasterClient("127.0.0.1:" + m.port(), Duration.ofSeconds(10));
        open.add(honest);
        String node = honest.register();
        honest.mount(node, new SegmentSpec("seg", "engine-seg", "host", 4096, 1 << 20), 1L);
        putAndRead(honest, node, "before");

        RawPeer hostile = new RawPeer(m.port());
        open.add(hostile);
        hostile.partialMessage(1);
        hostile.partialMessage(3);
        long twoHeld = 2L * (SENT - InboundBudget.FREE_BYTES);
        Poll.until("two partial messages held", LIMIT, PAUSE, () -> m.inboundBytesHeld() >= twoHeld);
        hostile.partialMessage(5);
        Http2Headers refused = hostile.trailers(5).get(LIMIT.toSeconds(), TimeUnit.SECONDS);
        assertEquals("8", String.valueOf(refused.get("grpc-status")), "RESOURCE_EXHAUSTED: " + refused);
        String message = String.valueOf(refused.get("grpc-message"));
        assertTrue(message.contains("inbound bytes budget (" + BUDGET + " bytes"), message);
        assertTrue(message.contains("Ping"), "names the call: " + message);
        assertEquals(1, m.inboundRefused());
        assertFalse(hostile.trailers(1).isDone(), "the first stream is still open: " + hostile.seen);
        assertFalse(hostile.trailers(3).isDone(), "the second stream is still open: " + hostile.seen);
        long held = m.inboundBytesHeld();
        assertTrue(held >= twoHeld && held <= BUDGET, "held " + held);

        // honest small calls need no budget: they go on while the hostile peer holds it
        putAndRead(honest, node, "during");

        hostile.close();
        Poll.until("the closed connection's partial messages are released", LIMIT, PAUSE, () -> m.inboundBytesHeld() == 0);
        StringBuilder metrics = new StringBuilder();
        m.stats().appendPrometheus(metrics);
        assertTrue(metrics.toString().contains("\nstore_rpc_inbound_held_bytes 0\n"), metrics.toString());
        assertTrue(metrics.toString().contains("\nstore_rpc_inbound_refused_total 1\n"), metrics.toString());
        assertTrue(metrics.toString().contains("\nstore_rpc_inbound_budget_bytes " + BUDGET + "\n"), metrics.toString());
        putAndRead(honest, node, "after");
        assertEquals(3, m.master().state().objectCount());
    }

    /**
     * The accounting itself, on the tracers gRPC gives each stream: a small message passes a spent budget (the free
     * allowance), a larger one is refused naming the budget, and each message's end or stream's end releases exactly
     * what it held, once.
     */
    @Test
    void smallMessagesPassASpentBudgetAndEveryEndReleasesWhatItHeld() {
        RpcStats stats = new RpcStats();
        InboundBudget budget = new InboundBudget(BUDGET, stats);
        ServerStreamTracer hog = budget.newServerStreamTracer("tent4j.store.Master/Ping", new Metadata());
        hog.inboundWireSize(BUDGET + InboundBudget.FREE_BYTES - InboundBudget.PIECE_COST);
        assertEquals(BUDGET, budget.held(), "the budget is spent exactly");

        ServerStreamTracer small = budget.newServerStreamTracer("tent4j.store.Master/Calls", new Metadata());
        for (int seq = 1; seq <= 3; seq++) {
            small.inboundWireSize(4000);
            small.inboundWireSize(4000);
            small.inboundMessageRead(seq, 8000, -1);
        }
        ServerStreamTracer large = budget.newServerStreamTracer("tent4j.store.Master/BatchRemove", new Metadata());
        large.inboundWireSize(8000);
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
                () -> large.inboundWireSize(InboundBudget.FREE_BYTES));
        assertEquals(Status.Code.RESOURCE_EXHAUSTED, e.getStatus().getCode());
        assertTrue(e.getStatus().getDescription().contains("inbound bytes budget (" + BUDGET + " bytes")
                && e.getStatus().getDescription().contains("tent4j.store.Master/BatchRemove"), e.getMessage());
        assertEquals(1, budget.refused());
        large.streamClosed(Status.CANCELLED);
        assertEquals(BUDGET, budget.held(), "the refused stream held nothing of the budget");

        hog.inboundMessageRead(1, BUDGET, -1);
        assertEquals(0, budget.held(), "a delivered message releases what it held");
        hog.inboundWireSize(InboundBudget.FREE_BYTES + 1000);
        assertEquals(1000 + InboundBudget.PIECE_COST, budget.held());
        hog.streamClosed(Status.CANCELLED);
        hog.streamClosed(Status.CANCELLED);
        assertEquals(0, budget.held(), "a stream's end releases its partial message, once");
        StringBuilder metrics = new StringBuilder();
        stats.appendPrometheus(metrics);
        assertTrue(metrics.toString().contains("\nstore_rpc_inbound_refused_total 1\n"), metrics.toString());
    }

    private static void putAndRead(MasterClient c, String node, String key) {
        PutStartResponse start = c.putStart(MasterClient.putStartRequest(node, key, 4096, ReplicateConfig.defaults(),
                "host", false));
        c.putEnd(node, key, start.getPutId());
        assertEquals(4096, c.size(key));
        assertEquals(start.getReplicasList(), c.getReplicaList(key).getReplicasList(), key);
    }

    /** An HTTP/2 connection that opens gRPC calls and sends only part of each call's message. */
    private static final class RawPeer implements AutoCloseable {
        private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        private final Map<Integer, CompletableFuture<Http2Headers>> trailers = new ConcurrentHashMap<>();
        /** What the master sent besides data, for failure messages. */
        final List<String> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        private final Http2ConnectionHandler handler;
        private final Channel channel;
        private final int port;

        RawPeer(int port) throws InterruptedException {
            this.port = port;
            // closing does not wait for the open streams (Netty's default waits 30 s): the peer just goes away
            handler = new Http2ConnectionHandlerBuilder().connection(new DefaultHttp2Connection(false))
                    .gracefulShutdownTimeoutMillis(0)
                    .frameListener(new Http2FrameAdapter() {
                        @Override
                        public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
                                                  int streamDependency, short weight, boolean exclusive, int padding,
                                                  boolean endOfStream) {
                            onHeadersRead(ctx, streamId, headers, padding, endOfStream);
                        }

                        @Override
                        public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
                                                  int padding, boolean endOfStream) {
                            seen.add("HEADERS " + streamId + " " + headers);
                            if (headers.contains("grpc-status")) {
                                trailers(streamId).complete(headers);
                            }
                        }

                        @Override
                        public void onRstStreamRead(ChannelHandlerContext ctx, int streamId, long errorCode) {
                            seen.add("RST_STREAM " + streamId + " " + errorCode);
                        }

                        @Override
                        public void onGoAwayRead(ChannelHandlerContext ctx, int lastStreamId, long errorCode, ByteBuf debugData) {
                            seen.add("GOAWAY " + lastStreamId + " " + errorCode + " " + debugData.toString(java.nio.charset.StandardCharsets.UTF_8));
                        }
                    }).build();
            channel = new Bootstrap().group(group).channel(NioSocketChannel.class).handler(handler)
                    .connect(new InetSocketAddress("127.0.0.1", port)).sync().channel();
        }

        CompletableFuture<Http2Headers> trailers(int streamId) {
            return trailers.computeIfAbsent(streamId, id -> new CompletableFuture<>());
        }

        /** Opens stream {@code id} with a Ping whose message declares {@link #DECLARED} bytes and sends {@link #SENT}. */
        void partialMessage(int id) {
            Http2Headers headers = new DefaultHttp2Headers().method("POST").scheme("http")
                    .path("/" + MasterGrpc.getPingMethod().getFullMethodName()).authority("127.0.0.1:" + port)
                    .add("content-type", "application/grpc").add("te", "trailers");
            ByteBuf body = Unpooled.buffer(5 + SENT).writeByte(0).writeInt(DECLARED).writeZero(SENT);
            channel.eventLoop().execute(() -> {
                ChannelHandlerContext ctx = channel.pipeline().context(handler);
                handler.encoder().writeHeaders(ctx, id, headers, 0, false, ctx.newPromise());
                // beyond the master's window the encoder keeps the rest and sends it as the master grants more
                handler.encoder().writeData(ctx, id, body, 0, false, ctx.newPromise());
                channel.flush();
            });
        }

        @Override
        public void close() throws InterruptedException {
            if (group.isShuttingDown()) {
                return;
            }
            channel.close().sync();
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
    }
}
