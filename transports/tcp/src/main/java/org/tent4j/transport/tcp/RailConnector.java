package org.tent4j.transport.tcp;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.ssl.SslHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.SecuritySettings;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.TimeSource;
import org.tent4j.transport.netty.KeepAlive;
import org.tent4j.transport.netty.TlsContexts;
import org.tent4j.transport.netty.TokenAuthHandler;

/**
 * Connects the lanes of a peer connection over every rail that works (multi-rail tcp). Every (local address, remote
 * address) pair worth trying ({@link RailAddresses#sourcesFor}) is tried at once; a pair is a rail when all its lanes
 * connect (and pass TLS and the token handshake). Once one rail is up, the others get {@code rail_connect_timeout} more;
 * those that did not connect are left out, remembered as unreachable for {@code rail_recheck} (a reconnect skips them
 * meanwhile), and re-tried by the connection in the background ({@link #attach}): one whose lanes connect joins the
 * open connection ({@link #probe} where the connection cannot grow: it is reopened with the rail instead).
 */
final class RailConnector {
    private static final Logger log = LoggerFactory.getLogger(RailConnector.class);

    /** One (local address, remote endpoint) pair; {@code from} null = the kernel picks the source address. */
    record Rail(RailAddresses.Local from, InetAddress to, int port) {
        String name() {
            return RailAddresses.railName(from, to);
        }

        String key() {
            return (from == null ? "*" : from.address().getHostAddress()) + ">" + to.getHostAddress() + ":" + port;
        }

        @Override
        public String toString() {
            return name() + ":" + port;
        }
    }

    /** Settings of the transport that connecting needs. */
    record Settings(String segmentName, String machineId, EventLoopGroup group, IoMode ioMode, KeepAlive keepAlive,
                    Duration connectTimeout, Duration railConnectTimeout, Duration recheck, SecuritySettings security,
                    TlsContexts tls, java.util.concurrent.atomic.LongAdder authFailures, TimeSource clock) {
    }

    private final Settings s;
    private final RailAddresses addresses;
    /** Pairs that failed to connect, with when (the engine's clock) and why; a success removes its entry. */
    private final Map<String, long[]> unreachableSince = new ConcurrentHashMap<>();
    /** Lanes that connected (handshakes included) since start: {@code tent4j_transport_tcp_lane_connects}. */
    final java.util.concurrent.atomic.LongAdder laneConnects = new java.util.concurrent.atomic.LongAdder();

    RailConnector(Settings settings, RailAddresses addresses) {
        this.s = settings;
        this.addresses = addresses;
    }

    /** The pairs worth trying for {@code peer}, in the order of its addresses. */
    List<Rail> candidates(SegmentDescriptor peer, int port) {
        List<Rail> out = new ArrayList<>();
        for (InetAddress to : RailAddresses.remotes(peer, s.machineId())) {
            for (RailAddresses.Local from : addresses.sourcesFor(to)) {
                out.add(new Rail(from, to, port));
            }
        }
        return out;
    }

    /** Whether {@code rail} failed within the last {@code rail_recheck}, so a connect need not wait for it again. */
    boolean recentlyUnreachable(Rail rail) {
        long[] at = unreachableSince.get(rail.key());
        return at != null && s.clock().nanoTime() - at[0] < s.recheck().toNanos();
    }

    void reachable(Rail rail) {
        unreachableSince.remove(rail.key());
    }

    void unreachable(Rail rail) {
        unreachableSince.put(rail.key(), new long[]{s.clock().nanoTime()});
    }

