package org.tent4j.transport.rdma;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;

/**
 * The queue-pair exchange carried by the control-plane service {@code rdma.connect}. The initiator sends
 * {@link Type#CONNECT} listing one entry per QP it created; the target creates a QP for each entry, moves it to RTS,
 * and answers {@link Type#ACCEPT} with its own entries in the same order (QPs pair by position, as in Mooncake).
 * {@link Type#DISCONNECT} (no entries) tells the target to destroy the QPs of a connection.
 *
 * <p>Wire format, big-endian, fixed size, no text:
 * <pre>
 * offset size  field
 *  0     4     magic 0x74346A52 ("t4jR")
 *  4     1     version, 1
 *  5     1     type: 1 CONNECT, 2 ACCEPT, 3 DISCONNECT
 *  6     2     entry count n: 1..1024 for CONNECT/ACCEPT, 0 for DISCONNECT
 *  8     8     connection id, chosen by the initiator
 * 16     32*n  entries:
 *          +0  u16  sender's device index (in the sender's published device list)
 *          +2  u16  receiver's device index (in the receiver's published device list)
 *          +4  u32  qp_num (24 bits)
 *          +8  u32  first PSN (24 bits)
 *          +12 u16  LID (0 on RoCE)
 *          +14 u8   path MTU the sender can use, as ibv_mtu (1 = 256 .. 5 = 4096)
 *          +15 u8   reserved, 0
 *          +16 16   GID
 * </pre>
 */
record HandshakeMessage(Type type, long connectionId, List<Endpoint> endpoints) {
    static final int MAGIC = 0x74346A52;
    static final int VERSION = 1;
    static final int HEADER_BYTES = 16;
    static final int ENDPOINT_BYTES = 32;
    static final int MAX_ENDPOINTS = 1024;

    enum Type {
        CONNECT(1), ACCEPT(2), DISCONNECT(3);

        final int code;

        Type(int code) {
            this.code = code;
        }

        static Type of(int code) {
            for (Type t : values()) {
                if (t.code == code) {
                    return t;
                }
            }
            return null;
        }
    }

    /** One QP as its owner describes it. */
    record Endpoint(int senderDevice, int receiverDevice, int qpNum, int psn, int lid, int mtu, byte[] gid) {
        Endpoint {
            checkRange("sender device index", senderDevice, 0xFFFF);
            checkRange("receiver device index", receiverDevice, 0xFFFF);
            checkRange("qp_num", qpNum, 0xFFFFFF);
            checkRange("psn", psn, 0xFFFFFF);
            checkRange("lid", lid, 0xFFFF);
            if (mtu < Verbs.IBV_MTU_256 || mtu > Verbs.IBV_MTU_4096) {
                throw protocol("mtu " + mtu + " is not an ibv_mtu value (1..5)");
            }
            if (gid.length != 16) {
                throw protocol("gid must be 16 bytes, got " + gid.length);
            }
            gid = gid.clone();
        }

        QpTransitions.RemoteQp remoteQp() {
            return new QpTransitions.RemoteQp(qpNum, psn, lid, mtu, gid);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Endpoint e && senderDevice == e.senderDevice && receiverDevice == e.receiverDevice
                    && qpNum == e.qpNum && psn == e.psn && lid == e.lid && mtu == e.mtu && Arrays.equals(gid, e.gid);
        }

        @Override
        public int hashCode() {
            return ((qpNum * 31 + psn) * 31 + senderDevice) * 31 + Arrays.hashCode(gid);
        }

        @Override
        public String toString() {
            return "Endpoint[dev " + senderDevice + "->" + receiverDevice + ", qp 0x" + Integer.toHexString(qpNum)
                    + ", psn " + psn + ", lid " + lid + ", mtu " + VerbsValues.mtuBytes(mtu) + ", gid "
                    + VerbsValues.gidToString(gid) + "]";
        }
    }

    HandshakeMessage {
        endpoints = List.copyOf(endpoints);
        if (type == Type.DISCONNECT ? !endpoints.isEmpty() : endpoints.isEmpty()) {
            throw protocol(type + " must carry " + (type == Type.DISCONNECT ? "no" : "at least one") + " endpoint");
        }
        if (endpoints.size() > MAX_ENDPOINTS) {
            throw protocol(endpoints.size() + " endpoints exceed the limit of " + MAX_ENDPOINTS);
        }
    }

    byte[] encode() {
        ByteBuffer b = ByteBuffer.allocate(HEADER_BYTES + ENDPOINT_BYTES * endpoints.size()).order(ByteOrder.BIG_ENDIAN);
        b.putInt(MAGIC).put((byte) VERSION).put((byte) type.code).putShort((short) endpoints.size())
                .putLong(connectionId);
        for (Endpoint e : endpoints) {
            b.putShort((short) e.senderDevice()).putShort((short) e.receiverDevice()).putInt(e.qpNum())
                    .putInt(e.psn()).putShort((short) e.lid()).put((byte) e.mtu()).put((byte) 0).put(e.gid());
        }
        return b.array();
    }

    /**
     * Parses and checks a message.
     *
     * @throws TransferException PROTOCOL naming what is malformed
     */
    static HandshakeMessage decode(byte[] bytes) {
        if (bytes == null || bytes.length < HEADER_BYTES) {
            throw protocol("message of " + (bytes == null ? 0 : bytes.length) + " bytes is shorter than the "
                    + HEADER_BYTES + "-byte header");
        }
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.BIG_ENDIAN);
        int magic = b.getInt();
        if (magic != MAGIC) {
            throw protocol("bad magic 0x" + Integer.toHexString(magic) + " (expected 0x" + Integer.toHexString(MAGIC)
                    + ")");
        }
        int version = b.get() & 0xFF;
        if (version != VERSION) {
            throw protocol("unsupported version " + version + " (this side speaks " + VERSION + ")");
        }
        int typeCode = b.get() & 0xFF;
        Type type = Type.of(typeCode);
        if (type == null) {
            throw protocol("unknown message type " + typeCode);
        }
        int count = b.getShort() & 0xFFFF;
        long connectionId = b.getLong();
        long expected = HEADER_BYTES + (long) ENDPOINT_BYTES * count;
        if (bytes.length != expected) {
            throw protocol(type + " with " + count + " endpoints must be " + expected + " bytes, got " + bytes.length);
        }
        List<Endpoint> endpoints = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int sender = b.getShort() & 0xFFFF;
            int receiver = b.getShort() & 0xFFFF;
            int qpNum = b.getInt();
            int psn = b.getInt();
            int lid = b.getShort() & 0xFFFF;
            int mtu = b.get() & 0xFF;
            int reserved = b.get() & 0xFF;
            if (reserved != 0) {
                throw protocol("endpoint " + i + ": reserved byte is " + reserved + ", must be 0");
            }
            byte[] gid = new byte[16];
            b.get(gid);
            try {
                endpoints.add(new Endpoint(sender, receiver, qpNum, psn, lid, mtu, gid));
            } catch (TransferException e) {
                throw protocol("endpoint " + i + ": " + e.getMessage().substring(PREFIX.length()));
            }
        }
        return new HandshakeMessage(type, connectionId, endpoints);
    }

    private static final String PREFIX = "rdma handshake: ";

    private static TransferException protocol(String what) {
        return new TransferException(ErrorCode.PROTOCOL, PREFIX + what);
    }

    private static void checkRange(String what, int value, int max) {
        if (value < 0 || value > max) {
            throw protocol(what + " " + Integer.toUnsignedString(value) + " is out of range 0.." + max);
        }
    }
}
