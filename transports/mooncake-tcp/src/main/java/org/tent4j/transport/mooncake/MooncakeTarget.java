package org.tent4j.transport.mooncake;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.TransportContext;

/**
 * Where Mooncake initiators reach this engine: the data port, served as Mooncake's C++ target serves it (one thread
 * per connection, see {@link #PLATFORM_SERVERS}; each request checked against the live registrations before memory
 * is touched, refused as Mooncake refuses), and the P2P handshake socket. Tracks which buffer each served request
 * touches, so unregistering waits for it.
 */
final class MooncakeTarget {
    private static final Logger LOG = LoggerFactory.getLogger(MooncakeTcpTransport.class);
    /** A socket moves at most this much per view; a Mooncake request may name up to a whole buffer. */
    private static final long VIEW_BYTES = 1L << 30;
    /**
     * Connections served on platform threads at once; more are served on virtual threads. A blocking read on a
     * platform thread is woken by the kernel directly, where a virtual thread's goes through the JDK's poller and a
     * carrier: about one more thread switch per request (with the OK frame sent apart from its payload, 64 KiB
     * requests ran at 0.6x of tcp's rate on two cores, and at 0.8-0.9x without both). Virtual threads stay for the
     * rest, since a Mooncake initiator without its connection pool opens a connection per request.
     */
    static final int PLATFORM_SERVERS = 64;

    private final MooncakeTcpTransport transport;
    private final TransportContext context;
    private final int maxConnections;
    private final AtomicLong refusedConnections = new AtomicLong();
    private final AtomicInteger onPlatformThreads = new AtomicInteger();
    private final ServerSocketChannel server;
    private final int port;
    private final Set<Served> served = ConcurrentHashMap.newKeySet();
    private final ServerSocket handshakeServer;
    private final int handshakePort;
    private final Set<Socket> handshakes = ConcurrentHashMap.newKeySet();
    /** Notified whenever a served connection lets go of a buffer, for {@link #awaitReleased}. */
    private final Object unpinned = new Object();
    private volatile boolean closed;

    /** Opens the data port and, when {@code handshakePort >= 0}, the handshake socket; {@link #start} serves them. */
    MooncakeTarget(MooncakeTcpTransport transport, TransportContext context, int port, int handshakePort, int maxConnections)
            throws MooncakeTcpTransport.ListenException {
        this.transport = transport;
        this.context = context;
        this.maxConnections = maxConnections;
        ServerSocketChannel data = null;
        try {
            data = ServerSocketChannel.open();
            data.bind(new InetSocketAddress(context.host(), port));
            this.port = ((InetSocketAddress) data.getLocalAddress()).getPort();
        } catch (IOException e) {
            MooncakeTcpTransport.closeQuietly(data);
            throw new MooncakeTcpTransport.ListenException("port", port, e);
        }
        this.server = data;
        if (handshakePort >= 0) {
            ServerSocket hs = null;
            try {
                hs = new ServerSocket();
                hs.bind(new InetSocketAddress(context.host(), handshakePort), MooncakeHandshake.LISTEN_BACKLOG);
            } catch (IOException e) {
                MooncakeTcpTransport.closeQuietly(data);
                MooncakeTcpTransport.closeQuietly(hs);
                throw new MooncakeTcpTransport.ListenException("handshake_port", handshakePort, e);
            }
            this.handshakeServer = hs;
            this.handshakePort = hs.getLocalPort();
        } else {
            this.handshakeServer = null;
            this.handshakePort = -1;
        }
    }

    void start() {
        if (handshakeServer != null) {
            transport.start("mooncake-tcp-handshake-" + context.segmentName(), this::handshakeLoop, true);
        }
        transport.start("mooncake-tcp-accept-" + context.segmentName(), this::acceptLoop, true);
    }

    int port() {
        return port;
    }

    /** The handshake socket's port, or -1 when it does not run. */
    int handshakePort() {
        return handshakePort;
    }

    /**
     * Returns once no served request touches {@code buffer}. A request already checked is let finish for up to the
     * transfer timeout; past that its connection is closed, which ends the blocked read or write at once.
     */
    void awaitReleased(LocalBuffer buffer) {
        long until = System.nanoTime() + context.transferTimeout().toNanos();
        if (awaitUnpinned(buffer, until)) {
            return;
        }
        for (Served s : served) {
            if (s.pinned == buffer) {
                MooncakeTcpTransport.closeQuietly(s.channel);
            }
        }
        if (!awaitUnpinned(buffer, System.nanoTime() + TimeUnit.SECONDS.toNanos(2))) {
            throw new TransferException(ErrorCode.TIMEOUT, "mooncake-tcp of segment '" + context.segmentName()
                    + "' still serves a peer request in buffer " + MooncakeWire.range(buffer.address(), buffer.length())
                    + " after closing its connection; the memory stays allocated");
        }
    }

