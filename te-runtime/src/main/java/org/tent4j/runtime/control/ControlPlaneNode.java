package org.tent4j.runtime.control;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.AttributeKey;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.config.CoreKey;
import org.tent4j.spi.ControlPlane;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.SecuritySettings;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.transport.netty.KeepAlive;
import org.tent4j.transport.netty.TlsContexts;
import org.tent4j.transport.netty.TokenAuthHandler;
import org.tent4j.transport.netty.UnprovenConnections;

/**
 * The engine's control plane: one listener for peers' requests and one cached connection per peer for ours.
 *
 * <p>Wire format, after a 4-byte big-endian length prefix: {@code u8 kind} (0 request, 1 reply, 2 error),
 * {@code u64 correlation id}, {@code u16 + UTF-8 service}, {@code u16 + UTF-8 caller segment}, then the payload. An
 * error reply's payload is its UTF-8 message, prefixed by one byte holding the {@link ErrorCode} ordinal.
 * Low volume by design (descriptors, notifications, handshakes), so it runs on one NIO thread and handlers on workers.
 *
 * <p>Every peer is untrusted. A reply counts only on the connection its call went out on (any host can reach the
 * listener, and correlation ids are random besides); a caller's segment name is bound to the first connection that
 * claims it for as long as that connection lives, so another connection cannot act in its name; and frame sizes,
 * connections, requests waiting for a worker and idle time are bounded by {@link Settings}.
 *
 * <p>A peer that restarts on the same host reconnects under its old name, and its first request can arrive before
 * this node has seen the old connection close. So a connection whose first claim meets a live owner holds its frames
 * (reading nothing more) until the owner closes or {@link Settings#claimWait()} passes, once per connection: then it
 * is served or refused as usual.
 *
 * <p>Each connection's pipeline, past TLS, the token handshake and the length prefix: {@link FrameDecoder} (header),
 * {@link CallerClaims} (caller names, held claims, back-pressure), {@link RequestLimits} (sizes, requests waiting and
 * their bytes), {@link Dispatcher} (replies to calls, requests to workers, idle and bad connections). This node's own
 * calls, their connections and the replies they wait for are {@link OutboundCalls}.
 */
