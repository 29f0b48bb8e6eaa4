package org.tent4j.runtime.control;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.function.IntFunction;

/** Speaks the control-plane frame format over a plain socket, as a foreign or hostile peer would. */
final class RawControlClient implements AutoCloseable {
    static final byte REQUEST = 0;
    static final byte REPLY = 1;
    static final byte ERROR = 2;

    final Socket socket;
    private final DataOutputStream out;
    private final DataInputStream in;

    record Frame(byte kind, long id, String service, String caller, byte[] payload) {
        String text() {
            return kind == ERROR ? new String(payload, 1, payload.length - 1, StandardCharsets.UTF_8)
                    : new String(payload, StandardCharsets.UTF_8);
        }

        int errorOrdinal() {
            return kind == ERROR ? payload[0] : -1;
        }
    }

    RawControlClient(int port) throws IOException {
        this(new Socket(InetAddress.getLoopbackAddress(), port));
    }

    RawControlClient(Socket socket) throws IOException {
        this.socket = socket;
        socket.setSoTimeout(20_000); // hang guard only
        socket.setTcpNoDelay(true);
        out = new DataOutputStream(socket.getOutputStream());
        in = new DataInputStream(socket.getInputStream());
    }

    static byte[] encode(byte kind, long id, String service, String caller, byte[] payload) {
        byte[] s = service.getBytes(StandardCharsets.UTF_8);
        byte[] c = caller.getBytes(StandardCharsets.UTF_8);
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(4 + 1 + 8 + 2 + s.length + 2 + c.length + payload.length);
        b.putInt(b.capacity() - 4).put(kind).putLong(id).putShort((short) s.length).put(s).putShort((short) c.length)
                .put(c).put(payload);
        return b.array();
    }

    void send(byte kind, long id, String service, String caller, byte[] payload) throws IOException {
        sendRaw(encode(kind, id, service, caller, payload));
    }

    /**
     * Requests 1 to {@code count} (their ids), {@code payload.apply(id)} each, in one write: all of them arrive before
     * the node answers any.
     */
    void sendRequests(int count, String service, String caller, IntFunction<byte[]> payload)
            throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        for (int id = 1; id <= count; id++) {
            all.writeBytes(encode(REQUEST, id, service, caller, payload.apply(id)));
        }
        sendRaw(all.toByteArray());
    }

    void sendRaw(byte[] bytes) throws IOException {
        out.write(bytes);
        out.flush();
    }

    Frame read() throws IOException {
        int n = in.readInt();
        if (n < 11 || n > 64 << 20) {
            throw new IOException("frame length " + n);
        }
        byte[] f = new byte[n];
        in.readFully(f);
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(f);
        byte kind = b.get();
        long id = b.getLong();
        byte[] s = new byte[b.getShort() & 0xFFFF];
        b.get(s);
        byte[] c = new byte[b.getShort() & 0xFFFF];
        b.get(c);
        byte[] payload = new byte[b.remaining()];
        b.get(payload);
        return new Frame(kind, id, new String(s, StandardCharsets.UTF_8), new String(c, StandardCharsets.UTF_8), payload);
    }

    /** Whether the other side ended the connection (EOF or reset) rather than sending more. */
    boolean closedByPeer() throws IOException {
        try {
            return in.read() == -1;
        } catch (EOFException | SocketException e) {
            return true;
        }
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
