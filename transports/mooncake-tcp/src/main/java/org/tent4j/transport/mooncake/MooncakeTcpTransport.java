package org.tent4j.transport.mooncake;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportContext;

/**
 * The mooncake-tcp transport of one engine: a Mooncake TE TCP target on a data port of its own ({@link MooncakeTarget}), and
 * initiators towards peers ({@link MooncakeConnection}).
 *
 * <p>The target behaves as Mooncake's C++ target does: one thread per connection, requests served one after another
 * until the initiator closes; a request must fall inside one registered buffer ({@code [addr, addr + size)}, size 0
 * or an overflowing range is invalid), else v1 closes the connection without a word and v2 answers a REJECT status
 * and then closes. tent4j adds one check Mooncake has no use for: a WRITE into a READ_ONLY buffer is refused the same
 * way, with status code 2.
 */
final class MooncakeTcpTransport implements Transport {
    private static final Logger LOG = LoggerFactory.getLogger(MooncakeTcpTransport.class);

    /** Published in {@link #segmentAttributes()}: the data port, Mooncake's {@code tcp_data_port}. */
    static final String ATTR_PORT = "port";
    /** Published in {@link #segmentAttributes()}: Mooncake's {@code tcp_proto_version}; absent means 1. */
    static final String ATTR_PROTO_VERSION = "proto_version";
    /** Published in {@link #segmentAttributes()} when the handshake socket runs: its port. */
    static final String ATTR_HANDSHAKE_PORT = "handshake_port";
    /** This target answers v2 framing (and v1, which needs no advertising). */
    static final int PROTO_VERSION = 2;

    private final TransportContext context;
    private final int lanes;
    private final int pipeline;
    private final KeepAlive keepAlive;
    private final boolean forceV1;
    private final boolean v1WriteFence;
    private final Duration connectTimeout;
    /** Where this engine is published for Mooncake peers, or null. */
    private final MooncakeMetadata metadata;
    private final String metadataName;
    /** Mooncake's P2PHANDSHAKE mode: segments named {@code <ip>:<port>} are asked over their handshake socket. */
    private final boolean p2p;
    /** What a Mooncake peer may address, by address: the buffers of the descriptor the handshake socket hands out. */
    private final ConcurrentSkipListMap<Long, LocalBuffer> published = new ConcurrentSkipListMap<>();
    private final Set<Thread> threads = ConcurrentHashMap.newKeySet();
    private final Set<MooncakeConnection> connections = ConcurrentHashMap.newKeySet();
    /** The data port and the handshake socket: where Mooncake initiators reach this engine. */
    private final MooncakeTarget target;
    private volatile boolean closed;

    /** A listener could not be opened: which option names its port. */
    static final class ListenException extends Exception {
        final String option;
        final int port;

        ListenException(String option, int port, IOException cause) {
            super(cause);
            this.option = option;
            this.port = port;
        }
    }

    KeepAlive keepAlive() {
        return keepAlive;
    }

    MooncakeTcpTransport(TransportContext context, int port, int handshakePort, int lanes, boolean forceV1,
                         MooncakeMetadata metadata, String metadataName, boolean p2p) throws ListenException {
        this.context = context;
        this.p2p = p2p;
        this.metadata = metadata;
        this.metadataName = metadataName;
        this.lanes = lanes;
        this.forceV1 = forceV1;
        this.v1WriteFence = context.options().getBoolean("v1_write_fence");
        this.pipeline = context.options().getInt("pipeline");
        this.keepAlive = KeepAlive.of(context.options());
        this.connectTimeout = context.options().getDuration("connect_timeout");
        this.target = new MooncakeTarget(this, context, port, handshakePort, context.options().getInt("max_connections"));
        if (target.handshakePort() >= 0) {
            LOG.info("mooncake-tcp: Mooncake initiators in P2PHANDSHAKE mode reach segment '{}' as '{}'",
                    context.segmentName(), mooncakeName());
        }
        target.start();
        if (metadata != null) {
            try {
                publish();
            } catch (TransferException e) {
                close();
                throw e;
            }
            LOG.info("mooncake-tcp: segment '{}' published as Mooncake segment '{}' at {}", context.segmentName(),
                    metadataName, metadata.endpoint());
        }
    }

