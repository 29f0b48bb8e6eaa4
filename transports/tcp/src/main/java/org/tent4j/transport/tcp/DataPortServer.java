package org.tent4j.transport.tcp;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.GlobalEventExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.SecuritySettings;
import org.tent4j.spi.TransportContext;
import org.tent4j.transport.netty.KeepAlive;
import org.tent4j.transport.netty.TlsContexts;
import org.tent4j.transport.netty.TokenAuthHandler;
import org.tent4j.transport.netty.UnprovenConnections;

/**
 * The target side of the tcp transport: listens on the data port (every rail address, one port), admits inbound
 * connections within {@code max_connections} (after the token handshake and TLS, when those are on) and gives each a
 * {@link TargetConnection}. Bound on construction; its channels close with the transport's event loop group.
 */
final class DataPortServer {
    private static final Logger log = LoggerFactory.getLogger(DataPortServer.class);

    private final TransportContext context;
    private final RailAddresses addresses;
    private final InboundLimits limits;
    /** One listening channel per rail address, all on {@link #port}. */
    private final List<Channel> servers = new ArrayList<>();
    private final ChannelGroup inbound;
    /** Set before {@link #close} closes anything: a connection set up after that closes itself. */
    private volatile boolean closing;
    /** Inbound connections still proving themselves (token handshake, TLS), not yet counted. */
    private final UnprovenConnections unproven;
    /** Inbound connections open; a counter rather than the group's size, so the check and the count are one step. */
    private final AtomicInteger inboundCount = new AtomicInteger();
    private final int port;

