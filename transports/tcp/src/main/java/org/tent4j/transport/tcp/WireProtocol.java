package org.tent4j.transport.tcp;

import java.nio.charset.StandardCharsets;

import io.netty.buffer.ByteBuf;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;

/**
 * Constants and encodings of the tcp data protocol, version 1; see {@code package-info.java} and
 * {@code transports/tcp/PROTOCOL.md}. Every integer is little-endian.
 */
final class WireProtocol {
    /** The bytes {@code T 4 J T} read as a little-endian u32. */
    static final int REQUEST_MAGIC = 0x544A3454;
    /** The bytes {@code T 4 J R}: a different magic per direction catches a stream fed back to the wrong side. */
    static final int RESPONSE_MAGIC = 0x524A3454;
    static final int VERSION = 1;

    static final int REQUEST_HEADER_BYTES = 32;
    static final int RESPONSE_HEADER_BYTES = 16;
    /** Error frames carry at most this much UTF-8 after the u32 length, so a peer cannot make us buffer more. */
    static final int MAX_ERROR_MESSAGE_BYTES = 1024;

    static final int OP_READ = 1;
    static final int OP_WRITE = 2;

    static final int STATUS_OK = 0;
    static final int STATUS_INVALID_ARGUMENT = 1;
    static final int STATUS_ADDRESS_NOT_REGISTERED = 2;
    static final int STATUS_OUT_OF_BOUNDS = 3;
    static final int STATUS_PERMISSION_DENIED = 4;
    static final int STATUS_PROTOCOL = 5;
    static final int STATUS_INTERNAL = 6;
    static final int STATUS_TOO_MANY_REQUESTS = 7;

    /** The largest {@code max_frame} accepted: one frame must fit an int-indexed Netty buffer with room to spare. */
    static final long MAX_FRAME_LIMIT = 1L << 30;

    private WireProtocol() {
    }

    static int opcodeOf(Opcode opcode) {
        return opcode == Opcode.READ ? OP_READ : OP_WRITE;
    }

    static String opcodeName(int op) {
        return switch (op) {
            case OP_READ -> "READ";
            case OP_WRITE -> "WRITE";
            default -> "opcode " + op;
        };
    }

    /** The status a target sends for a failed check; codes a target never produces travel as INTERNAL. */
    static int statusOf(ErrorCode code) {
        return switch (code) {
            case INVALID_ARGUMENT -> STATUS_INVALID_ARGUMENT;
            case ADDRESS_NOT_REGISTERED -> STATUS_ADDRESS_NOT_REGISTERED;
            case OUT_OF_BOUNDS -> STATUS_OUT_OF_BOUNDS;
            case PERMISSION_DENIED -> STATUS_PERMISSION_DENIED;
            case PROTOCOL -> STATUS_PROTOCOL;
            case TOO_MANY_REQUESTS -> STATUS_TOO_MANY_REQUESTS;
            default -> STATUS_INTERNAL;
        };
    }

    /** How an initiator reports a target's status; an unknown status means the peer failed in a way we cannot name. */
    static ErrorCode errorOf(int status) {
        return switch (status) {
            case STATUS_INVALID_ARGUMENT -> ErrorCode.INVALID_ARGUMENT;
            case STATUS_ADDRESS_NOT_REGISTERED -> ErrorCode.ADDRESS_NOT_REGISTERED;
            case STATUS_OUT_OF_BOUNDS -> ErrorCode.OUT_OF_BOUNDS;
            case STATUS_PERMISSION_DENIED -> ErrorCode.PERMISSION_DENIED;
            case STATUS_PROTOCOL -> ErrorCode.PROTOCOL;
            case STATUS_INTERNAL -> ErrorCode.INTERNAL;
            case STATUS_TOO_MANY_REQUESTS -> ErrorCode.TOO_MANY_REQUESTS;
            default -> ErrorCode.PEER_FAILED;
        };
    }

    /** Writes a whole error response: header, u32 length of {@code text} (from {@link #errorText}), the text. */
    static void writeErrorResponse(ByteBuf out, long requestId, int status, byte[] text) {
        out.writeIntLE(RESPONSE_MAGIC).writeIntLE(status).writeLongLE(requestId).writeIntLE(text.length).writeBytes(text);
    }

    /** {@code message} as UTF-8, cut at a character edge to at most {@link #MAX_ERROR_MESSAGE_BYTES}. */
    static byte[] errorText(String message) {
        byte[] utf8 = message.getBytes(StandardCharsets.UTF_8);
        int n = Math.min(utf8.length, MAX_ERROR_MESSAGE_BYTES);
        while (n > 0 && n < utf8.length && (utf8[n] & 0xC0) == 0x80) {
            n--; // utf8[n] continues a character: cut before that character starts
        }
        return n == utf8.length ? utf8 : java.util.Arrays.copyOf(utf8, n);
    }

    static void writeOkResponse(ByteBuf out, long requestId) {
        out.writeIntLE(RESPONSE_MAGIC).writeIntLE(STATUS_OK).writeLongLE(requestId);
    }

    /**
     * Where a header of {@code size} bytes lies whole in {@code in} while none of it is in {@code acc} yet: its index
     * in {@code in}, which is moved past it, so it is parsed where it lies. Otherwise -1, and the header is collected
     * with {@link #fill}.
     */
    static int wholeHeaderAt(ByteBuf acc, ByteBuf in, int size) {
        if (acc.writerIndex() != 0 || in.readableBytes() < size) {
            return -1;
        }
        int at = in.readerIndex();
        in.skipBytes(size);
        return at;
    }

    /** Moves bytes of {@code in} into {@code acc} until it holds {@code need}; returns whether it does. */
    static boolean fill(ByteBuf acc, ByteBuf in, int need) {
        int n = Math.min(in.readableBytes(), need - acc.writerIndex());
        acc.writeBytes(in, n);
        return acc.writerIndex() == need;
    }

    static void writeRequest(ByteBuf out, int op, long requestId, long remoteAddress, long length) {
        out.writeIntLE(REQUEST_MAGIC).writeByte(VERSION).writeByte(op).writeShortLE(0)
                .writeLongLE(requestId).writeLongLE(remoteAddress).writeLongLE(length);
    }
}
