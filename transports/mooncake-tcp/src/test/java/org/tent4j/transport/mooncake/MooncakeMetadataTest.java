package org.tent4j.transport.mooncake;

import java.nio.charset.StandardCharsets;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.SegmentDescriptor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Mooncake's descriptor JSON, rpc_meta and key layout, read strictly: every error names the key and the field. */
class MooncakeMetadataTest {
    private static final String KEY = "mooncake/ram/node1";
    /** As a Mooncake engine with the tcp transport publishes itself (jsoncpp, keys sorted, trailing newline). */
    private static final String TCP = "{\"buffers\":[{\"addr\":140548453867520,\"length\":1073741824,\"name\":\"cpu:0\"},"
            + "{\"addr\":140547380125696,\"length\":4096,\"name\":\"cpu:1\"}],\"name\":\"node1\",\"protocol\":\"tcp\","
            + "\"tcp_data_port\":15123,\"tcp_proto_version\":2,\"timestamp\":\"2026-11-27 11:00:00.123\"}\n";

    private static MooncakeSegmentDescriptor parse(String json) {
        return MooncakeSegmentDescriptor.parse(KEY, json.getBytes(StandardCharsets.UTF_8));
    }

    private static String error(String json) {
        TransferException e = assertThrows(TransferException.class, () -> parse(json));
        assertEquals(ErrorCode.PROTOCOL, e.code());
        assertTrue(e.getMessage().contains("'" + KEY + "'"), e.getMessage());
        return e.getMessage();
    }

    @Test
    void aMooncakeTcpDescriptorReadsWithAbsoluteAddresses() {
        MooncakeSegmentDescriptor d = parse(TCP);
        assertEquals("node1", d.name());
        assertEquals(List.of("tcp"), d.protocols());
        assertEquals(15123, d.tcpDataPort());
        assertEquals(2, d.tcpProtoVersion());
        assertEquals(List.of(new MooncakeSegmentDescriptor.Buffer("cpu:0", 140548453867520L, 1L << 30),
                new MooncakeSegmentDescriptor.Buffer("cpu:1", 140547380125696L, 4096)), d.buffers());

        SegmentDescriptor s = d.toSegmentDescriptor("10.0.0.7", "mooncake:node1");
        assertEquals("10.0.0.7", s.host());
        assertEquals("15123", s.transportAttributes("mooncake-tcp").get("port"));
        assertEquals("2", s.transportAttributes("mooncake-tcp").get("proto_version"));
        assertEquals(140548453867520L, s.findBuffer(140548453867520L + 5, 100).address());
        assertEquals(d, parse(d.toJson()), "what this plugin writes, it reads back the same");
    }