    DataPortServer(TransportContext context, EventLoopGroup group, IoMode ioMode, KeepAlive keepAlive,
                   RailAddresses addresses, int wantedPort, long maxFrame, Duration connectTimeout, BufferPins pins,
                   PayloadCounters counters, InboundLimits limits, FileServing fileServing, TlsContexts tls) {
        this.context = context;
        this.addresses = addresses;
        this.limits = limits;
        this.unproven = new UnprovenConnections(limits.maxConnections);
        this.inbound = new DefaultChannelGroup("tcp-inbound-" + context.segmentName(), GlobalEventExecutor.INSTANCE);
        SecuritySettings security = context.security();
        ServerBootstrap sb = new ServerBootstrap()
                .group(group, group)
                .channel(ioMode.serverChannel())
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                // answers are views of registered memory, so the queue costs no copies; the mark only decides
                // when to stop reading requests from a peer that does not read its answers, and every answer
                // counts at least MIN_ANSWER_CHARGE, so that also bounds how many are queued
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, limits.waterMark)
                .childOption(ChannelOption.MESSAGE_SIZE_ESTIMATOR, limits.answerCharge)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        boolean proves = security.authenticates() || tls != null;
                        if (!proves && !admit(ch)) {
                            return;
                        }
                        TargetConnection target = new TargetConnection(context.segmentName(),
                                context.localMemory(), pins, maxFrame, counters, limits);
                        target.serveFiles(fileServing); // remote file segments (issue 12)
                        if (limits.idleTimeout.isPositive()) {
                            ch.pipeline().addLast(new IdleStateHandler(limits.idleTimeout.toMillis(), 0, 0,
                                    TimeUnit.MILLISECONDS));
                        }
                        CompletableFuture<Void> ready = CompletableFuture.completedFuture(null);
                        if (tls != null) {
                            // ciphertext must never land in registered memory: TLS reads go to Netty's buffers
                            // and payloads are copied from the decrypted ones
                            SslHandler ssl = tls.server().newHandler(ch.alloc());
                            ch.pipeline().addLast(ssl);
                            ready = TlsContexts.handshake(ssl);
                        } else {
                            ch.config().setRecvByteBufAllocator(new LandingRecvAllocator(target));
                        }
                        if (security.authenticates()) {
                            TokenAuthHandler auth = new TokenAuthHandler(security.handshake(false), "segment '"
                                    + context.segmentName() + "' tcp data port", connectTimeout, limits.authFailures);
                            ch.pipeline().addLast(auth);
                            ready = ready.thenCombine(auth.authenticated(), (x, y) -> null);
                        }
                        ch.pipeline().addLast(target);
                        inbound.add(ch);
                        if (closing) {
                            // accepted before the listening socket closed but registered only now: the group was
                            // closed without it, and an event loop that is shutting down registers it after it
                            // closed its channels, so nobody else would ever close it (seen as a peer whose idle
                            // lane stayed open after this transport closed, its requests unanswered)
                            ch.close();
                            return;
                        }
                        if (proves) {
                            // counted only once it proved itself; until then it holds one of max_connections
                            // pre-authentication slots, the oldest evicted, so silent connections cannot lock
                            // out token holders
                            unproven.await(ch, ready, DataPortServer.this::admit, DataPortServer.this::refuse);
                        }
                    }
                });
        keepAlive.configure(ioMode.keepAliveKeys(), sb::childOption);
        this.port = bindAll(sb, wantedPort);
    }

    /** The bound data port. */
    int port() {
        return port;
    }

    /** Inbound connections open now (counted ones: proven, or admitted where nothing needs proving). */
    int inboundConnections() {
        return inboundCount.get();
    }

    /** Closes every inbound connection, waiting up to {@code patience}. */
    void closeInbound(Duration patience) {
        inbound.close().awaitUninterruptibly(patience.toMillis());
    }

    /** Stops listening and closes every inbound connection, waiting up to {@code patience} for each step. */
    void close(Duration patience) {
        closing = true;
        for (Channel server : servers) {
            server.close().awaitUninterruptibly(patience.toMillis());
        }
        closeInbound(patience);
    }

    /**
     * Listens on every rail address at one port (so {@code port} serves peers that know only the host): the host's
     * first, at {@code wanted}; when that picked a free port another address has taken, all are tried again.
     */
    private int bindAll(ServerBootstrap sb, int wanted) {
        TransferException last = null;
        for (int attempt = 0; attempt < 8; attempt++) {
            int p = wanted;
            try {
                for (RailAddresses.Local l : addresses.locals()) {
                    InetAddress a = servers.isEmpty() ? null : l.address();
                    ChannelFuture bound = (a == null ? sb.bind(context.host(), p) : sb.bind(a, p)).awaitUninterruptibly();
                    if (!bound.isSuccess()) {
                        throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "tcp: cannot listen on "
                                + (a == null ? context.host() : a.getHostAddress()) + ":" + p + " for segment '"
                                + context.segmentName() + "': " + bound.cause(), bound.cause());
                    }
                    servers.add(bound.channel());
                    p = ((InetSocketAddress) bound.channel().localAddress()).getPort();
                }
                return p;
            } catch (TransferException e) {
                servers.forEach(c -> c.close().awaitUninterruptibly());
                servers.clear();
                last = e;
                if (wanted != 0 || !addresses.multiRail()) {
                    break;
                }
            }
        }
        throw last;
    }

    /** Counts an inbound connection against {@code max_connections}, or closes it; whether it stays. */
    private boolean admit(Channel ch) {
        if (inboundCount.incrementAndGet() > limits.maxConnections) {
            inboundCount.decrementAndGet();
            refuse(ch);
            return false;
        }
        ch.closeFuture().addListener(closed -> inboundCount.decrementAndGet());
        return true;
    }

    /** Closes an inbound connection beyond {@code max_connections} (or an unproven one making room) before it is read. */
    private void refuse(Channel ch) {
        limits.refusedConnections.increment();
        long refused = limits.refusedConnections.sum();
        if (Long.bitCount(refused) == 1) { // 1, 2, 4, 8 ...: a flood of connections must not flood the log too
            log.warn("segment '{}': refusing tcp connection from {}: {} inbound connections are open "
                    + "(transports.tcp.max_connections); {} refused so far", context.segmentName(), ch.remoteAddress(),
                    limits.maxConnections, refused);
        }
        ch.close();
    }
}
