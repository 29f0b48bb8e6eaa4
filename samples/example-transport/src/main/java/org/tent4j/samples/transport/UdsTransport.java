package org.tent4j.samples.transport;

import java.io.EOFException;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportContext;

/**
 * The uds transport of one engine. It is both sides at once: it listens on a socket for peers that read and write
 * this engine's memory (the target side, below), and it connects to peers' sockets to move its own slices
 * ({@link UdsConnection}, the initiator side).
 *
 * <p>Wire format, big-endian. Request: {@code int magic, int opcode (1 READ, 2 WRITE), long address, long length},
 * followed by {@code length} payload bytes for a WRITE. Reply: {@code int status (0 ok, 1 error), int n}, then either
 * {@code n} bytes of UTF-8 {@code "<ErrorCode>\n<message>"} or, for a successful READ, {@code length} payload bytes.
 * One request is outstanding per connection, so replies need no ids.
 */
final class UdsTransport implements Transport {
    private static final Logger LOG = LoggerFactory.getLogger(UdsTransport.class);

    static final String SOCKET = "socket";
    static final int MAGIC = 0x54554453; // "TUDS"
    static final int OP_READ = 1;
    static final int OP_WRITE = 2;
    static final int REQUEST_BYTES = 24;
    static final int REPLY_BYTES = 8;
    static final int MAX_MESSAGE_BYTES = 4096;

    private final TransportContext context;
    private final Path directory;
    private final Path socketPath;
    private final ServerSocketChannel server;
    private final Set<SocketChannel> served = ConcurrentHashMap.newKeySet();
    private final Set<Thread> threads = ConcurrentHashMap.newKeySet();
    private final Set<UdsConnection> connections = ConcurrentHashMap.newKeySet();
    private final int paths;
    private volatile boolean closed;