    /**
     * Writes this engine's Mooncake descriptor and rpc_meta. Under a lock: two registrations publishing at once
     * must not let the older descriptor land last.
     */
    private synchronized void publish() {
        metadata.publish(mooncakeDescriptor(), new MooncakeKeys.RpcMeta(context.host(), target.handshakePort()));
    }

    private void republish(String why) {
        if (metadata == null || closed) {
            return;
        }
        try {
            publish();
        } catch (TransferException e) {
            // the registration itself stands; Mooncake peers see the change at the next successful publish
            LOG.warn("mooncake-tcp: could not republish Mooncake segment '{}' after {}: {}", metadataName, why,
                    e.getMessage());
        }
    }

    @Override
    public String id() {
        return MooncakeTcpTransportProvider.ID;
    }

    @Override
    public Map<String, String> segmentAttributes() {
        if (target.handshakePort() < 0) {
            return Map.of(ATTR_PORT, Integer.toString(target.port()), ATTR_PROTO_VERSION, Integer.toString(PROTO_VERSION));
        }
        return Map.of(ATTR_PORT, Integer.toString(target.port()), ATTR_PROTO_VERSION, Integer.toString(PROTO_VERSION),
                ATTR_HANDSHAKE_PORT, Integer.toString(target.handshakePort()));
    }

    @Override
    public Optional<Map<String, String>> registerBuffer(LocalBuffer buffer) {
        // host memory only: Mooncake bounces GPU buffers through host memory, which this transport leaves to staging
        if (buffer.location().kindOrCpu() != MemoryKind.CPU) {
            return Optional.empty();
        }
        if (buffer.permission().allowsRemote(Opcode.READ)) {
            published.put(buffer.address(), buffer);
            republish("registering " + MooncakeWire.range(buffer.address(), buffer.length()));
        }
        return Optional.of(Map.of());
    }

    /**
     * The name Mooncake engines know this one by: the one published in the metadata store, else (P2P mode) the
     * handshake socket's {@code <host>:<port>}.
     */
    String mooncakeName() {
        if (metadata != null) {
            return metadataName;
        }
        String host = context.host();
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + target.handshakePort();
    }

    /**
     * A Mooncake segment by its Mooncake name: from the Mooncake metadata store this engine is configured with, or
     * in P2P mode from the segment's own handshake socket. Only asked once tent4j's own directory did not know the
     * name, so a Mooncake segment never shadows a tent4j one.
     */
    @Override
    public Optional<SegmentDescriptor> resolveSegment(String segmentName) {
        MooncakeSegmentDescriptor d;
        String host;
        if (metadata != null) {
            d = metadata.segment(segmentName);
            host = metadata.rpcMeta(segmentName).host();
        } else if (p2p) {
            host = MooncakeKeys.parseP2pName(segmentName).host();
            d = MooncakeSegmentDescriptor.fetchP2p(segmentName, mooncakeDescriptor().toJson().getBytes(StandardCharsets.UTF_8),
                    connectTimeout);
        } else {
            return Optional.empty();
        }
        // the name asked for is the segment's name here, whatever the peer calls itself (Mooncake keys it by name)
        return Optional.of(d.renamed(segmentName).toSegmentDescriptor(host, "mooncake:" + segmentName));
    }

    /** This engine as a Mooncake TCP engine describes itself: every buffer a peer may reach, at its address. */
    MooncakeSegmentDescriptor mooncakeDescriptor() {
        List<MooncakeSegmentDescriptor.Buffer> buffers = new ArrayList<>();
        for (LocalBuffer b : published.values()) {
            buffers.add(new MooncakeSegmentDescriptor.Buffer(b.location().kindOrCpu() == MemoryKind.CPU ? "cpu:0"
                    : b.location().toString(), b.address(), b.length()));
        }
        return new MooncakeSegmentDescriptor(mooncakeName(), List.of("tcp"), target.port(), PROTO_VERSION, buffers);
    }

    /**
     * Returns once no served request touches {@code buffer}. A request already checked is let finish for up to the
     * transfer timeout; past that its connection is closed, which ends the blocked read or write at once.
     */
    @Override
    public void unregisterBuffer(LocalBuffer buffer) {
        if (published.remove(buffer.address(), buffer)) {
            republish("unregistering " + MooncakeWire.range(buffer.address(), buffer.length()));
        }
        target.awaitReleased(buffer);
    }

    /** Whether a served request is touching {@code buffer} now. */
    boolean isPinned(LocalBuffer buffer) {
        return target.isPinned(buffer);
    }

