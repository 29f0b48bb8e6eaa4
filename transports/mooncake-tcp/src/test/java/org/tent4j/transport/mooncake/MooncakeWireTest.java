package org.tent4j.transport.mooncake;

import java.nio.ByteBuffer;

import org.junit.jupiter.api.Test;
import org.tent4j.api.Opcode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The codec against bytes captured from the C++ engine (MooncakePeerTest checks the same bytes on a socket). */
class MooncakeWireTest {

    private static String hex(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return FakeMooncakeTarget.hex(out);
    }

    @Test
    void aWriteHeaderIsTheGoldenCapture() {
        ByteBuffer h = MooncakeWire.encodeHeader(MooncakeWire.headerBuffer(), Opcode.WRITE, 0x7fd329c00000L, 4096, true);
        assertEquals(MooncakePeerTest.GOLDEN_WRITE_HEADER, hex(h));
        assertEquals(4096, MooncakeWire.size(h));
        assertEquals(0x7fd329c00000L, MooncakeWire.address(h));
        int op = MooncakeWire.opcodeByte(h);
        assertTrue(MooncakeWire.isV2(op));
        assertEquals(Opcode.WRITE, MooncakeWire.opcode(op));
    }

    @Test
    void v1AndReadHeadersDifferOnlyInTheOpcodeByte() {
        ByteBuffer h = MooncakeWire.encodeHeader(MooncakeWire.headerBuffer(), Opcode.READ, 0x7fd329c00000L, 4096, false);
        assertEquals("00 10 00 00 00 00 00 00 00 00 c0 29 d3 7f 00 00 00 00 00 00 00 00 00 00", hex(h));
        assertFalse(MooncakeWire.isV2(MooncakeWire.opcodeByte(h)));
        assertEquals(Opcode.READ, MooncakeWire.opcode(MooncakeWire.opcodeByte(h)));
        assertNull(MooncakeWire.opcode(0x82), "opcode 2 is not Mooncake's");
    }

    @Test
    void statusFramesAreTheGoldenBytes() {
        ByteBuffer ok = MooncakeWire.encodeStatus(MooncakeWire.statusBuffer(), MooncakeWire.STATUS_OK);
        assertEquals(MooncakePeerTest.GOLDEN_OK, hex(ok));
        long frame = ok.getLong(0);
        assertTrue(MooncakeWire.hasMagic(frame));
        assertEquals(0, MooncakeWire.code(frame));
        ByteBuffer rejected = MooncakeWire.encodeStatus(MooncakeWire.statusBuffer(), MooncakeWire.STATUS_REJECTED);
        assertEquals(MooncakePeerTest.REJECTED, hex(rejected));
        assertFalse(MooncakeWire.hasMagic(0L), "a frame of zeros carries no magic");
    }
}