    private boolean awaitUnpinned(LocalBuffer buffer, long untilNanos) {
        synchronized (unpinned) {
            while (isPinned(buffer)) {
                long left = untilNanos - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(unpinned, left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return !isPinned(buffer);
                }
            }
            return true;
        }
    }

    /** Whether a served request is touching {@code buffer} now. */
    boolean isPinned(LocalBuffer buffer) {
        for (Served s : served) {
            if (s.pinned == buffer) {
                return true;
            }
        }
        return false;
    }

    /** Stops listening and closes every served connection; the transport joins the threads. */
    void close() {
        closed = true;
        MooncakeTcpTransport.closeQuietly(server);
        MooncakeTcpTransport.closeQuietly(handshakeServer);
        for (Socket s : handshakes) {
            MooncakeTcpTransport.closeQuietly(s);
        }
        for (Served s : served) {
            MooncakeTcpTransport.closeQuietly(s.channel);
        }
    }


    private void handshakeLoop() {
        while (!closed) {
            Socket s;
            try {
                s = handshakeServer.accept();
            } catch (IOException e) {
                if (!closed) {
                    LOG.warn("mooncake-tcp handshake port {} of segment '{}' stopped accepting: {}", handshakePort,
                            context.segmentName(), e.toString());
                }
                return;
            }
            if (overLimit()) {
                MooncakeTcpTransport.closeQuietly(s);
                continue;
            }
            handshakes.add(s);
            if (closed) {
                MooncakeTcpTransport.closeQuietly(s);
                return;
            }
            transport.start("mooncake-tcp-handshake-" + context.segmentName(), () -> handshake(s), true);
        }
    }

    /** One request, one answer of the same type, then shutdown(SHUT_WR) and wait for the client to close, as Mooncake. */
    private void handshake(Socket s) {
        String peer = String.valueOf(s.getRemoteSocketAddress());
        try (s) {
            s.setSoTimeout((int) MooncakeHandshake.SERVER_RECEIVE_TIMEOUT.toMillis());
            MooncakeHandshake.Frame request = MooncakeHandshake.read(s.getInputStream(), peer);
            byte[] own = transport.mooncakeDescriptor().toJson().getBytes(StandardCharsets.UTF_8);
            MooncakeHandshake.write(s.getOutputStream(), request.type(), MooncakeHandshake.answer(request.type(), own));
            s.shutdownOutput();
            while (s.getInputStream().read() >= 0) {
                // the client closes once it has the answer; anything more it sends is not Mooncake's
            }
        } catch (IOException e) {
            LOG.debug("mooncake-tcp handshake with {} for segment '{}' ended: {}", peer, context.segmentName(),
                    e.toString());
        } finally {
            handshakes.remove(s);
        }
    }


    /** One accepted connection, and the buffer its current request touches (null between requests). */
    private static final class Served {
        final SocketChannel channel;
        final String peer;
        volatile LocalBuffer pinned;

        Served(SocketChannel channel, String peer) {
            this.channel = channel;
            this.peer = peer;
        }
    }

    private void acceptLoop() {
        while (!closed) {
            SocketChannel ch;
            try {
                ch = server.accept();
            } catch (IOException e) {
                if (!closed) {
                    LOG.warn("mooncake-tcp port {} of segment '{}' stopped accepting: {}", port, context.segmentName(),
                            e.toString());
                }
                return;
            }
            String peer;
            try {
                ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                transport.keepAlive().apply(ch);
                SocketAddress remote = ch.getRemoteAddress();
                peer = String.valueOf(remote);
            } catch (IOException e) {
                MooncakeTcpTransport.closeQuietly(ch);
                continue;
            }
            if (overLimit()) {
                MooncakeTcpTransport.closeQuietly(ch);
                continue;
            }
            Served s = new Served(ch, peer);
            served.add(s);
            if (closed) {
                MooncakeTcpTransport.closeQuietly(ch);
                served.remove(s);
                return;
            }
            boolean platform = onPlatformThreads.incrementAndGet() <= PLATFORM_SERVERS;
            if (!platform) {
                onPlatformThreads.decrementAndGet();
            }
            transport.start("mooncake-tcp-serve-" + context.segmentName(), () -> {
                try {
                    serve(s);
                } finally {
                    if (platform) {
                        onPlatformThreads.decrementAndGet();
                    }
                }
            }, !platform);
        }
    }

    /** Whether a new inbound connection would exceed max_connections; says so once per power of two refused. */
    private boolean overLimit() {
        if (served.size() + handshakes.size() < maxConnections) {
            return false;
        }
        long n = refusedConnections.incrementAndGet();
        if (Long.bitCount(n) == 1) {
            LOG.warn("mooncake-tcp segment '{}' refused {} inbound connection(s) at transports.mooncake-tcp."
                    + "max_connections={}", context.segmentName(), n, maxConnections);
        }
        return true;
    }

