package org.tent4j.transport.tcp;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.util.concurrent.DefaultThreadFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferException;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.LocalFile;
import org.tent4j.spi.LocalFiles;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SecuritySettings;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportMetrics;
import org.tent4j.transport.netty.KeepAlive;
import org.tent4j.transport.netty.TlsContexts;

/**
 * The tcp transport of one engine: a data-port server (the target side, {@link DataPortServer}) and
 * {@link TcpPeerConnection}s to peers (the initiator side), all on one Netty event loop group of {@code io_threads}
 * threads. This class reads the options, publishes and registers, and connects to peers.
 */
public final class TcpTransport implements Transport {
    private static final Logger log = LoggerFactory.getLogger(TcpTransport.class);

    /** Published in {@link #segmentAttributes()}: the data port peers connect to. */
    public static final String ATTR_PORT = "port";
    /** Published in {@link #segmentAttributes()}: the largest slice this target accepts, so initiators check first. */
    public static final String ATTR_MAX_FRAME = "max_frame";

    private static final long SWEEP_PERIOD_MS = 50;

    private final TransportContext context;
    private final IoMode ioMode;
    private final int lanes;
    private final long maxFrame;
    private final Duration connectTimeout;
    private final KeepAlive keepAlive;
    private final EventLoopGroup group;
    /** The target side: the data port and the inbound connections. */
    private final DataPortServer server;
    private final int port;
    private final RailAddresses addresses;
    private final RailConnector rails;
    private final Duration railRecheck;
    private final BufferPins pins = new BufferPins();
    private final PayloadCounters counters = new PayloadCounters();
    private final InboundLimits limits;
    /** remote file segments (issue 12): file request buffers of all inbound connections. */
    private final FileBufferBudget fileBuffers;
    private final SecuritySettings security;
    /** remote file segments (issue 12): peers' requests for this engine's files; null where the engine has none. */
    private final FileServing fileServing;
    /** {@code null} without TLS. */
    private final TlsContexts tls;
    private final Set<TcpPeerConnection> connections = ConcurrentHashMap.newKeySet();
    private final ScheduledFuture<?> sweeper;
    private volatile boolean closed;