    @Override
    public Optional<String> unreachableReason(SegmentDescriptor peer) {
        try {
            endpoint(peer);
            return Optional.empty();
        } catch (TransferException e) {
            return Optional.of(e.getMessage());
        }
    }

    @Override
    public PeerConnection connect(SegmentDescriptor peer) {
        if (closed) {
            throw new TransferException(ErrorCode.ENGINE_CLOSED, "mooncake-tcp of segment '" + context.segmentName()
                    + "' is closed; cannot connect to segment '" + peer.name() + "'");
        }
        Endpoint e = endpoint(peer);
        boolean v2 = !forceV1 && e.protoVersion >= 2;
        MooncakeConnection c = new MooncakeConnection(this, peer.name(), e.address, lanes, v2 ? pipeline : 1, v2,
                v1WriteFence, connectTimeout, keepAlive, context.clock());
        try {
            c.open();
        } catch (IOException ex) {
            c.close();
            throw new TransferException(ErrorCode.PEER_UNREACHABLE, "cannot connect to segment '" + peer.name()
                    + "' at mooncake-tcp " + e.address.getHostString() + ":" + e.address.getPort() + ": " + ex, ex);
        }
        connections.add(c);
        if (closed) { // close() ran while we connected and may have missed this one
            c.close();
        }
        return c;
    }

    private record Endpoint(InetSocketAddress address, int protoVersion) {
    }

    /** Where a peer's Mooncake data port is, from what it published under this transport's id. */
    private static Endpoint endpoint(SegmentDescriptor peer) {
        Map<String, String> attrs = peer.transportAttributes(MooncakeTcpTransportProvider.ID);
        String port = attrs.get(ATTR_PORT);
        if (port == null) {
            throw new TransferException(ErrorCode.PEER_UNREACHABLE, "segment '" + peer.name()
                    + "' publishes no mooncake-tcp port");
        }
        int p = parseInt(port, peer, ATTR_PORT);
        if (p < 1 || p > 65535) {
            throw new TransferException(ErrorCode.PEER_UNREACHABLE, "segment '" + peer.name()
                    + "' publishes mooncake-tcp port " + p + ", outside [1, 65535]");
        }
        String version = attrs.get(ATTR_PROTO_VERSION);
        int v = version == null ? 1 : parseInt(version, peer, ATTR_PROTO_VERSION);
        if (peer.host() == null || peer.host().isEmpty()) {
            throw new TransferException(ErrorCode.PEER_UNREACHABLE, "segment '" + peer.name() + "' publishes no host");
        }
        return new Endpoint(InetSocketAddress.createUnresolved(peer.host(), p), v);
    }

    private static int parseInt(String text, SegmentDescriptor peer, String attribute) {
        try {
            return Integer.parseInt(text);
        } catch (NumberFormatException e) {
            throw new TransferException(ErrorCode.PEER_UNREACHABLE, "segment '" + peer.name()
                    + "' publishes mooncake-tcp " + attribute + " '" + text + "', not an integer");
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (metadata != null) {
            try {
                metadata.remove(metadataName);
            } catch (TransferException e) {
                LOG.warn("mooncake-tcp: could not remove Mooncake segment '{}' from {}: {}", metadataName,
                        metadata.endpoint(), e.getMessage());
            }
            metadata.close();
        }
        target.close();
        for (MooncakeConnection c : new ArrayList<>(connections)) {
            c.close();
        }
        // after close() returns no thread of ours may touch registered memory: the engine frees it next
        for (Thread t : List.copyOf(threads)) {
            join(t);
        }
    }

    void connectionClosed(MooncakeConnection c) {
        connections.remove(c);
    }

    String segmentName() {
        return context.segmentName();
    }

    Thread start(String name, Runnable body, boolean virtual) {
        Thread.Builder builder = virtual ? Thread.ofVirtual().name(name) : Thread.ofPlatform().daemon().name(name);
        Thread t = builder.unstarted(() -> {
            try {
                body.run();
            } finally {
                threads.remove(Thread.currentThread());
            }
        });
        threads.add(t);
        t.start();
        return t;
    }

    static void join(Thread t) {
        if (t != null && t != Thread.currentThread()) {
            try {
                t.join(2_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    static void closeQuietly(Closeable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (IOException ignored) {
            // closing is all we wanted
        }
    }
}
