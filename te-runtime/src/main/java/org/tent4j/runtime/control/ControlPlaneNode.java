package org.tent4j.runtime.control;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.ControlPlane;
import org.tent4j.spi.SegmentDescriptor;

/**
 * The engine's control plane: one listener for peers' requests and one cached connection per peer for ours.
 *
 * <p>Wire format, after a 4-byte big-endian length prefix: {@code u8 kind} (0 request, 1 reply, 2 error),
 * {@code u64 correlation id}, {@code u16 + UTF-8 service}, {@code u16 + UTF-8 caller segment}, then the payload. An
 * error reply's payload is its UTF-8 message, prefixed by one byte holding the {@link ErrorCode} ordinal.
 * Low volume by design (descriptors, notifications, handshakes), so it runs on one NIO thread and handlers on workers.
 */
public final class ControlPlaneNode implements ControlPlane, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ControlPlaneNode.class);
    static final int MAX_FRAME = 16 << 20;
    private static final byte REQUEST = 0;
    private static final byte REPLY = 1;
    private static final byte ERROR = 2;

    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1,
            Thread.ofPlatform().daemon().name("tent4j-control").factory(), NioIoHandler.newFactory());
    private final Map<String, Handler> services = new ConcurrentHashMap<>();
    private final Map<String, CompletableFuture<Channel>> peers = new ConcurrentHashMap<>();
    private final Map<Long, Pending> pending = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();
    private final Executor workers;
    private final Channel server;
    private volatile String localSegment = "";

    public ControlPlaneNode(String host, int port, Executor workers) {
        this.workers = workers;
        try {
            server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(pipeline()).bind(host, port).sync().channel();
        } catch (Exception e) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw new TransferException(ErrorCode.CONFIG, "cannot listen on control plane " + host + ":" + port + ": " + e, e);
        }
    }

    public void localSegment(String name) {
        this.localSegment = name;
    }

    public int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    private ChannelInitializer<SocketChannel> pipeline() {
        return new ChannelInitializer<>() {
            @Override
            protected void initChannel(SocketChannel ch) {
                ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(MAX_FRAME, 0, 4, 0, 4),
                        new LengthFieldPrepender(4), new FrameHandler());
            }
        };
    }

    @Override
    public void serve(String service, Handler handler) {
        if (services.putIfAbsent(service, handler) != null) {
            throw new IllegalStateException("control-plane service '" + service + "' is already served");
        }
    }

    @Override
    public byte[] call(SegmentDescriptor peer, String service, byte[] request, Duration timeout) {
        return call(peer.host(), peer.controlPort(), service, request, timeout);
    }

    /** Calls {@code service} on the control plane at {@code host:port} and waits for the reply. */
    public byte[] call(String host, int port, String service, byte[] request, Duration timeout) {
        try {
            return callAsync(host, port, service, request).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new TransferException(ErrorCode.TIMEOUT, "control plane " + host + ":" + port + " did not answer '"
                    + service + "' within " + timeout.toMillis() + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransferException(ErrorCode.CANCELED, "interrupted while calling " + host + ":" + port);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof TransferException te) {
                throw new TransferException(te.code(), te.getMessage(), te);
            }
            throw new TransferException(ErrorCode.PEER_FAILED, "'" + service + "' on " + host + ":" + port + " failed: " + e.getCause(), e.getCause());
        }
    }

    public CompletableFuture<byte[]> callAsync(String host, int port, String service, byte[] request) {
        String endpoint = host + ":" + port;
        CompletableFuture<byte[]> reply = new CompletableFuture<>();
        channel(host, port).whenComplete((ch, err) -> {
            if (err != null) {
                reply.completeExceptionally(err instanceof TransferException ? err
                        : new TransferException(ErrorCode.PEER_UNREACHABLE, "cannot reach control plane " + endpoint + ": " + err.getMessage(), err));
                return;
            }
            long id = ids.incrementAndGet();
            pending.put(id, new Pending(ch, reply));
            reply.whenComplete((r, t) -> pending.remove(id));
            ch.writeAndFlush(frame(ch, REQUEST, id, service, request)).addListener(f -> {
                if (!f.isSuccess()) {
                    reply.completeExceptionally(new TransferException(ErrorCode.PEER_FAILED,
                            "cannot send '" + service + "' to " + endpoint + ": " + f.cause(), f.cause()));
                }
            });
        });
        return reply;
    }

    private CompletableFuture<Channel> channel(String host, int port) {
        String endpoint = host + ":" + port;
        CompletableFuture<Channel> cached = peers.get(endpoint);
        if (cached != null && (!cached.isDone() || (!cached.isCompletedExceptionally() && cached.join().isActive()))) {
            return cached;
        }
        CompletableFuture<Channel> fresh = new CompletableFuture<>();
        if (cached == null ? peers.putIfAbsent(endpoint, fresh) != null : !peers.replace(endpoint, cached, fresh)) {
            return channel(host, port);
        }
        ChannelFuture cf = new Bootstrap().group(group).channel(NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, true).option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 5000)
                .handler(pipeline()).connect(host, port);
        cf.addListener(f -> {
            if (f.isSuccess()) {
                fresh.complete(cf.channel());
            } else {
                peers.remove(endpoint, fresh);
                fresh.completeExceptionally(new TransferException(ErrorCode.PEER_UNREACHABLE,
                        "cannot connect to control plane " + endpoint + ": " + f.cause().getMessage(), f.cause()));
            }
        });
        return fresh;
    }

    private ByteBuf frame(Channel ch, byte kind, long id, String service, byte[] payload) {
        byte[] s = service.getBytes(StandardCharsets.UTF_8);
        byte[] c = localSegment.getBytes(StandardCharsets.UTF_8);
        ByteBuf buf = ch.alloc().buffer(1 + 8 + 2 + s.length + 2 + c.length + payload.length);
        buf.writeByte(kind).writeLong(id).writeShort(s.length).writeBytes(s).writeShort(c.length).writeBytes(c).writeBytes(payload);
        return buf;
    }

    private final class FrameHandler extends SimpleChannelInboundHandler<ByteBuf> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf in) {
            byte kind = in.readByte();
            long id = in.readLong();
            String service = in.readCharSequence(in.readUnsignedShort(), StandardCharsets.UTF_8).toString();
            String caller = in.readCharSequence(in.readUnsignedShort(), StandardCharsets.UTF_8).toString();
            byte[] payload = new byte[in.readableBytes()];
            in.readBytes(payload);
            switch (kind) {
                case REQUEST -> workers.execute(() -> answer(ctx.channel(), id, service, caller, payload));
                case REPLY -> {
                    Pending p = pending.get(id);
                    if (p != null) {
                        p.reply().complete(payload);
                    }
                }
                case ERROR -> {
                    Pending p = pending.get(id);
                    if (p != null) {
                        ErrorCode code = payload.length > 0 && payload[0] < ErrorCode.values().length
                                ? ErrorCode.values()[payload[0]] : ErrorCode.PEER_FAILED;
                        String msg = payload.length > 0 ? new String(payload, 1, payload.length - 1, StandardCharsets.UTF_8) : "";
                        p.reply().completeExceptionally(new TransferException(code, msg));
                    }
                }
                default -> {
                    log.warn("control plane: dropping connection from {}: unknown frame kind {}", ctx.channel().remoteAddress(), kind);
                    ctx.close();
                }
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            // Calls waiting on this connection can never be answered now.
            String remote = String.valueOf(ctx.channel().remoteAddress());
            peers.values().removeIf(f -> f.isDone() && !f.isCompletedExceptionally() && f.join() == ctx.channel());
            for (Pending p : pending.values()) {
                if (p.channel() == ctx.channel()) {
                    p.reply().completeExceptionally(new TransferException(ErrorCode.PEER_FAILED,
                            "control-plane connection to " + remote + " closed"));
                }
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            log.debug("control plane: closing {}: {}", ctx.channel().remoteAddress(), cause.toString());
            ctx.close();
        }
    }

    private void answer(Channel ch, long id, String service, String caller, byte[] request) {
        Handler h = services.get(service);
        byte kind = REPLY;
        byte[] reply;
        try {
            if (h == null) {
                throw new TransferException(ErrorCode.PROTOCOL, "segment '" + localSegment + "' serves no '" + service + "'");
            }
            reply = h.handle(caller, request);
        } catch (Exception e) {
            kind = ERROR;
            ErrorCode code = e instanceof TransferException te ? te.code() : ErrorCode.PEER_FAILED;
            byte[] msg = String.valueOf(e.getMessage()).getBytes(StandardCharsets.UTF_8);
            reply = new byte[msg.length + 1];
            reply[0] = (byte) code.ordinal();
            System.arraycopy(msg, 0, reply, 1, msg.length);
        }
        ch.writeAndFlush(frame(ch, kind, id, service, reply));
    }

    @Override
    public void close() {
        server.close().syncUninterruptibly();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        for (Pending p : pending.values()) {
            p.reply().completeExceptionally(new TransferException(ErrorCode.ENGINE_CLOSED, "control plane closed"));
        }
    }

    private record Pending(Channel channel, CompletableFuture<byte[]> reply) {
    }
}