    /**
     * Connects {@code connection}'s lanes over each rail of {@code tried} (its lanes {@code [i * lanes, (i + 1) * lanes)}
     * for rail i); returns the rails that came up, each with all its lanes. Lanes of the others are closed.
     */
    List<Integer> connect(TcpPeerConnection connection, List<Rail> tried, SegmentDescriptor peer, int lanes) {
        int n = tried.size();
        List<CompletableFuture<Void>> rails = new ArrayList<>(n);
        List<ChannelFuture> channels = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            Rail rail = tried.get(r);
            List<CompletableFuture<Void>> laneReady = new ArrayList<>(lanes);
            for (int i = 0; i < lanes; i++) {
                InitiatorLane lane = connection.lane(r * lanes + i);
                CompletableFuture<Void> ready = new CompletableFuture<>();
                channels.add(open(rail, peer, lane, ready, lane));
                laneReady.add(ready);
            }
            rails.add(CompletableFuture.allOf(laneReady.toArray(CompletableFuture[]::new)));
        }
        CompletableFuture<Void> anyUp = new CompletableFuture<>();
        rails.forEach(f -> f.thenRun(() -> anyUp.complete(null)));
        CompletableFuture<Void> all = CompletableFuture.allOf(rails.stream().map(f -> f.exceptionally(e -> null))
                .toArray(CompletableFuture[]::new));
        // Netty ends each connect at connect_timeout; the extra second covers handshakes and a stuck event loop
        long patience = s.connectTimeout().toMillis() + 1000;
        try {
            CompletableFuture.anyOf(anyUp, all).get(patience, TimeUnit.MILLISECONDS);
            if (anyUp.isDone() && !all.isDone()) {
                all.get(s.railConnectTimeout().toMillis(), TimeUnit.MILLISECONDS);
            }
        } catch (TimeoutException e) {
            // what has not connected by now is left out below
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            throw new IllegalStateException(e); // every future above is made to complete normally
        }
        List<Integer> up = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        TransferException denied = null;
        for (int r = 0; r < n; r++) {
            Rail rail = tried.get(r);
            CompletableFuture<Void> f = rails.get(r);
            if (f.isDone() && !f.isCompletedExceptionally()) {
                up.add(r);
                reachable(rail);
                continue;
            }
            Throwable cause = f.isDone() ? f.handle((v, e) -> e).join() : null;
            cause = cause instanceof java.util.concurrent.CompletionException ce && ce.getCause() != null ? ce.getCause() : cause;
            failures.add(rail + ": " + (cause != null ? cause : "no answer within " + (anyUp.isDone()
                    ? "transports.tcp.rail_connect_timeout (" + s.railConnectTimeout() + ") of the first rail"
                    : s.connectTimeout())));
            if (cause instanceof HandshakeFailure h) {
                denied = new TransferException(ErrorCode.PERMISSION_DENIED, "tcp: cannot connect to segment '"
                        + peer.name() + "' at " + rail + ": " + h.getMessage(), h.getCause());
            } else {
                unreachable(rail);
            }
            for (int i = 0; i < lanes; i++) {
                ChannelFuture c = channels.get(r * lanes + i);
                c.cancel(false);
                c.channel().close();
            }
        }
        if (denied != null || up.isEmpty()) {
            for (int r : up) {
                for (int i = 0; i < lanes; i++) {
                    channels.get(r * lanes + i).channel().close();
                }
            }
            if (denied != null) {
                throw denied;
            }
            throw new TransferException(ErrorCode.PEER_UNREACHABLE, "tcp: cannot connect to segment '" + peer.name()
                    + "' over any rail: " + String.join("; ", failures));
        }
        if (!failures.isEmpty()) {
            log.warn("tcp: segment '{}': {} of {} rails to '{}' connected; left out (re-tried every {}): {}",
                    s.segmentName(), up.size(), n, peer.name(), s.recheck(), String.join("; ", failures));
        }
        return up;
    }

    /**
     * Tries {@code rail} in the background, as a lane would connect (handshakes included, so the peer counts no
     * failure), and closes it again; {@code outcome} gets whether it connected.
     */
    void probe(Rail rail, SegmentDescriptor peer, Consumer<Boolean> outcome) {
        CompletableFuture<Void> ready = new CompletableFuture<>();
        ChannelFuture f;
        try {
            f = open(rail, peer, new ChannelInboundHandlerAdapter(), ready, null);
        } catch (RuntimeException e) {
            outcome.accept(false); // the event loop has shut down
            return;
        }
        ready.orTimeout(s.connectTimeout().toMillis() + 1000, TimeUnit.MILLISECONDS).whenComplete((v, e) -> {
            f.channel().close();
            if (e == null) {
                reachable(rail);
            } else {
                unreachable(rail);
            }
            outcome.accept(e == null);
        });
    }

    /**
     * Connects {@code lanes} over {@code rail} in the background, for a connection that lacks the rail;
     * {@code outcome} gets whether all of them connected. If one did not, all are closed again.
     */
    void attach(Rail rail, SegmentDescriptor peer, List<InitiatorLane> lanes, Consumer<Boolean> outcome) {
        List<ChannelFuture> channels = new ArrayList<>(lanes.size());
        List<CompletableFuture<Void>> ready = new ArrayList<>(lanes.size());
        try {
            for (InitiatorLane lane : lanes) {
                CompletableFuture<Void> r = new CompletableFuture<>();
                channels.add(open(rail, peer, lane, r, lane));
                ready.add(r);
            }
        } catch (RuntimeException e) {
            channels.forEach(c -> c.channel().close());
            outcome.accept(false); // the event loop has shut down
            return;
        }
        CompletableFuture.allOf(ready.toArray(CompletableFuture[]::new))
                .orTimeout(s.connectTimeout().toMillis() + 1000, TimeUnit.MILLISECONDS).whenComplete((v, e) -> {
                    if (e == null) {
                        reachable(rail);
                        outcome.accept(true);
                        return;
                    }
                    for (ChannelFuture c : channels) {
                        c.cancel(false);
                        c.channel().close();
                    }
                    Throwable cause = e instanceof java.util.concurrent.CompletionException && e.getCause() != null
                            ? e.getCause() : e;
                    if (!(cause instanceof HandshakeFailure)) {
                        unreachable(rail);
                    }
                    log.debug("tcp: rail {} to segment '{}' still does not connect: {}", rail, peer.name(), cause.toString());
                    outcome.accept(false);
                });
    }

    /** Thrown into a lane's ready future when TLS or the token handshake failed: not a reachability problem. */
    static final class HandshakeFailure extends RuntimeException {
        HandshakeFailure(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * Connects over {@code rail}; {@code ready} completes once the channel is connected and through TLS and the token
     * handshake, or exceptionally with why not.
     */
    private ChannelFuture open(Rail rail, SegmentDescriptor peer, ChannelHandler handler, CompletableFuture<Void> ready,
                               InitiatorLane landing) {
        CompletableFuture<Void> handshakes = new CompletableFuture<>();
        Bootstrap b = new Bootstrap()
                .group(s.group())
                .channel(s.ioMode().socketChannel())
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, s.connectTimeout().toMillis()));
        if (rail.from() != null) {
            b.localAddress(new InetSocketAddress(rail.from().address(), 0));
        }
        s.keepAlive().configure(s.ioMode().keepAliveKeys(), b::option);
        if (landing != null && s.tls() == null) {
            b.option(ChannelOption.RECVBUF_ALLOCATOR, new LandingRecvAllocator(landing));
        }
        b.handler(new ChannelInitializer<SocketChannel>() {
            @Override
            protected void initChannel(SocketChannel ch) {
                CompletableFuture<Void> tlsDone = CompletableFuture.completedFuture(null);
                if (s.tls() != null) {
                    SslHandler ssl = s.tls().client().newHandler(ch.alloc(), peer.host(), rail.port());
                    ch.pipeline().addLast(ssl);
                    tlsDone = TlsContexts.handshake(ssl);
                }
                CompletableFuture<Void> tokenDone = CompletableFuture.completedFuture(null);
                if (s.security().authenticates()) {
                    TokenAuthHandler auth = new TokenAuthHandler(s.security().handshake(true), "segment '"
                            + s.segmentName() + "' tcp lane to '" + peer.name() + "'", s.connectTimeout(), s.authFailures());
                    ch.pipeline().addLast(auth);
                    tokenDone = auth.authenticated();
                }
                ch.pipeline().addLast(handler);
                String what = (s.tls() != null ? "TLS" : "") + (s.tls() != null && s.security().authenticates() ? " or " : "")
                        + (s.security().authenticates() ? "token" : "");
                tlsDone.thenCombine(tokenDone, (x, y) -> (Void) null).whenComplete((v, e) -> {
                    if (e != null) {
                        Throwable cause = e instanceof java.util.concurrent.CompletionException && e.getCause() != null
                                ? e.getCause() : e;
                        handshakes.completeExceptionally(new HandshakeFailure(what + " handshake failed: " + cause, cause));
                    } else {
                        handshakes.complete(null);
                    }
                });
            }
        });
        ChannelFuture f = b.connect(new InetSocketAddress(rail.to(), rail.port()));
        f.addListener(done -> {
            if (!done.isSuccess()) {
                ready.completeExceptionally(done.cause() != null ? done.cause()
                        : new java.util.concurrent.CancellationException("connect canceled"));
            } else {
                handshakes.whenComplete((v, e) -> {
                    if (e != null) {
                        ready.completeExceptionally(e);
                    } else {
                        if (landing != null) {
                            laneConnects.increment();
                        }
                        ready.complete(null);
                    }
                });
            }
        });
        return f;
    }
}
