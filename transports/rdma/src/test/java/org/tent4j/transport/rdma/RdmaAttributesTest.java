package org.tent4j.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.SegmentDescriptor;

class RdmaAttributesTest {
    private static final byte[] GID0 = HexFormat.of().parseHex("fe800000000000000002c90300a1b2c3");
    private static final byte[] GID1 = HexFormat.of().parseHex("00000000000000000000ffff0a000102");
    private static final List<RdmaAttributes.DeviceAddress> DEVICES = List.of(
            new RdmaAttributes.DeviceAddress("mlx5_0", 1, GID0), new RdmaAttributes.DeviceAddress("mlx5_1", 0, GID1));

    @Test
    void segmentAttributesRoundTripInTheReferenceGidFormat() {
        Map<String, String> m = RdmaAttributes.encodeSegment(DEVICES);
        assertEquals(Map.of("devices", "mlx5_0,mlx5_1", "lids", "1,0",
                "gids", "fe:80:00:00:00:00:00:00:00:02:c9:03:00:a1:b2:c3,"
                        + "00:00:00:00:00:00:00:00:00:00:ff:ff:0a:00:01:02"), m);
        assertEquals(DEVICES, RdmaAttributes.decodeSegment("b", m));
    }

    @Test
    void bufferKeysRoundTripAsUnsigned32BitNumbers() {
        int[] rkeys = {0x1234, 0xF00DBEEF};
        Map<String, String> m = RdmaAttributes.encodeBuffer(List.of("mlx5_0", "mlx5_1"), rkeys);
        assertEquals(Map.of("devices", "mlx5_0,mlx5_1", "rkeys", "4660,4027432687"), m);
        assertArrayEquals(rkeys, RdmaAttributes.decodeBufferKeys("b", 0x1000, m, DEVICES));
        // a buffer listing devices in another order still yields keys in segment order
        assertArrayEquals(rkeys, RdmaAttributes.decodeBufferKeys("b", 0x1000,
                Map.of("devices", "mlx5_1,mlx5_0", "rkeys", "4027432687,4660"), DEVICES));
    }

    private static void malformed(Runnable r, String message) {
        TransferException e = assertThrows(TransferException.class, r::run);
        assertEquals(ErrorCode.PROTOCOL, e.code());
        assertEquals(message, e.getMessage());
    }

    @Test
    void rejectsMalformedSegmentAttributes() {
        malformed(() -> RdmaAttributes.decodeSegment("b", Map.of()),
                "rdma attributes of segment 'b' publishes no 'devices'");
        malformed(() -> RdmaAttributes.decodeSegment("b", Map.of("devices", "x,y", "lids", "1", "gids", "a,b")),
                "rdma attributes of segment 'b' lists 2 devices, 1 lids and 2 gids; they must match");
        malformed(() -> RdmaAttributes.decodeSegment("b", Map.of("devices", "x", "lids", "one",
                "gids", VerbsValues.gidToString(GID0))), "rdma attributes of segment 'b' lid 'one' of device x is not a number");
        malformed(() -> RdmaAttributes.decodeSegment("b", Map.of("devices", "x", "lids", "1", "gids", "fe:80")),
                "rdma attributes of segment 'b' device x: GID 'fe:80' must be 16 hex pairs joined by ':'");
        malformed(() -> RdmaAttributes.decodeSegment("b", Map.of("devices", "x,", "lids", "1,1", "gids", "a,b")),
                "rdma attributes of segment 'b' 'devices' has an empty entry: 'x,'");
        malformed(() -> RdmaAttributes.decodeSegment("b", Map.of("devices", "x", "lids", "70000",
                "gids", VerbsValues.gidToString(GID0))),
                "rdma attributes of segment 'b' device x: lid 70000 out of range 0..65535");
    }

    @Test
    void rejectsMalformedBufferAttributes() {
        malformed(() -> RdmaAttributes.decodeBufferKeys("b", 0x1000, Map.of("devices", "mlx5_0", "rkeys", "1"),
                DEVICES), "rdma attributes of segment 'b' buffer 0x1000 has no rkey for device mlx5_1");
        malformed(() -> RdmaAttributes.decodeBufferKeys("b", 0x1000, Map.of("devices", "mlx5_0,mlx5_1",
                "rkeys", "1"), DEVICES), "rdma attributes of segment 'b' buffer 0x1000 lists 2 devices but 1 rkeys");
        malformed(() -> RdmaAttributes.decodeBufferKeys("b", 0x1000, Map.of("devices", "mlx5_0,mlx5_1",
                "rkeys", "1,4294967296"), DEVICES),
                "rdma attributes of segment 'b' buffer 0x1000 rkey '4294967296' is not an unsigned 32-bit number");
        assertThrows(IllegalArgumentException.class, () -> RdmaAttributes.encodeBuffer(List.of("a,b"), new int[1]));
        assertThrows(IllegalArgumentException.class, () -> RdmaAttributes.encodeBuffer(List.of("a"), new int[2]));
    }

    @Test
    void remoteKeyTableIndexesThePeersBuffers() {
        Map<String, String> seg = RdmaAttributes.encodeSegment(DEVICES);
        BufferDescriptor a = BufferDescriptor.builder().address(0x10_000).length(0x1000).location(Location.CPU)
                .permission(Permission.READ_WRITE).transports(List.of("rdma"))
                .attributes(Map.of("rdma", RdmaAttributes.encodeBuffer(List.of("mlx5_0", "mlx5_1"), new int[]{11, 12})))
                .build();
        BufferDescriptor b = BufferDescriptor.builder().address(0x30_000).length(0x1000).location(Location.CPU)
                .permission(Permission.READ_ONLY).transports(List.of("rdma"))
                .attributes(Map.of("rdma", RdmaAttributes.encodeBuffer(List.of("mlx5_0", "mlx5_1"), new int[]{21, 22})))
                .build();
        BufferDescriptor tcpOnly = BufferDescriptor.builder().address(0x50_000).length(0x1000).location(Location.CPU)
                .permission(Permission.READ_WRITE).transports(List.of("tcp")).attributes(Map.of()).build();
        BufferDescriptor broken = BufferDescriptor.builder().address(0x70_000).length(0x1000).location(Location.CPU)
                .permission(Permission.READ_WRITE).transports(List.of("rdma"))
                .attributes(Map.of("rdma", Map.of("devices", "mlx5_0", "rkeys", "1"))).build();
        SegmentDescriptor peer = SegmentDescriptor.builder().name("b").machineId("m2").host("10.0.0.2")
                .controlPort(7000).transports(List.of("rdma", "tcp")).transportAttributes(Map.of("rdma", seg))
                .buffers(List.of(b, tcpOnly, a, broken)).version(3).build();
        RangeTable<RdmaPeerConnection.RemoteKeys> t = RdmaPeerConnection.remoteKeyTable(peer, DEVICES);
        assertEquals(2, t.size(), "tcp-only and malformed buffers are left out");
        assertArrayEquals(new int[]{11, 12}, t.find(0x10_000, 0x1000).rkeys());
        assertArrayEquals(new int[]{21, 22}, t.find(0x30_800, 0x800).rkeys());
        assertEquals(null, t.find(0x30_800, 0x801));
        assertEquals(null, t.find(0x50_000, 1));
        assertTrue(t.find(0x70_000, 1) == null);
    }
}
