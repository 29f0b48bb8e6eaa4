package org.tent4j.transport.tcp;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/** Speaks the tcp data protocol byte by byte over a plain socket, the way a foreign or hostile client would. */
final class RawClient implements AutoCloseable {
    static final int MAGIC = 0x544A3454;
    static final int RESPONSE_MAGIC = 0x524A3454;

    private final Socket socket;
    private final OutputStream out;
    private final DataInputStream in;

    record Response(int magic, int status, long id) {
    }

    RawClient(int port) throws IOException {
        this(port, 0);
    }

    /** With a receive buffer of about {@code receiveBuffer} bytes (0 = the system's), to stop reading early. */
    RawClient(int port, int receiveBuffer) throws IOException {
        socket = new Socket();
        if (receiveBuffer > 0) {
            socket.setReceiveBufferSize(receiveBuffer);
        }
        socket.connect(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), port));
        socket.setSoTimeout(20_000); // hang guard only
        socket.setTcpNoDelay(true);
        out = socket.getOutputStream();
        in = new DataInputStream(socket.getInputStream());
    }

    static byte[] header(int magic, int version, int op, int flags, long id, long address, long length) {
        return ByteBuffer.allocate(32).order(ByteOrder.LITTLE_ENDIAN).putInt(magic).put((byte) version)
                .put((byte) op).putShort((short) flags).putLong(id).putLong(address).putLong(length).array();
    }

    void request(int op, long id, long address, long length) throws IOException {
        send(header(MAGIC, 1, op, 0, id, address, length));
    }

    void send(byte[] bytes) throws IOException {
        out.write(bytes);
        out.flush();
    }

    Response response() throws IOException {
        byte[] h = new byte[16];
        in.readFully(h);
        ByteBuffer b = ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN);
        return new Response(b.getInt(), b.getInt(), b.getLong());
    }

    String errorMessage() throws IOException {
        byte[] n = new byte[4];
        in.readFully(n);
        int len = ByteBuffer.wrap(n).order(ByteOrder.LITTLE_ENDIAN).getInt();
        if (len < 0 || len > 1024) {
            throw new IOException("error message length " + len + " out of bounds");
        }
        byte[] text = new byte[len];
        in.readFully(text);
        return new String(text, StandardCharsets.UTF_8);
    }

    byte[] bytes(int n) throws IOException {
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }

    /** Whether the server closed the connection (EOF or reset) rather than sending more. */
    boolean closedByServer() throws IOException {
        try {
            return in.read() == -1;
        } catch (EOFException | SocketException e) {
            return true;
        }
    }

    /** Reads until the server ends the stream (EOF or reset); how many bytes came first. */
    long drainToEnd() throws SocketTimeoutException {
        byte[] sink = new byte[64 << 10];
        long total = 0;
        try {
            int n;
            while ((n = in.read(sink)) > 0) {
                total += n;
            }
        } catch (SocketTimeoutException e) {
            throw e; // the server kept the connection open
        } catch (IOException e) {
            // a reset ends the stream as well
        }
        return total;
    }

    Socket socket() {
        return socket;
    }

    /** Closes with RST instead of FIN, as a crashed client would. */
    void abort() throws IOException {
        socket.setSoLinger(true, 0);
        socket.close();
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
