package org.tent4j.runtime.control;

import java.security.SecureRandom;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.nio.NioSocketChannel;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.transport.netty.KeepAlive;

/**
 * The calls a {@link ControlPlaneNode} makes: one cached connection per peer endpoint (used only once the peer proved
 * itself), a random correlation id per call, and the calls waiting for their replies. A reply completes its call only
 * when it comes on the connection the call went out on ({@link Dispatcher} asks {@link #waiting}).
 */
final class OutboundCalls {
    private final ControlPlaneNode node;
    private final EventLoopGroup group;
    private final Map<String, CompletableFuture<Channel>> peers = new ConcurrentHashMap<>();
    private final Map<Long, Pending> pending = new ConcurrentHashMap<>();
    private final SecureRandom random = new SecureRandom();

    record Pending(Channel channel, CompletableFuture<byte[]> reply) {
    }

    OutboundCalls(ControlPlaneNode node, EventLoopGroup group) {
        this.node = node;
        this.group = group;
    }

    /** Connections to peers open now. */
    int openConnections() {
        int n = 0;
        for (CompletableFuture<Channel> f : peers.values()) {
            if (f.isDone() && !f.isCompletedExceptionally() && f.join().isActive()) {
                n++;
            }
        }
        return n;
    }

    /** Calls {@code service} at {@code host:port}; fails with TIMEOUT after {@code control.call_timeout}. */
    CompletableFuture<byte[]> callAsync(String host, int port, String service, byte[] request) {
        String endpoint = host + ":" + port;
        CompletableFuture<byte[]> reply = new CompletableFuture<>();
        long timeoutMs = node.settings.callTimeout().toMillis();
        try {
            // a peer that never answers must not keep the call (and its entry in pending) forever
            ScheduledFuture<?> timer = group.schedule(() -> reply.completeExceptionally(new TransferException(
                    ErrorCode.TIMEOUT, "control plane " + endpoint + " did not answer '" + service + "' within "
                    + timeoutMs + " ms")), timeoutMs, TimeUnit.MILLISECONDS);
            reply.whenComplete((r, t) -> timer.cancel(false));
        } catch (RejectedExecutionException e) {
            reply.completeExceptionally(new TransferException(ErrorCode.ENGINE_CLOSED, "control plane closed"));
            return reply;
        }
        channel(host, port).whenComplete((ch, err) -> {
            if (err != null) {
                reply.completeExceptionally(err instanceof TransferException ? err
                        : new TransferException(ErrorCode.PEER_UNREACHABLE, "cannot reach control plane " + endpoint + ": " + err.getMessage(), err));
                return;
            }
            long id = newId(ch, reply);
            reply.whenComplete((r, t) -> pending.remove(id));
            ch.writeAndFlush(node.frame(ch, ControlFrame.REQUEST, id, service, request)).addListener(f -> {
                if (!f.isSuccess()) {
                    reply.completeExceptionally(new TransferException(ErrorCode.PEER_FAILED,
                            "cannot send '" + service + "' to " + endpoint + ": " + f.cause(), f.cause()));
                }
            });
        });
        return reply;
    }

    /** A random correlation id, so that nobody can answer a call by guessing its id. */
    private long newId(Channel ch, CompletableFuture<byte[]> reply) {
        Pending p = new Pending(ch, reply);
        while (true) {
            long id = random.nextLong();
            if (pending.putIfAbsent(id, p) == null) {
                return id;
            }
        }
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
        Bootstrap b = new Bootstrap().group(group).channel(NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, true).option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 5000)
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, ControlPlaneNode.WATER_MARK)
                .handler(node.pipeline(false));
        node.settings.keepAlive().configure(KeepAlive.Keys.NIO, b::option);
        ChannelFuture cf = b.connect(host, port);
        cf.addListener(f -> {
            if (f.isSuccess()) {
                // no request goes out before the peer proved itself (TLS, token)
                cf.channel().attr(ControlPlaneNode.READY).get().whenComplete((v, e) -> {
                    if (e == null) {
                        fresh.complete(cf.channel());
                    } else {
                        peers.remove(endpoint, fresh);
                        cf.channel().close();
                        fresh.completeExceptionally(new TransferException(ErrorCode.PERMISSION_DENIED,
                                "control plane " + endpoint + " failed the " + (node.tls() ? "TLS/" : "")
                                        + "token handshake: " + e, e));
                    }
                });
            } else {
                peers.remove(endpoint, fresh);
                fresh.completeExceptionally(new TransferException(ErrorCode.PEER_UNREACHABLE,
                        "cannot connect to control plane " + endpoint + ": " + f.cause().getMessage(), f.cause()));
            }
        });
        return fresh;
    }

    /** The call waiting for reply {@code id}, or null. */
    Pending waiting(long id) {
        return pending.get(id);
    }

    /** Whether a call waits for its reply on {@code ch}. */
    boolean waitsOn(Channel ch) {
        return pending.values().stream().anyMatch(p -> p.channel() == ch);
    }

    /** {@code ch} closed: it is no peer's connection any more, and calls waiting on it can never be answered now. */
    void connectionClosed(Channel ch, String remote) {
        peers.values().removeIf(p -> p.isDone() && !p.isCompletedExceptionally() && p.join() == ch);
        for (Pending p : pending.values()) {
            if (p.channel() == ch) {
                p.reply().completeExceptionally(new TransferException(ErrorCode.PEER_FAILED,
                        "control-plane connection to " + remote + " closed"));
            }
        }
    }

    /** The node closed: every call still waiting fails. */
    void closed() {
        for (Pending p : pending.values()) {
            p.reply().completeExceptionally(new TransferException(ErrorCode.ENGINE_CLOSED, "control plane closed"));
        }
    }
}
