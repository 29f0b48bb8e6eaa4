package org.tent4j.transport.mooncake;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;

/**
 * Mooncake's handshake socket ({@code src/transfer_metadata_plugin.cpp}): one TCP connection per request, one frame
 * each way. A frame is {@code u64 length} (little-endian; it counts the type byte and the JSON), {@code u8 type}
 * ({@link #CONNECTION}, {@link #METADATA}, {@link #NOTIFY}, {@link #PROBE}), then JSON text. A legacy peer omits the
 * type byte: a first byte above 3 is the start of untyped JSON, which Mooncake treats as a Connection request. Lengths
 * of 0 and above 1 MiB ({@code MC_HANDSHAKE_MAX_LENGTH}) are refused before anything is read into memory.
 *
 * <p>In P2P mode ({@code P2PHANDSHAKE}) this socket is how a Mooncake engine fetches a peer's descriptor: it sends a
 * Metadata frame with its own descriptor and gets the peer's back. The server answers, calls
 * {@code shutdown(SHUT_WR)} and waits for the client to close.
 */
final class MooncakeHandshake {
    static final int CONNECTION = 0;
    static final int METADATA = 1;
    static final int NOTIFY = 2;
    static final int PROBE = 3;
    static final int MAX_LENGTH = 1 << 20;
    /** Mooncake's {@code MC_HANDSHAKE_LISTEN_BACKLOG}. */
    static final int LISTEN_BACKLOG = 128;
    /** Mooncake's server receive timeout: a client that sends nothing within it is dropped. */
    static final Duration SERVER_RECEIVE_TIMEOUT = Duration.ofSeconds(5);

    /** One frame: its type (-1 for a legacy untyped one) and its JSON. */
    record Frame(int type, byte[] json) {
    }

    private MooncakeHandshake() {
    }

    /** Writes one frame; a {@code type} of -1 writes a legacy frame without the type byte, as such a peer sent. */
    static void write(OutputStream out, int type, byte[] json) throws IOException {
        int typeBytes = type < 0 ? 0 : 1;
        ByteBuffer b = ByteBuffer.allocate(8 + typeBytes + json.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong((long) typeBytes + json.length);
        if (typeBytes == 1) {
            b.put((byte) type);
        }
        out.write(b.put(json).array());
        out.flush();
    }

    /** Reads one frame, refusing lengths outside [1, 1 MiB]; {@code peer} is named in every error. */
    static Frame read(InputStream in, String peer) throws IOException {
        DataInputStream data = new DataInputStream(in);
        byte[] prefix = new byte[8];
        data.readFully(prefix);
        long length = ByteBuffer.wrap(prefix).order(ByteOrder.LITTLE_ENDIAN).getLong();
        if (length <= 0 || length > MAX_LENGTH) {
            throw new IOException("handshake frame from " + peer + " announces " + Long.toUnsignedString(length)
                    + " bytes, outside [1, " + MAX_LENGTH + "] (MC_HANDSHAKE_MAX_LENGTH)");
        }
        byte[] body = new byte[(int) length];
        try {
            data.readFully(body);
        } catch (EOFException e) {
            throw new EOFException("handshake frame from " + peer + " ends before its " + length + " announced bytes");
        }
        int first = body[0] & 0xff;
        if (first > PROBE) {
            return new Frame(-1, body);
        }
        byte[] json = new byte[body.length - 1];
        System.arraycopy(body, 1, json, 0, json.length);
        return new Frame(first, json);
    }

    /**
     * Fetches a Mooncake engine's descriptor over its handshake socket, as a P2P-mode Mooncake engine does: sends
     * {@code ownDescriptor}, reads the Metadata reply.
     *
     * @throws TransferException PEER_UNREACHABLE when the socket cannot be reached or answers nothing in time;
     *                           PROTOCOL when the answer is not a Metadata frame with a well-formed descriptor
     */
    static MooncakeSegmentDescriptor fetchDescriptor(String host, int port, byte[] ownDescriptor, Duration timeout) {
        String peer = host + ":" + port;
        String source = "P2P handshake " + peer;
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), (int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
            s.setSoTimeout((int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
            write(s.getOutputStream(), METADATA, ownDescriptor);
            Frame reply;
            try {
                reply = read(s.getInputStream(), peer);
            } catch (SocketTimeoutException e) {
                throw new TransferException(ErrorCode.PEER_UNREACHABLE, source + " answered nothing within "
                        + timeout.toMillis() + " ms");
            } catch (IOException e) {
                throw new TransferException(ErrorCode.PROTOCOL, source + ": " + e.getMessage(), e);
            }
            if (reply.type() != METADATA) {
                throw new TransferException(ErrorCode.PROTOCOL, source + " answered a frame of type " + reply.type()
                        + ", not Metadata (1)");
            }
            return MooncakeSegmentDescriptor.parse(source, reply.json());
        } catch (IOException e) {
            throw new TransferException(ErrorCode.PEER_UNREACHABLE, "cannot reach the Mooncake handshake socket "
                    + peer + ": " + e, e);
        }
    }

    /** What this engine answers to one request, in the request's type; Connection and Notify are declined. */
    static byte[] answer(int type, byte[] ownDescriptor) {
        String json = switch (type) {
            case METADATA -> new String(ownDescriptor, StandardCharsets.UTF_8);
            case PROBE -> "{\"status\":\"success\"}";
            // an empty notify_msg is Mooncake's rejection: tent4j's notifications do not travel on this socket
            case NOTIFY -> "{\"name\":\"\",\"notify_msg\":\"\"}";
            // a non-empty reply_msg rejects the queue-pair exchange: this engine has no Mooncake RDMA endpoint
            default -> "{\"reply_msg\":\"tent4j mooncake-tcp serves TCP only; no RDMA endpoint here\"}";
        };
        return (json + "\n").getBytes(StandardCharsets.UTF_8);
    }
}
