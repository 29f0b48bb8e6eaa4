package org.tent4j.transport.mooncake;

import java.math.BigInteger;
import java.util.Map;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;

/**
 * Where a classic Mooncake engine keeps its metadata in etcd, Redis or the HTTP metadata server, and how a P2P
 * segment name says where the engine is. tent4j's own descriptors live under {@code tent4j/...}; nothing here
 * touches those keys.
 */
public final class MooncakeKeys {
    private MooncakeKeys() {
    }

    /**
     * {@code mooncake/}, or {@code mooncake/<cluster>/} when Mooncake runs with {@code MC_METADATA_CLUSTER_ID}
     * (a {@code /} is appended if missing, as Mooncake does).
     */
    public static String prefix(String clusterId) {
        if (clusterId == null || clusterId.isEmpty()) {
            return "mooncake/";
        }
        return "mooncake/" + clusterId + (clusterId.endsWith("/") ? "" : "/");
    }

    /** A segment's descriptor key: {@code <prefix>ram/<name>}, or {@code <prefix><name>} when the name has a '/'. */
    public static String segmentKey(String clusterId, String segmentName) {
        requireName(segmentName);
        return prefix(clusterId) + (segmentName.indexOf('/') >= 0 ? segmentName : "ram/" + segmentName);
    }

    /** The key of a server's handshake location: {@code <prefix>rpc_meta/<server>}. */
    public static String rpcMetaKey(String clusterId, String serverName) {
        requireName(serverName);
        return prefix(clusterId) + "rpc_meta/" + serverName;
    }

    private static void requireName(String name) {
        if (name == null || name.isEmpty()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "a Mooncake segment name must not be empty");
        }
    }

    /**
     * Where a Mooncake engine's handshake socket (and, for TCP, its host) is.
     *
     * @param host    {@code ip_or_host_name}
     * @param rpcPort {@code rpc_port}
     */
    public record RpcMeta(String host, int rpcPort) {
        /** As Mooncake writes it under {@link #rpcMetaKey}. */
        public String toJson() {
            return "{\"ip_or_host_name\":" + StrictJson.quote(host) + ",\"rpc_port\":" + rpcPort + "}";
        }
    }

    /** Reads the value of an {@code rpc_meta} key; errors name the key and the field. */
    public static RpcMeta parseRpcMeta(String key, byte[] json) {
        Map<?, ?> top = StrictJson.parseObject(json, MooncakeSegmentDescriptor.MAX_BYTES,
                why -> bad(key, "(whole value)", why));
        if (!(top.get("ip_or_host_name") instanceof String host) || host.isEmpty()) {
            throw bad(key, "ip_or_host_name", top.containsKey("ip_or_host_name") ? "not a non-empty string" : "absent");
        }
        Object port = top.get("rpc_port");
        if (!(port instanceof BigInteger p)) {
            throw bad(key, "rpc_port", port == null ? "absent" : "not an integer");
        }
        if (p.signum() <= 0 || p.compareTo(BigInteger.valueOf(65535)) > 0) {
            throw bad(key, "rpc_port", p + " is outside [1, 65535]");
        }
        return new RpcMeta(host, p.intValue());
    }

    /**
     * A P2P-mode segment name, {@code <ip>:<port>} ({@code [v6]:port} for IPv6): the engine renamed itself after its
     * handshake socket, so the name is its location.
     */
    public static RpcMeta parseP2pName(String segmentName) {
        requireName(segmentName);
        int colon = segmentName.lastIndexOf(':');
        if (colon <= 0 || colon == segmentName.length() - 1) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "Mooncake P2P segment name '" + segmentName
                    + "' is not <host>:<port>");
        }
        String host = segmentName.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port;
        try {
            port = Integer.parseInt(segmentName.substring(colon + 1));
        } catch (NumberFormatException e) {
            port = -1;
        }
        if (port < 1 || port > 65535 || host.isEmpty()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "Mooncake P2P segment name '" + segmentName
                    + "' is not <host>:<port> with a port in [1, 65535]");
        }
        return new RpcMeta(host, port);
    }

    private static TransferException bad(String key, String field, String why) {
        return new TransferException(ErrorCode.PROTOCOL, "Mooncake rpc_meta at '" + key + "': field " + field + " "
                + why);
    }
}