    private TcpTransport(TransportContext context) {
        this.context = context;
        OptionValues o = context.options();
        this.lanes = o.getInt("lanes");
        if (lanes < 1 || lanes > 64) {
            throw new ConfigException("transports.tcp.lanes", "must be in [1, 64], got " + lanes);
        }
        int ioThreads = o.getInt("io_threads");
        if (ioThreads < 1) {
            throw new ConfigException("transports.tcp.io_threads", "must be >= 1, got " + ioThreads);
        }
        int wantedPort = o.getInt("port");
        if (wantedPort < 0 || wantedPort > 65535) {
            throw new ConfigException("transports.tcp.port", "must be in [0, 65535], got " + wantedPort);
        }
        this.maxFrame = o.getSize("max_frame");
        if (maxFrame < 1 || maxFrame > WireProtocol.MAX_FRAME_LIMIT) {
            throw new ConfigException("transports.tcp.max_frame", "must be in [1, " + WireProtocol.MAX_FRAME_LIMIT
                    + "] bytes, got " + maxFrame);
        }
        this.connectTimeout = o.getDuration("connect_timeout");
        if (connectTimeout.isNegative() || connectTimeout.isZero()) {
            throw new ConfigException("transports.tcp.connect_timeout", "must be > 0, got " + connectTimeout);
        }
        Duration railConnectTimeout = o.getDuration("rail_connect_timeout");
        if (railConnectTimeout.isNegative()) {
            throw new ConfigException("transports.tcp.rail_connect_timeout", "must be >= 0, got " + railConnectTimeout);
        }
        this.railRecheck = o.getDuration("rail_recheck");
        if (!railRecheck.isPositive()) {
            throw new ConfigException("transports.tcp.rail_recheck", "must be > 0, got " + railRecheck);
        }
        this.addresses = RailAddresses.resolve(o.getString("interfaces"), context.host());
        this.keepAlive = KeepAlive.of("transports.tcp.keepalive_idle", o.getDuration("keepalive_idle"),
                "transports.tcp.keepalive_interval", o.getDuration("keepalive_interval"),
                "transports.tcp.keepalive_count", o.getInt("keepalive_count"));
        int maxConnections = o.getInt("max_connections");
        if (maxConnections < 1) {
            throw new ConfigException("transports.tcp.max_connections", "must be >= 1, got " + maxConnections);
        }
        Duration idleTimeout = o.getDuration("idle_timeout");
        if (idleTimeout.isNegative()) {
            throw new ConfigException("transports.tcp.idle_timeout", "must be >= 0 (0 = never), got " + idleTimeout);
        }
        long maxQueued = o.getSize("max_queued_bytes");
        if (maxQueued < InboundLimits.MIN_ANSWER_CHARGE || maxQueued > Integer.MAX_VALUE) {
            throw new ConfigException("transports.tcp.max_queued_bytes", "must be in [" + InboundLimits.MIN_ANSWER_CHARGE
                    + ", " + Integer.MAX_VALUE + "] bytes, got " + maxQueued);
        }
        this.limits = new InboundLimits(maxConnections, idleTimeout, maxQueued);
        long maxFileBuffers = o.getSize("max_file_buffer_bytes");
        if (maxFileBuffers < maxFrame) {
            throw new ConfigException("transports.tcp.max_file_buffer_bytes", "must be >= transports.tcp.max_frame ("
                    + maxFrame + " bytes), so that one file request of the largest size fits, got " + maxFileBuffers);
        }
        this.fileBuffers = new FileBufferBudget(maxFileBuffers);
        // every refusal is a log line and, here, a metric: tent4j_transport_tcp_<name>
        TransportMetrics m = context.metrics();
        m.gauge("tcp_auth_failures", "data connections that failed the token handshake or TLS", () -> limits.authFailures.sum());
        m.gauge("tcp_refused_connections", "inbound data connections refused at transports.tcp.max_connections",
                () -> limits.refusedConnections.sum());
        m.gauge("tcp_idle_closed", "inbound data connections closed after transports.tcp.idle_timeout", () -> limits.idleClosed.sum());
        m.gauge("tcp_read_pauses", "times an inbound connection stopped reading because its peer left answers unread",
                limits::readPauses);
        m.gauge("tcp_file_buffer_pauses", "times an inbound connection stopped reading because the file request "
                + "buffers of all connections reached transports.tcp.max_file_buffer_bytes", fileBuffers::pauses);
        m.gauge("tcp_connections", "data connections open now: inbound (peers' lanes) and outbound (lanes to peers "
                + "that are alive)", this::inboundConnections, "direction", "inbound");
        m.gauge("tcp_connections", "data connections open now: inbound (peers' lanes) and outbound (lanes to peers "
                + "that are alive)", this::liveLanes, "direction", "outbound");
        m.gauge("tcp_pinned_accesses", "peer requests being served now, each pinning a registered buffer",
                pins::held);
        m.gauge("tcp_file_buffer_bytes", "bytes of file request buffers held by inbound connections now",
                fileBuffers::used);
        m.gauge("tcp_file_buffer_peak_bytes", "the most bytes of file request buffers inbound connections held at once",
                fileBuffers::peak);
        this.fileServing = context.localFiles() == LocalFiles.NONE ? null
                : new FileServing(context.localFiles(), context.workers(), fileBuffers); // remote file segments (issue 12)
        this.security = context.security();
        this.tls = security.tls() ? TlsContexts.of(security) : null;
        this.ioMode = IoMode.resolve(o.getString("io_mode"));
        this.group = new MultiThreadIoEventLoopGroup(ioThreads,
                new DefaultThreadFactory("tent4j-tcp-" + context.segmentName(), true), ioMode.handlerFactory());
        try {
            this.server = new DataPortServer(context, group, ioMode, keepAlive, addresses, wantedPort, maxFrame,
                    connectTimeout, pins, counters, limits, fileServing, tls);
            this.port = server.port();
            this.rails = new RailConnector(new RailConnector.Settings(context.segmentName(), context.machineId(), group,
                    ioMode, keepAlive, connectTimeout, railConnectTimeout, railRecheck, security, tls,
                    limits.authFailures, context.clock()), addresses);
            m.gauge("tcp_lane_connects", "outbound data connections (lanes) that connected since start: each rail of a "
                    + "new connection and each rail added to an open one", this::laneConnects);
            // deadlines are enforced to this granularity
            this.sweeper = context.scheduler().scheduleWithFixedDelay(this::sweep, SWEEP_PERIOD_MS, SWEEP_PERIOD_MS,
                    TimeUnit.MILLISECONDS);
        } catch (RuntimeException e) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS); // also closes a bound server channel
            throw e;
        }
        log.info("tcp transport of segment '{}' listening on {} port {} (io {}, {} lanes per peer and rail, max_frame {}, "
                        + "token {}, TLS {})", context.segmentName(), addresses.multiRail() ? addresses.published()
                        : context.host(), port, ioMode.name(), lanes, maxFrame,
                security.authenticates() ? "required" : "off", tls != null ? "on" : "off");
    }

    static TcpTransport start(TransportContext context) {
        return new TcpTransport(context);
    }

    @Override
    public String id() {
        return TcpTransportProvider.ID;
    }

    /** The bound data port. */
    public int port() {
        return port;
    }

    /** The Netty I/O engine in use: {@code epoll}, {@code io_uring} or {@code nio}. */
    public String ioMode() {
        return ioMode.name();
    }

    /** Payload bytes (WRITEs received as target, READ answers as initiator) the kernel read straight into memory. */
    public long payloadBytesLanded() {
        return counters.landed.sum();
    }

    /** Payload bytes that arrived in a read buffer together with a header and were copied into memory. */
    public long payloadBytesCopied() {
        return counters.copied.sum();
    }

    @Override
    public Map<String, String> segmentAttributes() {
        String published = addresses.published();
        return published == null ? Map.of(ATTR_PORT, Integer.toString(port), ATTR_MAX_FRAME, Long.toString(maxFrame))
                : Map.of(ATTR_PORT, Integer.toString(port), ATTR_MAX_FRAME, Long.toString(maxFrame),
                        RailAddresses.ATTR_ADDRESSES, published);
    }

    @Override
    public Optional<Map<String, String>> registerBuffer(LocalBuffer buffer) {
        // sockets reach host memory only; device memory would need a bounce buffer, which this transport leaves to
        // transports that own a device platform
        if (buffer.location().kind() != MemoryKind.CPU) {
            return Optional.empty();
        }
        return Optional.of(Map.of());
    }

    // remote file segments (issue 12): begin
    /** Serves peers' requests for the file (the engine reads or writes it for them), when the engine offers its files. */
    @Override
    public Optional<Map<String, String>> registerFile(LocalFile file) {
        return fileServing == null ? Optional.empty() : Optional.of(Map.of());
    }
    // remote file segments (issue 12): end

    /**
     * Blocks until no peer request reads or writes {@code buffer} any more, so the engine may free it afterwards. A peer
     * that holds it past the transfer timeout (for instance by not reading a READ answer) loses its connections.
     */
    @Override
    public void unregisterBuffer(LocalBuffer buffer) {
        boolean idle = pins.retire(buffer, context.transferTimeout(), () -> {
            log.warn("segment '{}': peers still use buffer {} [0x{}, +{}) after {}; closing inbound tcp connections",
                    context.segmentName(), buffer.id(), Long.toHexString(buffer.address()), buffer.length(),
                    context.transferTimeout());
            server.closeInbound(connectTimeout);
        });
        if (!idle) {
            // Returning would let the runtime free memory a socket may still read from or write into.
            throw new TransferException(ErrorCode.TIMEOUT, "tcp: buffer " + buffer.id() + " [0x"
                    + Long.toHexString(buffer.address()) + ", +" + buffer.length() + ") of segment '" + context.segmentName()
                    + "' is still in use by a tcp socket after closing its inbound connections; it stays allocated");
        }
        pins.purge(context.localMemory());
    }

    @Override
    public PeerConnection connect(SegmentDescriptor peer) {
        if (closed) {
            throw new TransferException(ErrorCode.ENGINE_CLOSED, "tcp transport of segment '" + context.segmentName()
                    + "' is closed; cannot connect to segment '" + peer.name() + "'");
        }
        Map<String, String> attrs = peer.transportAttributes(TcpTransportProvider.ID);
        String portText = attrs.get(ATTR_PORT);
        if (portText == null) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "tcp: segment '" + peer.name()
                    + "' publishes no tcp data port (tcp attributes: " + attrs + ")");
        }
        int peerPort;
        long peerMaxFrame;
        try {
            peerPort = Integer.parseInt(portText.strip());
            String mf = attrs.get(ATTR_MAX_FRAME);
            peerMaxFrame = mf == null ? Long.MAX_VALUE : Long.parseLong(mf.strip());
        } catch (NumberFormatException e) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "tcp: segment '" + peer.name()
                    + "' publishes malformed tcp attributes " + attrs, e);
        }
        if (peerPort < 1 || peerPort > 65535) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "tcp: segment '" + peer.name()
                    + "' publishes tcp port " + peerPort + ", outside [1, 65535]");
        }
        List<RailConnector.Rail> candidates = rails.candidates(peer, peerPort);
        // a pair that failed a moment ago is not waited for again, unless nothing else is left to try
        List<RailConnector.Rail> fresh = candidates.stream().filter(r -> !rails.recentlyUnreachable(r)).toList();
        List<RailConnector.Rail> tried = fresh.isEmpty() ? candidates : fresh;
        TcpPeerConnection connection = new TcpPeerConnection(this, peer, tried, peerMaxFrame, lanes, counters,
                context.clock());
        List<Integer> up = rails.connect(connection, tried, peer, lanes);
        connection.keep(up, railRecheck);
        connection.missing(candidates.stream().filter(r -> !tried.contains(r)).toList(), railRecheck);
        connections.add(connection);
        if (closed) {
            connection.close("tcp transport of segment '" + context.segmentName() + "' closed");
        }
        return connection;
    }

    /** Tries a rail a connection lacks, in the background (see {@link RailConnector#probe}). */
    void probe(RailConnector.Rail rail, SegmentDescriptor peer, java.util.function.Consumer<Boolean> outcome) {
        if (closed) {
            outcome.accept(false);
            return;
        }
        rails.probe(rail, peer, outcome);
    }

    /** Connects lanes over a rail a connection lacks, in the background (see {@link RailConnector#attach}). */
    void attach(RailConnector.Rail rail, SegmentDescriptor peer, List<InitiatorLane> lanes,
                java.util.function.Consumer<Boolean> outcome) {
        if (closed) {
            outcome.accept(false);
            return;
        }
        rails.attach(rail, peer, lanes, outcome);
    }

    /** What {@code tent4j_transport_tcp_lane_connects} reports. */
    long laneConnects() {
        return rails.laneConnects.sum();
    }

    Duration railRecheck() {
        return railRecheck;
    }

    /** Connections that failed the token handshake, either side. */
    public long authFailures() {
        return limits.authFailures.sum();
    }

    /** How many peer accesses hold {@code buffer} right now; 0 once no socket can touch it. */
    int pinsHeld(LocalBuffer buffer) {
        return pins.holders(buffer);
    }

    /** Inbound connections refused because {@code max_connections} were open. */
    public long refusedConnections() {
        return limits.refusedConnections.sum();
    }

    /** Inbound connections closed after {@code idle_timeout} without a request. */
    public long idleConnectionsClosed() {
        return limits.idleClosed.sum();
    }

    /** Times an inbound connection stopped reading requests because its peer did not read the answers. */
    public long readPauses() {
        return limits.readPauses();
    }

    boolean awaitReadPauses(long n, Duration patience) throws InterruptedException {
        return limits.awaitReadPauses(n, patience);
    }

    /** The most answers one inbound connection had queued (not yet in its socket) while it could not write. */
    long queuedAnswersPeak() {
        return limits.queuedPeak();
    }

    /** Waits (on the release, not by polling) until no peer access holds {@code buffer}; how many still do. */
    int awaitPinsReleased(LocalBuffer buffer, Duration patience) {
        return pins.awaitReleased(buffer, patience);
    }

    /** Inbound connections open now (the {@code tcp_connections{direction="inbound"}} gauge). */
    private int inboundConnections() {
        DataPortServer s = server; // null while the constructor still binds
        return s == null ? 0 : s.inboundConnections();
    }

    /** Outbound lanes alive now, of all peers (the {@code tcp_connections{direction="outbound"}} gauge). */
    private int liveLanes() {
        int n = 0;
        for (TcpPeerConnection c : connections) {
            n += c.liveLanes();
        }
        return n;
    }

    void forget(TcpPeerConnection connection) {
        connections.remove(connection);
    }

    boolean onEventLoop() {
        for (var executor : group) {
            if (executor.inEventLoop()) {
                return true;
            }
        }
        return false;
    }

    private void sweep() {
        try {
            for (TcpPeerConnection c : connections) {
                c.sweep();
            }
            pins.purge(context.localMemory());
        } catch (RuntimeException e) {
            log.warn("tcp deadline sweep failed", e);
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        sweeper.cancel(false);
        String reason = "tcp transport of segment '" + context.segmentName() + "' closed";
        for (TcpPeerConnection c : connections) {
            c.close(reason);
        }
        server.close(connectTimeout);
        if (!group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS)) {
            // An I/O thread still running may still write into registered memory: the engine must not free it.
            throw new TransferException(ErrorCode.TIMEOUT, "tcp transport of segment '" + context.segmentName()
                    + "': I/O threads did not stop within 5 s of close; registered memory must stay allocated");
        }
        log.info("tcp transport of segment '{}' closed", context.segmentName());
    }
}
