package org.tent4j.transport.mooncake;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.Set;

/**
 * A Mooncake TE TCP target written for the tests from the reference facts alone (mooncake-te-tent.md 4.1), with
 * java.net and byte arithmetic only, none of the plugin's code: so the plugin is checked against the protocol, not
 * against itself. Its memory is one byte array at Mooncake-like absolute addresses, split into registered buffers.
 *
 * <p>It records every request header it reads, byte for byte, and can misbehave on purpose ({@link Misbehaviour}).
 */
final class FakeMooncakeTarget implements AutoCloseable {
    /** Where the C++ engine of the golden capture had its buffer. */
    static final long BASE = 0x7fd329c00000L;

    enum Misbehaviour {
        NONE,
        /** Answers a v2 request with a status frame whose high half is not "MCTV". */
        STATUS_WITHOUT_MAGIC,
        /** Answers a READ with OK and half the payload, then closes. */
        CLOSE_MID_PAYLOAD,
        /** Reads the header and then says nothing, keeping the connection open. */
        SILENT,
        /**
         * Answers a v2 WRITE only once it has read the next request (a WRITE too) as well, then answers both: only an
         * initiator that sends its next request before the last answer is back gets any answer at all.
         */
        READ_AHEAD
    }

    final byte[] memory;
    private final long[][] buffers;
    private final ServerSocket server;
    private final Thread acceptor;
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    final BlockingQueue<byte[]> headers = new LinkedBlockingQueue<>();
    /** Counted down when a connection ends; a test waits on it instead of sleeping. */
    volatile CountDownLatch closedConnections = new CountDownLatch(1);
    volatile Misbehaviour misbehaviour = Misbehaviour.NONE;

    /** @param bufferLengths consecutive registered buffers from {@link #BASE}, with no gap between them */
    FakeMooncakeTarget(long... bufferLengths) throws IOException {
        long total = Arrays.stream(bufferLengths).sum();
        memory = new byte[Math.toIntExact(total)];
        buffers = new long[bufferLengths.length][];
        long at = BASE;
        for (int i = 0; i < bufferLengths.length; i++) {
            buffers[i] = new long[]{at, bufferLengths[i]};
            at += bufferLengths[i];
        }
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        acceptor = Thread.ofVirtual().name("fake-mooncake-accept").start(this::acceptLoop);
    }

    int port() {
        return server.getLocalPort();
    }

