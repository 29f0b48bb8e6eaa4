package org.tent4j.transport.mooncake;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import org.tent4j.api.Opcode;

/**
 * The classic Mooncake Transfer Engine TCP data protocol ({@code src/transport/tcp_transport/*} in Mooncake), byte
 * for byte. Everything is little-endian, as the C++ engine writes its structs in host order on x86 and ARM.
 *
 * <pre>
 * request header, 24 bytes             status frame (v2 only), 8 bytes
 *  0  u64 size                          0  u32 code   0 OK, 1 address rejected
 *  8  u64 addr (target's address)       4  u32 magic  0x4D435456 ("VTCM" in memory, "MCTV" as a number)
 * 16  u8  opcode 0 READ, 1 WRITE; | 0x80 = v2 framing
 * 17  7 bytes of padding, ignored
 * </pre>
 * v2 WRITE: header, payload, then the target answers one status frame once the payload is in memory. v2 READ: the
 * target answers a status frame, then the payload. v1 has no status frames at all: a rejected request is answered by
 * closing the connection.
 */
final class MooncakeWire {
    static final int HEADER_BYTES = 24;
    static final int STATUS_BYTES = 8;
    static final int OP_READ = 0;
    static final int OP_WRITE = 1;
    static final int V2_FLAG = 0x80;
    static final int MAGIC = 0x4D435456;
    static final int STATUS_OK = 0;
    static final int STATUS_REJECTED = 1;
    /**
     * Not Mooncake's: a tent4j target refuses a WRITE into a READ_ONLY buffer with it. Mooncake registrations have no
     * permissions, and its initiator counts any code but OK as a failure, so the extra code is safe to send it.
     */
    static final int STATUS_PERMISSION_DENIED = 2;

    private MooncakeWire() {
    }

    static ByteBuffer headerBuffer() {
        return ByteBuffer.allocateDirect(HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    }

    static ByteBuffer statusBuffer() {
        return ByteBuffer.allocateDirect(STATUS_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Fills {@code b} (little-endian, 24 bytes) with a request header, flipped for writing. */
    static ByteBuffer encodeHeader(ByteBuffer b, Opcode op, long address, long size, boolean v2) {
        int opcode = (op == Opcode.READ ? OP_READ : OP_WRITE) | (v2 ? V2_FLAG : 0);
        return b.clear().putLong(size).putLong(address).put((byte) opcode).put((byte) 0).putShort((short) 0)
                .putInt(0).flip();
    }

    static long size(ByteBuffer header) {
        return header.getLong(0);
    }

    static long address(ByteBuffer header) {
        return header.getLong(8);
    }

    static int opcodeByte(ByteBuffer header) {
        return header.get(16) & 0xff;
    }

    static boolean isV2(int opcodeByte) {
        return (opcodeByte & V2_FLAG) != 0;
    }

    /** The opcode without the version bit, or null for one Mooncake does not define. */
    static Opcode opcode(int opcodeByte) {
        return switch (opcodeByte & ~V2_FLAG) {
            case OP_READ -> Opcode.READ;
            case OP_WRITE -> Opcode.WRITE;
            default -> null;
        };
    }

    static ByteBuffer encodeStatus(ByteBuffer b, int code) {
        return b.clear().putLong(((long) MAGIC << 32) | (code & 0xffffffffL)).flip();
    }

    static boolean hasMagic(long status) {
        return (int) (status >>> 32) == MAGIC;
    }

    static int code(long status) {
        return (int) status;
    }

    /** {@code [0x<addr>, +<size>)}, the way every message names a range. */
    static String range(long address, long size) {
        return "[0x" + Long.toHexString(address) + ", +" + Long.toUnsignedString(size) + ")";
    }
}
