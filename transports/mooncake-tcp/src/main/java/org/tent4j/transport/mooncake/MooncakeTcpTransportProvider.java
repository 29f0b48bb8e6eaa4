package org.tent4j.transport.mooncake;

import java.util.List;

import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionSpec.Type;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;

/**
 * {@code mooncake-tcp}: speaks the classic Mooncake Transfer Engine TCP data protocol, so a tent4j engine can read and
 * write a Mooncake engine's memory and serve Mooncake initiators. See {@link MooncakeWire} for the bytes and
 * docs/INTEROP.md for what interoperates.
 */
public final class MooncakeTcpTransportProvider implements TransportProvider {
    public static final String ID = "mooncake-tcp";
    static final String OPTION_METADATA = "transports." + ID + ".metadata";
    /**
     * After tcp (100): between two tent4j engines tent4j's own tcp is the better wire (pipelined, authenticated), so
     * this one carries a request only when asked for or when it is the only one the peer runs.
     */
    static final int RANK = 200;
    /** One request per slice on this wire; a larger request is cut by the runtime rather than sent whole. */
    static final long MAX_SLICE_SIZE = 1L << 30;

    private static final TransportCapabilities CAPABILITIES = TransportCapabilities.builder()
            .maxSliceSize(MAX_SLICE_SIZE).rank(RANK).build();

    private static final List<OptionSpec> OPTIONS = List.of(
            OptionSpec.of("lanes", Type.INT, 4, "connections per peer, each a path "
                    + "(Mooncake's MC_TCP_LANES_PER_PEER, 4)"),
            OptionSpec.of("pipeline", Type.INT, 4, "requests a lane has on the wire at once in v2 framing: the next "
                    + "request goes out before the last one's answer is back (a Mooncake target serves a connection's "
                    + "requests in order); 1 waits for each answer, as Mooncake's own initiator does; v1 framing is "
                    + "always 1"),
            OptionSpec.of("port", Type.INT, 0, "data port to listen on (published as Mooncake's tcp_data_port); "
                    + "0 picks a free port"),
            OptionSpec.of("max_connections", Type.INT, 1024, "inbound data and handshake connections at most; more "
                    + "are closed at once (a Mooncake initiator without its connection pool opens one per request)"),
            OptionSpec.of("connect_timeout", Type.DURATION, "5s", "how long connecting to a peer may take"),
            OptionSpec.of("keepalive_idle", Type.DURATION, "15s", "TCP keep-alive of the wire's connections, both "
                    + "sides: idle time before the first probe, whole seconds"),
            OptionSpec.of("keepalive_interval", Type.DURATION, "5s", "time between keep-alive probes; whole seconds"),
            OptionSpec.of("keepalive_count", Type.INT, 3, "unanswered probes after which the connection closes"),
            OptionSpec.of("proto", Type.INT, 0, "0: acknowledged v2 framing when the peer publishes "
                    + "tcp_proto_version >= 2, else v1; 1: always v1 (Mooncake's MC_TCP_PROTO=1)"),
            OptionSpec.of("v1_write_fence", Type.BOOLEAN, true, "after a WRITE in v1 framing, read its last byte back "
                    + "so the slice completes only once the target stored it (v1 has no acknowledgement)"),
            OptionSpec.of("handshake_port", Type.INT, -1, "Mooncake's handshake socket, so Mooncake initiators in "
                    + "P2PHANDSHAKE mode can fetch this engine's descriptor as segment '<host>:<port>': -1 off, 0 any "
                    + "free port"),
            OptionSpec.of("metadata", Type.STRING, "", "Mooncake's metadata connection string: where this engine is "
                    + "published as a Mooncake engine would be (descriptor and rpc_meta, republished on every "
                    + "registration, removed at close) and where openSegment finds Mooncake segments that tent4j's own "
                    + "directory does not know: http://host:port/path (Mooncake's HTTP server), etcd://host:port or "
                    + "redis://host:port (through the engine's metadata plugins, configured by metadata.<scheme>.*), or "
                    + "P2PHANDSHAKE (no store: segments named <ip>:<port> are asked over their handshake socket); "
                    + "empty = none"),
            OptionSpec.of("name", Type.STRING, "", "the segment name Mooncake peers open this engine by in that store; "
                    + "empty = the engine's segment name"),
            OptionSpec.of("cluster_id", Type.STRING, "", "Mooncake's MC_METADATA_CLUSTER_ID: keys live under "
                    + "mooncake/<cluster_id>/"),
            OptionSpec.of("allow_unauthenticated", Type.BOOLEAN, false, "listen even when security.token or TLS is "
                    + "set: the Mooncake wire carries neither, so anyone reaching the port can reach registered memory"));