    /** Serves one initiator until it closes, or until a request is refused (Mooncake closes then, in v1 and v2). */
    private void serve(Served s) {
        SocketChannel ch = s.channel;
        ByteBuffer header = MooncakeWire.headerBuffer();
        ByteBuffer status = MooncakeWire.statusBuffer();
        try (ch) {
            while (readFully(ch, header.clear(), true)) {
                long size = MooncakeWire.size(header);
                long address = MooncakeWire.address(header);
                int opcodeByte = MooncakeWire.opcodeByte(header);
                boolean v2 = MooncakeWire.isV2(opcodeByte);
                Opcode op = MooncakeWire.opcode(opcodeByte);
                if (op == null) {
                    refuse(s, v2, MooncakeWire.STATUS_REJECTED, status, "opcode byte 0x" + Integer.toHexString(opcodeByte)
                            + " is neither READ nor WRITE", address, size);
                    return;
                }
                LocalBuffer buffer;
                try {
                    // size is a u64 on the wire: above 2^63 it reads negative here and is refused with size 0
                    buffer = context.localMemory().checkRemoteAccess(address, size, op);
                } catch (TransferException e) {
                    refuse(s, v2, e.code() == ErrorCode.PERMISSION_DENIED ? MooncakeWire.STATUS_PERMISSION_DENIED
                            : MooncakeWire.STATUS_REJECTED, status, e.getMessage(), address, size);
                    return;
                }
                s.pinned = buffer;
                try {
                    // unregister withdraws the buffer and then looks for pins: one of the two sees the other
                    if (context.localMemory().find(address, size) != buffer) {
                        refuse(s, v2, MooncakeWire.STATUS_REJECTED, status, "buffer was unregistered", address, size);
                        return;
                    }
                    if (op == Opcode.WRITE) {
                        receiveMemory(ch, buffer, address, size);
                        if (v2) {
                            writeFully(ch, MooncakeWire.encodeStatus(status, MooncakeWire.STATUS_OK));
                        }
                    } else {
                        // the OK frame goes out in one write with the payload: sent on its own, it would wake the
                        // initiator for 8 bytes, a second wake-up per request
                        sendMemory(ch, v2 ? MooncakeWire.encodeStatus(status, MooncakeWire.STATUS_OK) : null, buffer,
                                address, size);
                    }
                } finally {
                    s.pinned = null;
                    synchronized (unpinned) {
                        unpinned.notifyAll();
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            // the initiator went away, or close()/unregister closed the channel
            LOG.debug("mooncake-tcp connection from {} to segment '{}' ended: {}", s.peer, context.segmentName(),
                    e.toString());
        } finally {
            served.remove(s);
        }
    }

    /** v1: close without a word, as Mooncake does; v2: a status frame, then close. */
    private void refuse(Served s, boolean v2, int code, ByteBuffer status, String why, long address, long size)
            throws IOException {
        LOG.debug("mooncake-tcp segment '{}' refuses {} {} from {}: {}", context.segmentName(), v2 ? "v2" : "v1",
                MooncakeWire.range(address, size), s.peer, why);
        if (v2) {
            writeFully(s.channel, MooncakeWire.encodeStatus(status, code));
        }
    }

    private static void receiveMemory(SocketChannel ch, LocalBuffer buffer, long address, long size) throws IOException {
        long base = address - buffer.address();
        for (long done = 0; done < size; ) {
            long n = Math.min(VIEW_BYTES, size - done);
            readFully(ch, buffer.segment().asSlice(base + done, n).asByteBuffer(), false);
            done += n;
        }
    }

    /** Sends {@code prefix} (when not null) and the memory, the prefix gathered into the first write. */
    private static void sendMemory(SocketChannel ch, ByteBuffer prefix, LocalBuffer buffer, long address, long size)
            throws IOException {
        long base = address - buffer.address();
        for (long done = 0; done < size || prefix != null; ) {
            long n = Math.min(VIEW_BYTES, size - done);
            ByteBuffer view = buffer.segment().asSlice(base + done, n).asByteBuffer();
            if (prefix != null) {
                ByteBuffer[] both = {prefix, view};
                while (view.hasRemaining() || prefix.hasRemaining()) {
                    ch.write(both);
                }
                prefix = null;
            } else {
                writeFully(ch, view);
            }
            done += n;
        }
    }

    /** Reads until {@code b} is full; false on a clean end of stream before its first byte when {@code eofOk}. */
    private static boolean readFully(SocketChannel ch, ByteBuffer b, boolean eofOk) throws IOException {
        boolean first = true;
        while (b.hasRemaining()) {
            if (ch.read(b) < 0) {
                if (first && eofOk) {
                    return false;
                }
                throw new EOFException("connection closed by the initiator after " + b.position() + " of "
                        + b.limit() + " bytes");
            }
            first = false;
        }
        return true;
    }

    private static void writeFully(SocketChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }
}
