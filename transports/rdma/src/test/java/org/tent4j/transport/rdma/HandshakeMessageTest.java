package org.tent4j.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;

class HandshakeMessageTest {
    private static final byte[] GID = HexFormat.of().parseHex("fe800000000000000002c90300a1b2c3");

    private static HandshakeMessage sample() {
        return new HandshakeMessage(HandshakeMessage.Type.CONNECT, 0x1122334455667788L, List.of(
                new HandshakeMessage.Endpoint(0, 1, 0xFFFFFF, 0x123456, 0xBEEF, Verbs.IBV_MTU_4096, GID),
                new HandshakeMessage.Endpoint(1, 0, 7, 0, 0, Verbs.IBV_MTU_256, new byte[16])));
    }

    @Test
    void roundTrips() {
        HandshakeMessage m = sample();
        assertEquals(m, HandshakeMessage.decode(m.encode()));
        HandshakeMessage bye = new HandshakeMessage(HandshakeMessage.Type.DISCONNECT, -1L, List.of());
        assertEquals(bye, HandshakeMessage.decode(bye.encode()));
        assertEquals(16, bye.encode().length);
    }

    @Test
    void wireLayoutIsAsDocumented() {
        byte[] b = sample().encode();
        assertEquals(16 + 2 * 32, b.length);
        assertEquals("74346a52" + "01" + "01" + "0002" + "1122334455667788", HexFormat.of().formatHex(b, 0, 16));
        assertEquals("0000" + "0001" + "00ffffff" + "00123456" + "beef" + "05" + "00"
                + "fe800000000000000002c90300a1b2c3", HexFormat.of().formatHex(b, 16, 48));
    }

    private static void rejects(byte[] bytes, String message) {
        TransferException e = assertThrows(TransferException.class, () -> HandshakeMessage.decode(bytes));
        assertEquals(ErrorCode.PROTOCOL, e.code());
        assertEquals("rdma handshake: " + message, e.getMessage());
    }

    private static byte[] patched(int offset, int... values) {
        byte[] b = sample().encode();
        for (int i = 0; i < values.length; i++) {
            b[offset + i] = (byte) values[i];
        }
        return b;
    }

    @Test
    void rejectsMalformedMessages() {
        rejects(null, "message of 0 bytes is shorter than the 16-byte header");
        rejects(new byte[15], "message of 15 bytes is shorter than the 16-byte header");
        rejects(patched(0, 0x7b), "bad magic 0x7b346a52 (expected 0x74346a52)");
        rejects(patched(4, 2), "unsupported version 2 (this side speaks 1)");
        rejects(patched(5, 9), "unknown message type 9");
        byte[] good = sample().encode();
        rejects(Arrays.copyOf(good, good.length - 1), "CONNECT with 2 endpoints must be 80 bytes, got 79");
        rejects(Arrays.copyOf(good, good.length + 32), "CONNECT with 2 endpoints must be 80 bytes, got 112");
        rejects(patched(6, 0, 3), "CONNECT with 3 endpoints must be 112 bytes, got 80");
        rejects(patched(16 + 15, 1), "endpoint 0: reserved byte is 1, must be 0");
        rejects(patched(16 + 4, 1), "endpoint 0: qp_num 33554431 is out of range 0..16777215");
        rejects(patched(16 + 8, 0x80), "endpoint 0: psn 2148676694 is out of range 0..16777215");
        rejects(patched(16 + 14, 0), "endpoint 0: mtu 0 is not an ibv_mtu value (1..5)");
        rejects(patched(48 + 14, 6), "endpoint 1: mtu 6 is not an ibv_mtu value (1..5)");
        // a DISCONNECT carrying endpoints, a CONNECT carrying none
        rejects(patched(5, 3), "DISCONNECT must carry no endpoint");
        byte[] empty = ByteBuffer.allocate(16).putInt(HandshakeMessage.MAGIC).put((byte) 1).put((byte) 1)
                .putShort((short) 0).putLong(5).array();
        rejects(empty, "CONNECT must carry at least one endpoint");
    }

    @Test
    void refusesToBuildWhatItWouldReject() {
        assertThrows(TransferException.class, () -> new HandshakeMessage.Endpoint(0, 0, 1 << 24, 0, 0, 1, GID));
        assertThrows(TransferException.class, () -> new HandshakeMessage.Endpoint(0, 0, 1, 0, 0x10000, 1, GID));
        assertThrows(TransferException.class, () -> new HandshakeMessage.Endpoint(0, 0, 1, 0, 0, 1, new byte[4]));
        assertThrows(TransferException.class, () -> new HandshakeMessage.Endpoint(-1, 0, 1, 0, 0, 1, GID));
    }

    @Test
    void endpointCarriesThePeerQpForTransitions() {
        HandshakeMessage.Endpoint e = sample().endpoints().getFirst();
        QpTransitions.RemoteQp r = e.remoteQp();
        assertEquals(0xFFFFFF, r.qpNum());
        assertEquals(0x123456, r.psn());
        assertEquals(0xBEEF, r.lid());
        assertEquals(Verbs.IBV_MTU_4096, r.mtu());
        assertArrayEquals(GID, r.gid());
    }
}