    @Override
    public String id() {
        return ID;
    }

    @Override
    public String description() {
        return "Mooncake Transfer Engine's classic TCP protocol (v1 and v2 framing), initiator and target";
    }

    @Override
    public Availability availability() {
        return Availability.available();
    }

    @Override
    public TransportCapabilities capabilities() {
        return CAPABILITIES;
    }

    @Override
    public List<OptionSpec> options() {
        return OPTIONS;
    }

    @Override
    public Transport create(TransportContext context) {
        int lanes = context.options().getInt("lanes");
        if (lanes < 1 || lanes > 16) {
            throw new ConfigException("transports.mooncake-tcp.lanes", "must be in [1, 16], got " + lanes);
        }
        int pipeline = context.options().getInt("pipeline");
        if (pipeline < 1 || pipeline > 64) {
            throw new ConfigException("transports.mooncake-tcp.pipeline", "must be in [1, 64], got " + pipeline);
        }
        KeepAlive.of(context.options()); // refused here, by key, before anything listens
        int port = context.options().getInt("port");
        if (port < 0 || port > 65535) {
            throw new ConfigException("transports.mooncake-tcp.port", "must be in [0, 65535], got " + port);
        }
        if (context.options().getInt("max_connections") < 1) {
            throw new ConfigException("transports.mooncake-tcp.max_connections", "must be >= 1, got "
                    + context.options().getInt("max_connections"));
        }
        int handshakePort = context.options().getInt("handshake_port");
        if (handshakePort < -1 || handshakePort > 65535) {
            throw new ConfigException("transports.mooncake-tcp.handshake_port", "must be -1 (off) or in [0, 65535], got "
                    + handshakePort);
        }
        int proto = context.options().getInt("proto");
        if (proto != 0 && proto != 1) {
            throw new ConfigException("transports.mooncake-tcp.proto", "must be 0 (follow the peer) or 1 (v1), got "
                    + proto);
        }
        if ((context.security().authenticates() || context.security().tls())
                && !context.options().getBoolean("allow_unauthenticated")) {
            // thrown, not a ConfigException: the engine starts without this transport and says why
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "mooncake-tcp does not run while "
                    + "security.token or TLS is set: Mooncake's TCP wire has no authentication, so its port would let "
                    + "any host around them (set transports.mooncake-tcp.allow_unauthenticated=true to accept that)");
        }
        try {
            String metadata = context.options().getString("metadata");
            boolean p2p = metadata.equals(MooncakeMetadata.P2P);
            MooncakeMetadata store = metadata.isEmpty() || p2p ? null
                    : MooncakeMetadata.open(metadata, context.options().getString("cluster_id"),
                    (connection, uri) -> context.openMetadataStore(OPTION_METADATA, uri));
            String name = context.options().getString("name").isEmpty() ? context.segmentName()
                    : context.options().getString("name");
            // a Mooncake engine always has its handshake socket, and rpc_meta points at it
            int handshake = (store != null || p2p) && handshakePort < 0 ? 0 : handshakePort;
            try {
                return new MooncakeTcpTransport(context, port, handshake, lanes, proto == 1, store, name, p2p);
            } catch (MooncakeTcpTransport.ListenException e) {
                // past listening, a failed constructor closes the store itself
                if (store != null) {
                    store.close();
                }
                throw e;
            }
        } catch (MooncakeTcpTransport.ListenException e) {
            throw new ConfigException("transports.mooncake-tcp." + e.option, "cannot listen on " + context.host() + ":"
                    + e.port + ": " + e.getCause(), e.getCause());
        }
    }
}
