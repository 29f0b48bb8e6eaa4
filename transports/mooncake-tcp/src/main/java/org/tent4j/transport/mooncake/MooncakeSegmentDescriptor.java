package org.tent4j.transport.mooncake;

import java.math.BigInteger;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.SegmentDescriptor;

/**
 * A classic Mooncake TE segment descriptor ({@code src/transfer_metadata.cpp}), the part a TCP peer needs: its name,
 * protocols, {@code tcp_data_port}, {@code tcp_proto_version} (absent means 1) and {@code buffers} with absolute
 * addresses. Other fields ({@code devices}, {@code timestamp}, a buffer's {@code rkey}, ...) are read past, since
 * Mooncake adds fields from version to version; the fields used here are checked strictly.
 *
 * @param name            the segment name
 * @param protocols       {@code protocol}: a string, or an array in multi-protocol builds
 * @param tcpDataPort     the TCP data port, in [1, 65535]
 * @param tcpProtoVersion 1 (no status frames) or 2 (acknowledged framing)
 * @param buffers         registered buffers, none of length or address 0
 */
public record MooncakeSegmentDescriptor(String name, List<String> protocols, int tcpDataPort, int tcpProtoVersion,
                                        List<Buffer> buffers) {
    /** Mooncake's handshake frames stop at 1 MiB ({@code MC_HANDSHAKE_MAX_LENGTH}); a descriptor larger is refused. */
    public static final int MAX_BYTES = 1 << 20;

    /**
     * One registered buffer.
     *
     * @param name    its location, e.g. {@code cpu:0}
     * @param address its absolute address in the owner's process
     * @param length  bytes
     */
    public record Buffer(String name, long address, long length) {
    }

    public MooncakeSegmentDescriptor {
        protocols = List.copyOf(protocols);
        buffers = List.copyOf(buffers);
    }

    /**
     * Reads a descriptor as Mooncake stores it under {@code source} (a metadata key such as
     * {@code mooncake/ram/node1}, or the peer of a handshake), which every error names together with the field.
     *
     * @throws TransferException PROTOCOL when it is over 1 MiB, not JSON, or a field is absent or malformed
     */
    public static MooncakeSegmentDescriptor parse(String source, byte[] json) {
        Map<?, ?> top = StrictJson.parseObject(json, MAX_BYTES, why -> bad(source, "(whole descriptor)", why));
        String name = string(source, top, "name");
        List<String> protocols = protocols(source, top.get("protocol"));
        Object port = top.get("tcp_data_port");
        if (port == null) {
            throw bad(source, "tcp_data_port", "absent: the segment runs no TCP transport (protocol "
                    + protocols + ")");
        }
        long p = integer(source, "tcp_data_port", port);
        if (p < 1 || p > 65535) {
            throw bad(source, "tcp_data_port", p + " is outside [1, 65535]");
        }
        Object version = top.get("tcp_proto_version");
        long v = version == null ? 1 : integer(source, "tcp_proto_version", version);
        if (v < 1 || v > Integer.MAX_VALUE) {
            throw bad(source, "tcp_proto_version", v + " is not a protocol version (1 or more)");
        }
        if (!(top.get("buffers") instanceof List<?> list)) {
            throw bad(source, "buffers", top.containsKey("buffers") ? "not an array" : "absent");
        }
        List<Buffer> buffers = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
            String field = "buffers[" + i + "]";
            if (!(list.get(i) instanceof Map<?, ?> b)) {
                throw bad(source, field, "not an object");
            }
            String location = string(source, b, field, "name");
            long address = unsigned(source, field + ".addr", b.get("addr"));
            long length = unsigned(source, field + ".length", b.get("length"));
            if (address == 0) {
                throw bad(source, field + ".addr", "0 is no buffer address");
            }
            if (length == 0) {
                throw bad(source, field + ".length", "0: a buffer of no bytes");
            }
            if (address < 0 || length < 0 || address + length < 0) {
                throw bad(source, field, "[0x" + Long.toUnsignedString(address, 16) + ", +"
                        + Long.toUnsignedString(length) + ") ends beyond 2^63, outside any process's address space");
            }
            buffers.add(new Buffer(location, address, length));
        }
        return new MooncakeSegmentDescriptor(name, protocols, (int) p, (int) v, buffers);
    }

    /**
     * Fetches the descriptor of a Mooncake engine running in P2P mode ({@code P2PHANDSHAKE}), whose segment name is
     * its handshake socket's {@code <host>:<port>}, the way a Mooncake engine does: a Metadata frame carrying
     * {@code ownDescriptor} (Mooncake's JSON for the asking engine), answered by the peer's descriptor.
     *
     * @throws TransferException INVALID_ARGUMENT for a name that is not {@code <host>:<port>}, PEER_UNREACHABLE when the
     *                           socket cannot be reached or stays silent, PROTOCOL when the answer is malformed
     */
    public static MooncakeSegmentDescriptor fetchP2p(String segmentName, byte[] ownDescriptor, Duration timeout) {
        MooncakeKeys.RpcMeta where = MooncakeKeys.parseP2pName(segmentName);
        return MooncakeHandshake.fetchDescriptor(where.host(), where.rpcPort(), ownDescriptor, timeout);
    }

    /** The same segment under another name. */
    public MooncakeSegmentDescriptor renamed(String segmentName) {
        return segmentName.equals(name) ? this : new MooncakeSegmentDescriptor(segmentName, protocols, tcpDataPort,
                tcpProtoVersion, buffers);
    }

    /**
     * This descriptor as tent4j's runtime and this transport see a peer: reached at {@code host} (from the
     * {@code rpc_meta} key or the P2P segment name) and this transport only; every buffer READ_WRITE host memory,
     * as Mooncake's TCP transport serves it.
     */
    public SegmentDescriptor toSegmentDescriptor(String host, String machineId) {
        List<BufferDescriptor> out = new ArrayList<>(buffers.size());
        for (Buffer b : buffers) {
            out.add(BufferDescriptor.builder().address(b.address()).length(b.length()).location(Location.CPU)
                    .permission(Permission.READ_WRITE).transports(List.of(MooncakeTcpTransportProvider.ID))
                    .attributes(Map.of(MooncakeTcpTransportProvider.ID, Map.of())).build());
        }
        Map<String, String> attributes = Map.of(MooncakeTcpTransport.ATTR_PORT, Integer.toString(tcpDataPort),
                MooncakeTcpTransport.ATTR_PROTO_VERSION, Integer.toString(tcpProtoVersion));
        return SegmentDescriptor.builder().name(name).machineId(machineId).host(host).controlPort(0)
                .transports(List.of(MooncakeTcpTransportProvider.ID))
                .transportAttributes(Map.of(MooncakeTcpTransportProvider.ID, attributes)).buffers(out).version(0)
                .build();
    }

    /** Compact JSON as Mooncake's TCP transport publishes it, so a Mooncake initiator can read this segment. */
    public String toJson() {
        StringBuilder sb = new StringBuilder("{\"name\":").append(StrictJson.quote(name)).append(",\"protocol\":");
        sb.append(protocols.size() == 1 ? StrictJson.quote(protocols.getFirst())
                : protocols.stream().map(StrictJson::quote).reduce((x, y) -> x + "," + y).map(s -> "[" + s + "]")
                .orElse("\"tcp\""));
        sb.append(",\"tcp_data_port\":").append(tcpDataPort).append(",\"tcp_proto_version\":").append(tcpProtoVersion)
                .append(",\"buffers\":[");
        for (int i = 0; i < buffers.size(); i++) {
            Buffer b = buffers.get(i);
            sb.append(i == 0 ? "" : ",").append("{\"name\":").append(StrictJson.quote(b.name())).append(",\"addr\":")
                    .append(Long.toUnsignedString(b.address())).append(",\"length\":")
                    .append(Long.toUnsignedString(b.length())).append('}');
        }
        return sb.append("]}").toString();
    }

    private static List<String> protocols(String source, Object value) {
        if (value instanceof String s) {
            return List.of(s);
        }
        if (value instanceof List<?> list && !list.isEmpty()) {
            List<String> out = new ArrayList<>(list.size());
            for (int i = 0; i < list.size(); i++) {
                if (!(list.get(i) instanceof String s)) {
                    throw bad(source, "protocol[" + i + "]", "not a string");
                }
                out.add(s);
            }
            return out;
        }
        throw bad(source, "protocol", value == null ? "absent" : "neither a string nor a non-empty array of strings");
    }

    private static String string(String source, Map<?, ?> object, String field) {
        return string(source, object, null, field);
    }

    private static String string(String source, Map<?, ?> object, String parent, String field) {
        String path = parent == null ? field : parent + "." + field;
        Object v = object.get(field);
        if (v == null) {
            throw bad(source, path, "absent");
        }
        if (!(v instanceof String s)) {
            throw bad(source, path, "not a string");
        }
        if (s.isEmpty()) {
            throw bad(source, path, "empty");
        }
        return s;
    }

    private static long integer(String source, String field, Object v) {
        if (!(v instanceof BigInteger i)) {
            throw bad(source, field, v instanceof String ? "a string, not an integer" : "not an integer");
        }
        if (i.bitLength() > 63) {
            throw bad(source, field, i + " is out of range");
        }
        return i.longValue();
    }

    /** A u64 as Mooncake writes it; the bits are kept, so values above 2^63 read negative and are refused later. */
    private static long unsigned(String source, String field, Object v) {
        if (v == null) {
            throw bad(source, field, "absent");
        }
        if (!(v instanceof BigInteger i)) {
            throw bad(source, field, v instanceof String ? "a string, not an integer" : "not an integer");
        }
        if (i.signum() < 0 || i.bitLength() > 64) {
            throw bad(source, field, i + " is not a u64");
        }
        return i.longValue();
    }

    private static TransferException bad(String source, String field, String why) {
        return new TransferException(ErrorCode.PROTOCOL, "Mooncake segment descriptor at '" + source + "': field "
                + field + " " + why);
    }
}