    UdsTransport(TransportContext context, Path parent, int paths) throws IOException {
        this.context = context;
        this.paths = paths;
        // a private directory per engine: the socket name cannot collide, and nobody else can plant a file there
        this.directory = Files.createTempDirectory(parent, "tent4j-uds-");
        this.socketPath = directory.resolve("s");
        this.server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            server.bind(UnixDomainSocketAddress.of(socketPath));
        } catch (IOException e) {
            server.close();
            Files.deleteIfExists(directory);
            throw e;
        }
        start("uds-accept-" + context.segmentName(), this::acceptLoop);
    }

    @Override
    public String id() {
        return UdsTransportProvider.ID;
    }

    /** Peers need only the socket's path: addresses are checked by the target, so no per-buffer keys exist. */
    @Override
    public Map<String, String> segmentAttributes() {
        return Map.of(SOCKET, socketPath.toString());
    }

    @Override
    public Optional<Map<String, String>> registerBuffer(LocalBuffer buffer) {
        // only host memory can go through a socket; an empty answer keeps this transport off device buffers
        return buffer.location().kindOrCpu() == MemoryKind.CPU ? Optional.of(Map.of()) : Optional.empty();
    }

    @Override
    public PeerConnection connect(SegmentDescriptor peer) {
        if (closed) {
            throw new TransferException(ErrorCode.ENGINE_CLOSED, "uds transport of segment '" + context.segmentName()
                    + "' is closed; cannot connect to segment '" + peer.name() + "'");
        }
        // the runtime never asks a same-host-only transport to cross machines, but a socket path could exist on both
        if (!peer.machineId().equals(context.machineId())) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "uds cannot reach segment '" + peer.name()
                    + "' on machine '" + peer.machineId() + "' from machine '" + context.machineId() + "'");
        }
        String socket = peer.transportAttributes(UdsTransportProvider.ID).get(SOCKET);
        if (socket == null) {
            throw new TransferException(ErrorCode.PEER_UNREACHABLE, "segment '" + peer.name()
                    + "' publishes no uds socket");
        }
        List<SocketChannel> channels = new ArrayList<>();
        try {
            for (int i = 0; i < paths; i++) {
                channels.add(SocketChannel.open(UnixDomainSocketAddress.of(socket)));
            }
        } catch (IOException | RuntimeException e) {
            channels.forEach(UdsTransport::closeQuietly);
            throw new TransferException(ErrorCode.PEER_UNREACHABLE, "cannot connect to segment '" + peer.name()
                    + "' at uds socket " + socket + ": " + e, e);
        }
        UdsConnection c = new UdsConnection(this, peer.name(), channels, context.scheduler(), context.clock());
        connections.add(c);
        c.start();
        if (closed) { // close() ran while we connected and may have missed this one
            c.close();
        }
        return c;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        closeQuietly(server);
        served.forEach(UdsTransport::closeQuietly);
        connections.forEach(UdsConnection::close);
        // after close() returns no thread of ours may touch registered memory: the engine frees it next
        for (Thread t : threads) {
            UdsConnection.join(t);
        }
        try {
            Files.deleteIfExists(socketPath);
            Files.deleteIfExists(directory);
        } catch (IOException e) {
            LOG.warn("could not remove uds socket {}: {}", socketPath, e.toString());
        }
    }

    void connectionClosed(UdsConnection c) {
        connections.remove(c);
    }

    String segmentName() {
        return context.segmentName();
    }

    // ------------------------------------------------------------------------------------------- the target side

    private void acceptLoop() {
        while (!closed) {
            try {
                SocketChannel ch = server.accept();
                served.add(ch);
                if (closed) {
                    closeQuietly(ch);
                    return;
                }
                start("uds-serve-" + context.segmentName(), () -> serve(ch));
            } catch (IOException e) {
                if (!closed) {
                    LOG.warn("uds socket {} stopped accepting: {}", socketPath, e.toString());
                }
                return;
            }
        }
    }

    /**
     * Serves one initiator connection. Every request is checked against the live registrations before a byte is
     * touched: the initiator's descriptor may be stale (a buffer unregistered since) or forged.
     */
    private void serve(SocketChannel ch) {
        ByteBuffer request = ByteBuffer.allocateDirect(REQUEST_BYTES);
        ByteBuffer reply = ByteBuffer.allocateDirect(REPLY_BYTES + MAX_MESSAGE_BYTES);
        try (ch) {
            while (readFully(ch, request.clear(), true)) {
                request.flip();
                int magic = request.getInt();
                int op = request.getInt();
                long address = request.getLong();
                long length = request.getLong();
                if (magic != MAGIC || (op != OP_READ && op != OP_WRITE) || length <= 0
                        || length > UdsTransportProvider.MAX_SLICE_SIZE) {
                    // the framing cannot be trusted any more: say why, then hang up
                    writeFully(ch, error(reply, ErrorCode.PROTOCOL, "bad uds request (magic 0x" + Integer.toHexString(magic)
                            + ", opcode " + op + ", length " + length + ")"));
                    return;
                }
                Opcode opcode = op == OP_READ ? Opcode.READ : Opcode.WRITE;
                LocalBuffer buffer;
                try {
                    buffer = context.localMemory().checkRemoteAccess(address, length, opcode);
                } catch (TransferException e) {
                    if (opcode == Opcode.WRITE) {
                        discard(ch, length); // the payload is already on its way; skip it to keep the framing
                    }
                    writeFully(ch, error(reply, e.code(), "segment '" + context.segmentName() + "': " + e.getMessage()));
                    continue;
                }
                // a direct view of registered memory: the socket reads into / writes from it with no staging copy
                ByteBuffer memory = buffer.segment().asSlice(address - buffer.address(), length).asByteBuffer();
                if (opcode == Opcode.WRITE) {
                    readFully(ch, memory, false);
                    writeFully(ch, reply.clear().putInt(0).putInt(0).flip());
                } else {
                    writeFully(ch, reply.clear().putInt(0).putInt(0).flip());
                    writeFully(ch, memory);
                }
            }
        } catch (IOException | RuntimeException e) {
            // the initiator went away, or close() closed the channel, or the memory was freed under us
            LOG.debug("uds connection to segment '{}' ended: {}", context.segmentName(), e.toString());
        } finally {
            served.remove(ch);
        }
    }

    private static ByteBuffer error(ByteBuffer reply, ErrorCode code, String message) {
        byte[] text = (code.name() + "\n" + message).getBytes(StandardCharsets.UTF_8);
        int n = Math.min(text.length, MAX_MESSAGE_BYTES);
        return reply.clear().putInt(1).putInt(n).put(text, 0, n).flip();
    }

    private static void discard(SocketChannel ch, long length) throws IOException {
        ByteBuffer scratch = ByteBuffer.allocateDirect((int) Math.min(length, 64 * 1024));
        for (long left = length; left > 0; left -= scratch.position()) {
            readFully(ch, scratch.clear().limit((int) Math.min(left, scratch.capacity())), false);
        }
    }

    // ------------------------------------------------------------------------------------------- shared helpers

    /** Reads until {@code b} is full; false on a clean end of stream before the first byte when {@code eofOk}. */
    static boolean readFully(SocketChannel ch, ByteBuffer b, boolean eofOk) throws IOException {
        boolean first = true;
        while (b.hasRemaining()) {
            if (ch.read(b) < 0) {
                if (first && eofOk) {
                    return false;
                }
                throw new EOFException("connection closed by the other side");
            }
            first = false;
        }
        return true;
    }

    static void writeFully(SocketChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    Thread start(String name, Runnable body) {
        Thread t = Thread.ofPlatform().daemon().name(name).unstarted(() -> {
            try {
                body.run();
            } finally {
                threads.remove(Thread.currentThread());
            }
        });
        threads.add(t);
        t.start();
        return t;
    }

    static void closeQuietly(java.io.Closeable c) {
        try {
            c.close();
        } catch (IOException ignored) {
            // closing is all we wanted
        }
    }
}