public final class ControlPlaneNode implements ControlPlane, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ControlPlaneNode.class);

    /** What a peer can make this node hold, from the {@code control.*} keys of {@link CoreKey}. */
    public record Settings(int maxFrame, int maxConnections, int maxRequestsPerConnection, int maxRequests,
                           long maxRequestBytes, Duration idleTimeout, Duration callTimeout, KeepAlive keepAlive, SecuritySettings security) {
        public Settings {
            if (maxFrame < 1024) {
                throw new ConfigException(CoreKey.CONTROL_MAX_FRAME, "must be at least 1k, got " + maxFrame);
            }
            if (maxConnections < 1) {
                throw new ConfigException(CoreKey.CONTROL_MAX_CONNECTIONS, "must be >= 1, got " + maxConnections);
            }
            if (maxRequestsPerConnection < 1) {
                throw new ConfigException(CoreKey.CONTROL_MAX_REQUESTS_PER_CONNECTION, "must be >= 1, got "
                        + maxRequestsPerConnection);
            }
            if (maxRequests < maxRequestsPerConnection) {
                throw new ConfigException(CoreKey.CONTROL_MAX_REQUESTS, "must be >= "
                        + CoreKey.CONTROL_MAX_REQUESTS_PER_CONNECTION + " (" + maxRequestsPerConnection + "), got "
                        + maxRequests);
            }
            if (maxRequestBytes < maxFrame) {
                // a budget below one frame would refuse a request the frame limit admits, even on an idle node
                throw new ConfigException(CoreKey.CONTROL_MAX_REQUEST_BYTES, "must be >= " + CoreKey.CONTROL_MAX_FRAME
                        + " (" + maxFrame + "), got " + maxRequestBytes);
            }
            if (idleTimeout.isNegative()) {
                throw new ConfigException(CoreKey.CONTROL_IDLE_TIMEOUT, "must be >= 0 (0 = never), got " + idleTimeout);
            }
            if (!callTimeout.isPositive()) {
                throw new ConfigException(CoreKey.CONTROL_CALL_TIMEOUT, "must be > 0, got " + callTimeout);
            }
        }

        /**
         * How long a connection's first claim of a name waits for the name's live owner to close: half the call
         * timeout, so a caller with the same settings hears the refusal before its call times out.
         */
        public Duration claimWait() {
            return callTimeout.dividedBy(2);
        }

        public static Settings from(OptionValues core) {
            long frame = core.getSize(CoreKey.CONTROL_MAX_FRAME);
            if (frame > 256 << 20) {
                throw new ConfigException(CoreKey.CONTROL_MAX_FRAME, "must be at most 256m, got " + frame);
            }
            return new Settings((int) frame, core.getInt(CoreKey.CONTROL_MAX_CONNECTIONS),
                    core.getInt(CoreKey.CONTROL_MAX_REQUESTS_PER_CONNECTION), core.getInt(CoreKey.CONTROL_MAX_REQUESTS),
                    core.getSize(CoreKey.CONTROL_MAX_REQUEST_BYTES),
                    core.getDuration(CoreKey.CONTROL_IDLE_TIMEOUT), core.getDuration(CoreKey.CONTROL_CALL_TIMEOUT),
                    KeepAlive.of(CoreKey.CONTROL_KEEPALIVE_IDLE, core.getDuration(CoreKey.CONTROL_KEEPALIVE_IDLE),
                            CoreKey.CONTROL_KEEPALIVE_INTERVAL, core.getDuration(CoreKey.CONTROL_KEEPALIVE_INTERVAL),
                            CoreKey.CONTROL_KEEPALIVE_COUNT, core.getInt(CoreKey.CONTROL_KEEPALIVE_COUNT)),
                    security(core));
        }

        /** The {@code security.*} keys; a token file is read once, at start, and its surrounding whitespace dropped. */
        static SecuritySettings security(OptionValues core) {
            String token = core.getString(CoreKey.SECURITY_TOKEN);
            String tokenFile = core.getString(CoreKey.SECURITY_TOKEN_FILE);
            if (!token.isEmpty() && !tokenFile.isEmpty()) {
                throw new ConfigException(CoreKey.SECURITY_TOKEN_FILE, "set either " + CoreKey.SECURITY_TOKEN
                        + " or " + CoreKey.SECURITY_TOKEN_FILE + ", not both");
            }
            if (!tokenFile.isEmpty()) {
                try {
                    token = Files.readString(Path.of(tokenFile)).strip();
                } catch (IOException | RuntimeException e) {
                    throw new ConfigException(CoreKey.SECURITY_TOKEN_FILE, "cannot read " + tokenFile + ": " + e);
                }
                if (token.isEmpty()) {
                    throw new ConfigException(CoreKey.SECURITY_TOKEN_FILE, tokenFile + " is empty");
                }
            }
            String cert = core.getString(CoreKey.SECURITY_TLS_CERTIFICATE);
            String key = core.getString(CoreKey.SECURITY_TLS_PRIVATE_KEY);
            String trusted = core.getString(CoreKey.SECURITY_TLS_TRUSTED_CERTIFICATES);
            if (cert.isEmpty() != key.isEmpty()) {
                throw new ConfigException(cert.isEmpty() ? CoreKey.SECURITY_TLS_CERTIFICATE : CoreKey.SECURITY_TLS_PRIVATE_KEY,
                        "TLS needs both " + CoreKey.SECURITY_TLS_CERTIFICATE + " and " + CoreKey.SECURITY_TLS_PRIVATE_KEY);
            }
            return SecuritySettings.builder().token(token.isEmpty() ? null : token.getBytes(StandardCharsets.UTF_8))
                    .tlsCertificate(cert.isEmpty() ? null : Path.of(cert))
                    .tlsPrivateKey(key.isEmpty() ? null : Path.of(key))
                    .tlsTrustedCertificates(trusted.isEmpty() ? null : Path.of(trusted)).build();
        }
    }

    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1,
            Thread.ofPlatform().daemon().name("tent4j-control").factory(), NioIoHandler.newFactory());
    final Map<String, Service> services = new ConcurrentHashMap<>();
    /** This node's calls to peers: their connections and the calls waiting for replies. */
    final OutboundCalls calls;
    /** Caller segment name → the live connection that claimed it. */
    final Map<String, Channel> callers = new ConcurrentHashMap<>();
    final Settings settings;
    final Executor workers;
    private final Channel server;
    private final AtomicInteger connections = new AtomicInteger();
    /** Inbound connections still proving themselves (token handshake, TLS). */
    private final UnprovenConnections unproven;
    final AtomicInteger requestsInFlight = new AtomicInteger();
    /** Payload bytes of those requests, within {@link Settings#maxRequestBytes()}. */
    final AtomicLong requestBytesInFlight = new AtomicLong();
    final LongAdder requestBudgetRefusals = new LongAdder();
    final LongAdder strayReplies = new LongAdder();
    final LongAdder refusedCallers = new LongAdder();
    final LongAdder heldClaims = new LongAdder();
    final LongAdder refusedRequests = new LongAdder();
    private final LongAdder refusedConnections = new LongAdder();
    final LongAdder badFrames = new LongAdder();
    private final LongAdder authFailures = new LongAdder();
    /** {@code null} without TLS. */
    private final TlsContexts tls;
    private volatile String localSegment = "";

    public ControlPlaneNode(String host, int port, Executor workers, Settings settings) {
        this.workers = workers;
        this.settings = settings;
        this.tls = settings.security().tls() ? TlsContexts.of(settings.security()) : null;
        this.unproven = new UnprovenConnections(settings.maxConnections());
        this.calls = new OutboundCalls(this, group);
        try {
            ServerBootstrap sb = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, WATER_MARK)
                    .childHandler(pipeline(true));
            settings.keepAlive().configure(KeepAlive.Keys.NIO, sb::childOption);
            server = sb.bind(host, port).sync().channel();
        } catch (Exception e) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw new TransferException(ErrorCode.CONFIG, "cannot listen on control plane " + host + ":" + port + ": " + e, e);
        }
        if (!settings.security().authenticates()) {
            log.warn("{} is not set: the control plane on {}:{} and the transports' data ports serve any host that "
                    + "can reach them (TLS {})", CoreKey.SECURITY_TOKEN, host, port(), tls != null ? "on" : "off");
        }
    }

    /** How connections of this engine are secured; transports get the same through their context. */
    public SecuritySettings security() {
        return settings.security();
    }

    /** Connections that failed the token handshake, inbound or outbound. */
    public long authFailures() {
        return authFailures.sum();
    }

    private static final Duration HANDSHAKE_TIMEOUT = Duration.ofSeconds(10);
    static final AttributeKey<CompletableFuture<Void>> READY = AttributeKey.valueOf("tent4j.control.ready");

    /** Replies queued beyond this stop reading the connection's requests until the peer reads its replies. */
    static final WriteBufferWaterMark WATER_MARK = new WriteBufferWaterMark(256 << 10, 1 << 20);

    public void localSegment(String name) {
        this.localSegment = name;
    }

    /** This engine's segment name, as its frames carry it and its messages name it. */
    String localSegment() {
        return localSegment;
    }

    public int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    /** Inbound connections open now. */
    public int inboundConnections() {
        return connections.get();
    }

    /** Connections to peers open now (this node's calls go out on them). */
    public int outboundConnections() {
        return calls.openConnections();
    }

    /** Replies that came on a connection other than their call's, or for no call at all; ignored. */
    public long strayReplies() {
        return strayReplies.sum();
    }

    /** Requests refused because their caller name belongs to another live connection. */
    public long refusedCallers() {
        return refusedCallers.sum();
    }

    /** Connections whose first claim waited for the name's previous, still open connection. */
    public long heldClaims() {
        return heldClaims.sum();
    }

    /** Payload bytes of requests waiting for or on a worker, of all connections. */
    public long requestBytesInFlight() {
        return requestBytesInFlight.get();
    }

    /** Requests refused because their bytes would have taken the node past {@code control.max_request_bytes}. */
    public long requestBudgetRefusals() {
        return requestBudgetRefusals.sum();
    }

    /** Requests refused with TOO_MANY_REQUESTS or for exceeding their service's request size. */
    public long refusedRequests() {
        return refusedRequests.sum();
    }

    /** Inbound connections closed at once because {@code control.max_connections} were open. */
    public long refusedConnections() {
        return refusedConnections.sum();
    }

    /** Connections closed for a frame that was too large or malformed. */
    public long badFrames() {
        return badFrames.sum();
    }

    /** Whether connections are TLS. */
    boolean tls() {
        return tls != null;
    }

    ChannelInitializer<SocketChannel> pipeline(boolean inbound) {
        return new ChannelInitializer<>() {
            @Override
            protected void initChannel(SocketChannel ch) {
                boolean proves = settings.security().authenticates() || tls != null;
                if (inbound && !proves && !admit(ch)) {
                    return;
                }
                long idle = settings.idleTimeout().toMillis();
                if (idle > 0) {
                    ch.pipeline().addLast(new IdleStateHandler(idle, 0, 0, TimeUnit.MILLISECONDS));
                }
                CompletableFuture<Void> ready = CompletableFuture.completedFuture(null);
                if (tls != null) {
                    SslHandler ssl = inbound ? tls.server().newHandler(ch.alloc()) : tls.client().newHandler(ch.alloc());
                    ch.pipeline().addLast(ssl);
                    ready = TlsContexts.handshake(ssl);
                }
                SecuritySettings security = settings.security();
                if (security.authenticates()) {
                    TokenAuthHandler auth = new TokenAuthHandler(security.handshake(!inbound), "control plane of '"
                            + localSegment + "'", HANDSHAKE_TIMEOUT, authFailures);
                    ch.pipeline().addLast(auth);
                    ready = ready.thenCombine(auth.authenticated(), (x, y) -> null);
                }
                if (inbound && proves) {
                    // counted only once it proved itself: a flood of connections that never do cannot lock out peers
                    // that do; until then it holds one of max_connections pre-authentication slots, oldest evicted
                    unproven.await(ch, ready, ControlPlaneNode.this::admit, oldest -> {
                        refusedConnections.increment();
                        RefusalLog.warnSometimes(log, refusedConnections, "control plane of '{}': closing {}: it has not "
                                + "authenticated and {} newer connections wait to ({})", localSegment, oldest.remoteAddress(),
                                settings.maxConnections(), CoreKey.CONTROL_MAX_CONNECTIONS);
                    });
                }
                ch.attr(READY).set(ready);
                RequestLimits limits = new RequestLimits(ControlPlaneNode.this);
                ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(settings.maxFrame(), 0, 4, 0, 4),
                        new LengthFieldPrepender(4), new FrameDecoder(ControlPlaneNode.this), new CallerClaims(ControlPlaneNode.this),
                        limits, new Dispatcher(ControlPlaneNode.this, limits));
            }
        };
    }

    /** Counts an inbound connection against {@code control.max_connections}, or closes it; whether it stays. */
    private boolean admit(Channel ch) {
        if (connections.incrementAndGet() > settings.maxConnections()) {
            connections.decrementAndGet();
            refusedConnections.increment();
            RefusalLog.warnSometimes(log, refusedConnections, "control plane of '{}': refusing connection from {}: {} inbound connections are open ({})",
                    localSegment, ch.remoteAddress(), settings.maxConnections(), CoreKey.CONTROL_MAX_CONNECTIONS);
            ch.close();
            return false;
        }
        ch.closeFuture().addListener(f -> connections.decrementAndGet());
        return true;
    }

    @Override
    public void serve(String service, Handler handler) {
        serve(service, settings.maxFrame(), handler);
    }

    /**
     * Serves {@code service}, refusing requests larger than {@code maxRequestBytes} when they arrive, before any worker
     * sees them.
     */
    public void serve(String service, int maxRequestBytes, Handler handler) {
        if (services.putIfAbsent(service, new Service(handler, maxRequestBytes)) != null) {
            throw new IllegalStateException("control-plane service '" + service + "' is already served");
        }
    }

    @Override
    public byte[] call(SegmentDescriptor peer, String service, byte[] request, Duration timeout) {
        return call(peer.host(), peer.controlPort(), service, request, timeout);
    }

    /** Calls {@code service} on the control plane at {@code host:port} and waits for the reply. */
    public byte[] call(String host, int port, String service, byte[] request, Duration timeout) {
        CompletableFuture<byte[]> reply = calls.callAsync(host, port, service, request);
        try {
            return reply.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            TransferException te = new TransferException(ErrorCode.TIMEOUT, "control plane " + host + ":" + port
                    + " did not answer '" + service + "' within " + timeout.toMillis() + " ms");
            reply.completeExceptionally(te); // forgets the call, so a late reply finds nothing
            throw te;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            reply.cancel(false);
            throw new TransferException(ErrorCode.CANCELED, "interrupted while calling " + host + ":" + port);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof TransferException te) {
                throw new TransferException(te.code(), te.getMessage(), te);
            }
            throw new TransferException(ErrorCode.PEER_FAILED, "'" + service + "' on " + host + ":" + port + " failed: " + e.getCause(), e.getCause());
        }
    }

    ByteBuf frame(Channel ch, byte kind, long id, String service, byte[] payload) {
        byte[] s = service.getBytes(StandardCharsets.UTF_8);
        byte[] c = localSegment.getBytes(StandardCharsets.UTF_8);
        ByteBuf buf = ch.alloc().buffer(1 + 8 + 2 + s.length + 2 + c.length + payload.length);
        buf.writeByte(kind).writeLong(id).writeShort(s.length).writeBytes(s).writeShort(c.length).writeBytes(c).writeBytes(payload);
        return buf;
    }

    static byte[] errorPayload(ErrorCode code, String message) {
        byte[] msg = String.valueOf(message).getBytes(StandardCharsets.UTF_8);
        byte[] reply = new byte[msg.length + 1];
        reply[0] = (byte) code.ordinal();
        System.arraycopy(msg, 0, reply, 1, msg.length);
        return reply;
    }

    /** Refuses a request with an error reply naming why; stops reading while the peer does not read replies. */
    void refuse(Channel ch, long id, String service, ErrorCode code, String why) {
        refusedRequests.increment();
        RefusalLog.warnSometimes(log, refusedRequests, "control plane of '{}': refusing '{}' from {}: {}", localSegment, service, ch.remoteAddress(), why);
        ch.writeAndFlush(frame(ch, ControlFrame.ERROR, id, service, errorPayload(code, "segment '" + localSegment + "': " + why)));
        if (!ch.isWritable()) {
            ch.config().setAutoRead(false);
        }
    }

    void answer(Channel ch, long id, String service, Service s, String caller, byte[] request) {
        byte kind = ControlFrame.REPLY;
        byte[] reply;
        try {
            if (s == null) {
                throw new TransferException(ErrorCode.PROTOCOL, "segment '" + localSegment + "' serves no '" + service + "'");
            }
            reply = s.handler().handle(caller, request);
        } catch (Exception e) {
            kind = ControlFrame.ERROR;
            reply = errorPayload(e instanceof TransferException te ? te.code() : ErrorCode.PEER_FAILED, e.getMessage());
        }
        ch.writeAndFlush(frame(ch, kind, id, service, reply));
    }

    /** Calls {@code service} at {@code host:port}; fails with TIMEOUT after {@code control.call_timeout}. */
    public CompletableFuture<byte[]> callAsync(String host, int port, String service, byte[] request) {
        return calls.callAsync(host, port, service, request);
    }

    @Override
    public void close() {
        server.close().syncUninterruptibly();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        calls.closed();
    }

    record Service(Handler handler, int maxRequestBytes) {
    }
}