    /** The segment descriptor as a Mooncake engine publishes it (jsoncpp output, trailing newline included). */
    String descriptorJson(Integer protoVersion) {
        StringBuilder sb = new StringBuilder("{\"buffers\":[");
        for (int i = 0; i < buffers.length; i++) {
            sb.append(i == 0 ? "" : ",").append("{\"addr\":").append(buffers[i][0]).append(",\"length\":")
                    .append(buffers[i][1]).append(",\"name\":\"cpu:0\"}");
        }
        sb.append("],\"name\":\"mooncake-node\",\"protocol\":\"tcp\",\"tcp_data_port\":").append(port());
        if (protoVersion != null) {
            sb.append(",\"tcp_proto_version\":").append(protoVersion);
        }
        return sb.append(",\"timestamp\":\"2026-11-27 11:00:00\"}\n").toString();
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                Socket s = server.accept();
                sockets.add(s);
                Thread.ofVirtual().name("fake-mooncake-serve").start(() -> serve(s));
            } catch (IOException e) {
                return;
            }
        }
    }

    private void serve(Socket s) {
        try (s) {
            s.setTcpNoDelay(true);
            DataInputStream in = new DataInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            byte[] h = new byte[24];
            while (true) {
                try {
                    in.readFully(h);
                } catch (EOFException e) {
                    return;
                }
                headers.add(h.clone());
                long size = le64(h, 0);
                long addr = le64(h, 8);
                int opcode = h[16] & 0xff;
                boolean v2 = (opcode & 0x80) != 0;
                int op = opcode & 0x7f;
                if (misbehaviour == Misbehaviour.SILENT) {
                    in.read(); // blocks until the initiator gives up and closes
                    return;
                }
                int index = valid(addr, size);
                if (index < 0 || (op != 0 && op != 1)) {
                    if (v2) {
                        out.write(status(1));
                        out.flush();
                    }
                    return; // Mooncake closes the connection after refusing, v1 silently
                }
                int at = Math.toIntExact(addr - BASE);
                int n = Math.toIntExact(size);
                if (op == 1 && v2 && misbehaviour == Misbehaviour.READ_AHEAD) {
                    in.readFully(memory, at, n);
                    in.readFully(h);
                    headers.add(h.clone());
                    long next = le64(h, 8);
                    in.readFully(memory, Math.toIntExact(next - BASE), Math.toIntExact(le64(h, 0)));
                    out.write(status(0));
                    out.write(status(0));
                    out.flush();
                } else if (op == 1) {
                    in.readFully(memory, at, n);
                    if (v2) {
                        out.write(misbehaviour == Misbehaviour.STATUS_WITHOUT_MAGIC ? new byte[8] : status(0));
                        out.flush();
                    }
                } else {
                    if (v2) {
                        out.write(misbehaviour == Misbehaviour.STATUS_WITHOUT_MAGIC ? new byte[8] : status(0));
                    }
                    if (misbehaviour == Misbehaviour.CLOSE_MID_PAYLOAD) {
                        out.write(memory, at, n / 2);
                        out.flush();
                        return;
                    }
                    out.write(memory, at, n);
                    out.flush();
                }
            }
        } catch (IOException e) {
            // the initiator went away
        } finally {
            sockets.remove(s);
            closedConnections.countDown();
        }
    }

    /** Index of the one registered buffer holding {@code [addr, addr + size)}, or -1, as Mooncake's findBuffer. */
    private int valid(long addr, long size) {
        if (size == 0 || addr + size < addr) {
            return -1;
        }
        for (int i = 0; i < buffers.length; i++) {
            if (buffers[i][0] <= addr && addr + size <= buffers[i][0] + buffers[i][1]) {
                return i;
            }
        }
        return -1;
    }

    /** A status frame: u64 little-endian, magic 0x4D435456 in the high 32 bits, the code in the low 32. */
    static byte[] status(int code) {
        long v = (0x4D435456L << 32) | (code & 0xffffffffL);
        byte[] b = new byte[8];
        for (int i = 0; i < 8; i++) {
            b[i] = (byte) (v >>> (8 * i));
        }
        return b;
    }

    static long le64(byte[] b, int at) {
        long v = 0;
        for (int i = 7; i >= 0; i--) {
            v = (v << 8) | (b[at + i] & 0xff);
        }
        return v;
    }

    /** A request header as the C++ initiator writes it: size, addr, opcode (| 0x80 for v2), zero padding. */
    static byte[] header(long size, long addr, int op, boolean v2) {
        byte[] b = new byte[24];
        for (int i = 0; i < 8; i++) {
            b[i] = (byte) (size >>> (8 * i));
            b[8 + i] = (byte) (addr >>> (8 * i));
        }
        b[16] = (byte) (op | (v2 ? 0x80 : 0));
        return b;
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) {
            sb.append(sb.isEmpty() ? "" : " ").append(String.format("%02x", x & 0xff));
        }
        return sb.toString();
    }

    static byte[] readAll(InputStream in, int n) throws IOException {
        byte[] b = new byte[n];
        new DataInputStream(in).readFully(b);
        return b;
    }

    /**
     * What a Mooncake initiator does with a tent4j target it found: on one connection to {@code port}, a v2 WRITE of
     * {@code payload} at {@code address} and a v2 READ of it back, each answered with the OK status (returned as
     * hex, twice) before the READ's bytes.
     */
    static String[] writeThenReadBack(int port, long address, byte[] payload) throws IOException {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
            s.setTcpNoDelay(true);
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            out.write(header(payload.length, address, 1, true));
            out.write(payload);
            String writeStatus = hex(readAll(s.getInputStream(), 8));
            out.write(header(payload.length, address, 0, true));
            String readStatus = hex(readAll(s.getInputStream(), 8));
            byte[] back = readAll(s.getInputStream(), payload.length);
            if (!Arrays.equals(payload, back)) {
                throw new AssertionError("the READ returned other bytes than the WRITE stored at 0x"
                        + Long.toHexString(address));
            }
            return new String[]{writeStatus, readStatus};
        }
    }

    List<Socket> openSockets() {
        return List.copyOf(sockets);
    }

    @Override
    public void close() throws Exception {
        server.close();
        for (Socket s : sockets) {
            s.close();
        }
        acceptor.join(2_000);
    }
}