    @Test
    void absentProtoVersionMeansV1AndUnknownFieldsAreReadPast() {
        MooncakeSegmentDescriptor d = parse("{\"name\":\"n\",\"protocol\":[\"rdma\",\"tcp\"],\"tcp_data_port\":1,"
                + "\"devices\":[{\"name\":\"mlx5_0\",\"lid\":0,\"gid\":\"fe:80\"}],\"buffers\":[{\"name\":\"cpu:0\","
                + "\"addr\":1,\"length\":1,\"rkey\":[1],\"lkey\":[2]}],\"priority_matrix\":{}}");
        assertEquals(1, d.tcpProtoVersion());
        assertEquals(List.of("rdma", "tcp"), d.protocols());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "buffer of length 0|{\"name\":\"n\",\"protocol\":\"tcp\",\"tcp_data_port\":1,\"buffers\":[{\"name\":\"cpu:0\",\"addr\":4096,\"length\":0}]}|field buffers[0].length 0",
            "address 0|{\"name\":\"n\",\"protocol\":\"tcp\",\"tcp_data_port\":1,\"buffers\":[{\"name\":\"cpu:0\",\"addr\":0,\"length\":8}]}|field buffers[0].addr 0",
            "not JSON|<html>not found</html>|(whole descriptor) not JSON: unexpected character '<' at offset 0",
            "truncated|{\"name\":\"n\",\"protocol\":\"tcp\"|(whole descriptor) not JSON",
            "not an object|[1,2]|(whole descriptor) not a JSON object",
            "port 0|{\"name\":\"n\",\"protocol\":\"tcp\",\"tcp_data_port\":0,\"buffers\":[]}|field tcp_data_port 0 is outside [1, 65535]",
            "port 65536|{\"name\":\"n\",\"protocol\":\"tcp\",\"tcp_data_port\":65536,\"buffers\":[]}|field tcp_data_port 65536 is outside [1, 65535]",
            "port as text|{\"name\":\"n\",\"protocol\":\"tcp\",\"tcp_data_port\":\"15000\",\"buffers\":[]}|field tcp_data_port a string, not an integer",
            "no port|{\"name\":\"n\",\"protocol\":\"rdma\",\"buffers\":[]}|field tcp_data_port absent: the segment runs no TCP transport",
            "no buffers|{\"name\":\"n\",\"protocol\":\"tcp\",\"tcp_data_port\":1}|field buffers absent",
            "no name|{\"protocol\":\"tcp\",\"tcp_data_port\":1,\"buffers\":[]}|field name absent",
            "buffer without addr|{\"name\":\"n\",\"protocol\":\"tcp\",\"tcp_data_port\":1,\"buffers\":[{\"name\":\"cpu:0\",\"length\":8}]}|field buffers[0].addr absent",
            "negative length|{\"name\":\"n\",\"protocol\":\"tcp\",\"tcp_data_port\":1,\"buffers\":[{\"name\":\"cpu:0\",\"addr\":8,\"length\":-8}]}|field buffers[0].length -8 is not a u64",
            "beyond 2^63|{\"name\":\"n\",\"protocol\":\"tcp\",\"tcp_data_port\":1,\"buffers\":[{\"name\":\"cpu:0\",\"addr\":9223372036854775807,\"length\":8}]}|field buffers[0] [0x7fffffffffffffff, +8) ends beyond 2^63",
            "fractional port|{\"name\":\"n\",\"protocol\":\"tcp\",\"tcp_data_port\":1.5,\"buffers\":[]}|field tcp_data_port not an integer",
            "version 0|{\"name\":\"n\",\"protocol\":\"tcp\",\"tcp_data_port\":1,\"tcp_proto_version\":0,\"buffers\":[]}|field tcp_proto_version 0 is not a protocol version",
            "duplicate key|{\"name\":\"n\",\"name\":\"m\"}|member \"name\" appears twice",
            "trailing text|{\"name\":\"n\"} {}|unexpected text after the value",
    })
    void aMalformedDescriptorFailsNamingTheField(String what, String json, String expected) {
        String message = error(json);
        assertTrue(message.contains(expected), () -> what + ": " + message);
    }

    @Test
    void aDescriptorOverOneMebibyteIsRefusedBeforeParsing() {
        byte[] big = new byte[MooncakeSegmentDescriptor.MAX_BYTES + 1];
        java.util.Arrays.fill(big, (byte) ' ');
        TransferException e = assertThrows(TransferException.class, () -> MooncakeSegmentDescriptor.parse(KEY, big));
        assertTrue(e.getMessage().contains("1048577 bytes, over the 1 MiB limit"), e.getMessage());
    }

    @Test
    void deepNestingIsRefusedWithoutBlowingTheStack() {
        String message = error("[".repeat(100_000));
        assertTrue(message.contains("nested deeper than 32 levels"), message);
    }

    @Test
    void keysFollowMooncakesLayout() {
        assertEquals("mooncake/ram/node1", MooncakeKeys.segmentKey(null, "node1"));
        assertEquals("mooncake/ram/node1", MooncakeKeys.segmentKey("", "node1"));
        assertEquals("mooncake/c1/ram/node1", MooncakeKeys.segmentKey("c1", "node1"));
        assertEquals("mooncake/c1/ram/node1", MooncakeKeys.segmentKey("c1/", "node1"));
        assertEquals("mooncake/nvmeof/disk0", MooncakeKeys.segmentKey(null, "nvmeof/disk0"));
        assertEquals("mooncake/rpc_meta/node1", MooncakeKeys.rpcMetaKey(null, "node1"));
        assertEquals("mooncake/c1/rpc_meta/node1", MooncakeKeys.rpcMetaKey("c1", "node1"));
        assertThrows(TransferException.class, () -> MooncakeKeys.segmentKey(null, ""));
    }

    @Test
    void rpcMetaAndP2pNamesSayWhereTheEngineIs() {
        MooncakeKeys.RpcMeta m = MooncakeKeys.parseRpcMeta("mooncake/rpc_meta/node1",
                "{\"ip_or_host_name\":\"10.0.0.7\",\"rpc_port\":15001}\n".getBytes(StandardCharsets.UTF_8));
        assertEquals(new MooncakeKeys.RpcMeta("10.0.0.7", 15001), m);
        assertEquals(m, MooncakeKeys.parseRpcMeta("k", m.toJson().getBytes(StandardCharsets.UTF_8)));
        TransferException bad = assertThrows(TransferException.class, () -> MooncakeKeys.parseRpcMeta(
                "mooncake/rpc_meta/node1", "{\"ip_or_host_name\":\"h\",\"rpc_port\":70000}".getBytes(StandardCharsets.UTF_8)));
        assertTrue(bad.getMessage().contains("'mooncake/rpc_meta/node1': field rpc_port 70000 is outside [1, 65535]"),
                bad.getMessage());
        TransferException absent = assertThrows(TransferException.class, () -> MooncakeKeys.parseRpcMeta("k",
                "{\"rpc_port\":1}".getBytes(StandardCharsets.UTF_8)));
        assertTrue(absent.getMessage().contains("field ip_or_host_name absent"), absent.getMessage());

        assertEquals(new MooncakeKeys.RpcMeta("192.168.1.5", 15432), MooncakeKeys.parseP2pName("192.168.1.5:15432"));
        assertEquals(new MooncakeKeys.RpcMeta("fe80::1", 15432), MooncakeKeys.parseP2pName("[fe80::1]:15432"));
        for (String name : new String[]{"node1", "host:", ":15000", "host:0", "host:99999", "host:x"}) {
            assertThrows(TransferException.class, () -> MooncakeKeys.parseP2pName(name), name);
        }
    }
}
