package org.tent4j.transport.mooncake;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.Slice;
import org.tent4j.spi.TimeSource;

/**
 * The initiator towards one Mooncake target: one connection per path ("lane"), one request outstanding on each, as
 * Mooncake's own pooled lanes do. Each lane has a thread that sends a slice's request and reads its answer.
 *
 * <p>Sockets are non-blocking under a selector per lane, so that every wait ends by the slice's deadline (read in the
 * engine's clock, at least every {@link #POLL_MS} ms) and a v2 WRITE notices a REJECT status that arrives while its
 * payload is still going out: a Mooncake target refuses a range as soon as it reads the header and closes.
 *
 * <p>A lane whose framing is lost (a refusal, which the target follows by closing; a timeout; a broken socket)
 * drops its socket and connects again for its next slice. Only when that reconnect fails is the whole connection
 * closed, so the runtime sees the peer gone and fails over.
 *
 * <p>Settling exactly once: the lane's thread and {@link #close()} both may settle a lane's current slice; each takes
 * it out of {@link Lane#current} first, and only the one that got it settles it.
 */
final class MooncakeConnection implements PeerConnection {
    static final long POLL_MS = 100;

    private final MooncakeTcpTransport transport;
    private final String peer;
    private final InetSocketAddress address;
    private final boolean v2;
    private final boolean v1WriteFence;
    private final Duration connectTimeout;
    private final TimeSource clock;
    private final Lane[] lanes;
    private volatile boolean closed;

    MooncakeConnection(MooncakeTcpTransport transport, String peer, InetSocketAddress address, int lanes, boolean v2,
                       boolean v1WriteFence, Duration connectTimeout, TimeSource clock) {
        this.transport = transport;
        this.peer = peer;
        this.address = address;
        this.v2 = v2;
        this.v1WriteFence = v1WriteFence;
        this.connectTimeout = connectTimeout;
        this.clock = clock;
        this.lanes = new Lane[lanes];
        for (int i = 0; i < lanes; i++) {
            this.lanes[i] = new Lane(i);
        }
    }

    /** Connects every lane, then starts their threads; throws if the peer cannot be reached. */
    void open() throws IOException {
        long deadline = clock.nanoTime() + connectTimeout.toNanos();
        for (Lane lane : lanes) {
            lane.selector = Selector.open();
            lane.connect(deadline);
        }
        for (Lane lane : lanes) {
            lane.thread = transport.start("mooncake-tcp-" + transport.segmentName() + "->" + peer + "/lane-"
                    + lane.index, lane, false);
        }
    }

    /** Whether requests carry the acknowledged v2 framing (the peer publishes tcp_proto_version >= 2). */
    boolean v2() {
        return v2;
    }

    @Override
    public void post(Slice slice) {
        if (closed) {
            slice.fail(ErrorCode.PEER_FAILED, describe(slice) + ": the connection is closed");
            return;
        }
        int path = slice.path();
        if (path < 0 || path >= lanes.length) {
            slice.fail(ErrorCode.INVALID_ARGUMENT, describe(slice) + ": no path " + path + " (have " + lanes.length + ")");
            return;
        }
        if (slice.length() <= 0 || slice.length() > MooncakeTcpTransportProvider.MAX_SLICE_SIZE
                || slice.localOffset() < 0 || slice.localOffset() > slice.localBuffer().length() - slice.length()) {
            slice.fail(ErrorCode.OUT_OF_BOUNDS, describe(slice) + ": outside local buffer " + slice.localBuffer().id()
                    + " of " + slice.localBuffer().length() + " bytes, or above the largest slice");
            return;
        }
        lanes[path].queue.add(slice);
        if (closed) { // close() may have drained the queue before our add; whoever removes the slice settles it
            lanes[path].failQueued("the connection closed");
        }
    }

    @Override
    public int pathCount() {
        return lanes.length;
    }

    @Override
    public String pathName(int path) {
        return "lane-" + path;
    }

    @Override
    public boolean isOpen() {
        return !closed;
    }

    @Override
    public void close() {
        close("the connection was closed");
    }

    private void close(String why) {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        for (Lane lane : lanes) {
            Thread t = lane.thread;
            if (t != null) {
                t.interrupt(); // wakes it from the queue, and from select() (an interrupt calls wakeup())
            } else {
                lane.dropSocket(); // never started: nobody else owns the socket
                MooncakeTcpTransport.closeQuietly(lane.selector);
            }
            Slice s = lane.current.getAndSet(null);
            if (s != null) {
                s.fail(ErrorCode.PEER_FAILED, describe(s) + ": " + why);
            }
            lane.failQueued(why);
        }
        for (Lane lane : lanes) {
            MooncakeTcpTransport.join(lane.thread);
        }
        transport.connectionClosed(this);
    }

    private String describe(Slice s) {
        return "mooncake-tcp " + (v2 ? "v2 " : "v1 ") + s.opcode() + " of " + s.length() + " bytes at 0x"
                + Long.toHexString(s.remoteAddress()) + " in segment '" + peer + "' (" + address.getHostString() + ":"
                + address.getPort() + ") on lane-" + s.path() + " (local buffer " + s.localBuffer().id() + " offset "
                + s.localOffset() + ")";
    }

    /** Why a slice failed; no stack trace, since it is an answer, not a bug. */
    private static final class Failed extends Exception {
        final ErrorCode code;

        Failed(ErrorCode code, String message) {
            super(message, null, false, false);
            this.code = code;
        }
    }

    /** One socket, one thread, one request at a time. */
    private final class Lane implements Runnable {
        final int index;
        final LinkedBlockingQueue<Slice> queue = new LinkedBlockingQueue<>();
        final AtomicReference<Slice> current = new AtomicReference<>();
        private final ByteBuffer header = MooncakeWire.headerBuffer();
        private final ByteBuffer status = MooncakeWire.statusBuffer();
        private final ByteBuffer fence = ByteBuffer.allocateDirect(1);
        volatile Thread thread;
        Selector selector;
        private SocketChannel channel;
        private SelectionKey key;

        Lane(int index) {
            this.index = index;
        }

        @Override
        public void run() {
            try {
                while (!closed) {
                    Slice s = queue.take();
                    if (clock.nanoTime() - s.deadlineNanos() > 0) {
                        s.fail(ErrorCode.TIMEOUT, describe(s) + ": deadline passed before it was sent");
                        continue;
                    }
                    current.set(s);
                    if (closed) { // close() may have looked at current before we set it
                        if (current.compareAndSet(s, null)) {
                            s.fail(ErrorCode.PEER_FAILED, describe(s) + ": the connection closed");
                        }
                        break;
                    }
                    Failed failure = exchange(s);
                    if (current.compareAndSet(s, null)) { // else close() settled it
                        if (failure == null) {
                            s.complete();
                        } else {
                            s.fail(failure.code, describe(s) + ": " + failure.getMessage());
                        }
                    }
                    if (failure != null && failure.code == ErrorCode.PEER_UNREACHABLE) {
                        close("lane-" + index + " could not reconnect: " + failure.getMessage());
                    }
                }
            } catch (InterruptedException e) {
                // close() woke us; it settles what is left
            } finally {
                dropSocket();
                MooncakeTcpTransport.closeQuietly(selector);
            }
        }

        /** Moves one slice: null when it landed, else why not. Leaves the socket dropped whenever framing is lost. */
        private Failed exchange(Slice s) {
            try {
                if (channel == null) {
                    try {
                        connect(Math.min(s.deadlineNanos(), clock.nanoTime() + connectTimeout.toNanos()));
                    } catch (IOException e) {
                        dropSocket();
                        return new Failed(ErrorCode.PEER_UNREACHABLE, "cannot reconnect: " + e);
                    }
                }
                ByteBuffer local = s.localBuffer().segment().asSlice(s.localOffset(), s.length()).asByteBuffer();
                writeAll(MooncakeWire.encodeHeader(header, s.opcode(), s.remoteAddress(), s.length(), v2), s, false);
                if (s.opcode() == Opcode.WRITE) {
                    write(s, local);
                } else {
                    read(s, local);
                }
                return null;
            } catch (Failed f) {
                dropSocket();
                return f;
            } catch (IOException | RuntimeException e) {
                dropSocket();
                return new Failed(ErrorCode.PEER_FAILED, e.toString());
            }
        }

        private void write(Slice s, ByteBuffer local) throws IOException, Failed {
            if (!v2) {
                writeAll(local, s, false);
                if (v1WriteFence) {
                    // v1 never acknowledges; the target serves a connection's requests in order, so the answer to a
                    // one-byte READ of the WRITE's last byte proves the WRITE was stored (a refused one closes instead)
                    long last = s.remoteAddress() + s.length() - 1;
                    writeAll(MooncakeWire.encodeHeader(header, Opcode.READ, last, 1, false), s, false);
                    readPayload(fence.clear(), s, "the fence READ of the last byte (a v1 target closes instead of "
                            + "answering when it refused the WRITE's range)");
                }
                return;
            }
            status.clear();
            try {
                writeAll(local, s, true);
            } catch (IOException e) {
                // a target that refused the range answered and closed while the payload was still going out
                if (drainStatus()) {
                    checkEarlyStatus(s);
                }
                throw e;
            }
            readStatus(s);
        }

        private void read(Slice s, ByteBuffer local) throws IOException, Failed {
            if (v2) {
                status.clear();
                readStatus(s);
            }
            readPayload(local, s, v2 ? "the payload" : "the payload (a v1 target closes instead of answering when it "
                    + "refuses a range)");
        }

        private void readStatus(Slice s) throws IOException, Failed {
            while (status.hasRemaining()) {
                int n = channel.read(status);
                if (n < 0) {
                    throw new Failed(ErrorCode.PEER_FAILED, "the target closed the connection after " + status.position()
                            + " of the 8 bytes of the status frame");
                }
                if (n == 0) {
                    await(SelectionKey.OP_READ, s, "the status frame");
                }
            }
            checkStatus(s);
        }

        /** Reads whatever status bytes have arrived without waiting; true once the frame is complete. */
        private boolean drainStatus() {
            try {
                while (status.hasRemaining()) {
                    if (channel.read(status) <= 0) {
                        return false;
                    }
                }
                return true;
            } catch (IOException e) {
                return false;
            }
        }

        private void checkStatus(Slice s) throws Failed {
            long frame = status.getLong(0);
            if (!MooncakeWire.hasMagic(frame)) {
                throw new Failed(ErrorCode.PROTOCOL, "status frame 0x" + String.format("%016x", frame)
                        + " lacks the magic 0x4d435456 ('MCTV'); the peer does not speak v2 framing although its "
                        + "descriptor says tcp_proto_version >= 2");
            }
            int code = MooncakeWire.code(frame);
            switch (code) {
                case MooncakeWire.STATUS_OK -> {
                }
                case MooncakeWire.STATUS_REJECTED -> throw new Failed(ErrorCode.OUT_OF_BOUNDS, "the target rejected "
                        + MooncakeWire.range(s.remoteAddress(), s.length())
                        + " (status 1: not inside one of its registered buffers)");
                case MooncakeWire.STATUS_PERMISSION_DENIED -> throw new Failed(ErrorCode.PERMISSION_DENIED,
                        "the target refused " + MooncakeWire.range(s.remoteAddress(), s.length())
                                + " (status 2: its buffer does not allow this opcode)");
                default -> throw new Failed(ErrorCode.PROTOCOL, "status frame carries unknown code " + code);
            }
        }

        private void readPayload(ByteBuffer into, Slice s, String what) throws IOException, Failed {
            int start = into.position();
            while (into.hasRemaining()) {
                int n = channel.read(into);
                if (n < 0) {
                    throw new Failed(ErrorCode.PEER_FAILED, "the target closed the connection after "
                            + (into.position() - start) + " of " + (into.limit() - start) + " bytes of " + what);
                }
                if (n == 0) {
                    await(SelectionKey.OP_READ, s, what);
                }
            }
        }

        /**
         * Writes all of {@code b}. With {@code watchStatus} (a v2 WRITE's payload) a status frame that arrives early
         * ends the write: only a refusal can come before the payload is complete.
         */
        private void writeAll(ByteBuffer b, Slice s, boolean watchStatus) throws IOException, Failed {
            while (b.hasRemaining()) {
                if (channel.write(b) > 0) {
                    continue;
                }
                int ready = await(SelectionKey.OP_WRITE | (watchStatus ? SelectionKey.OP_READ : 0), s,
                        "room to send");
                if (watchStatus && (ready & SelectionKey.OP_READ) != 0) {
                    int n = channel.read(status);
                    if (n < 0) {
                        throw new Failed(ErrorCode.PEER_FAILED, "the target closed the connection after "
                                + (b.position()) + " of " + b.limit() + " payload bytes had been sent");
                    }
                    if (!status.hasRemaining()) {
                        checkEarlyStatus(s);
                    }
                }
            }
        }

        private void checkEarlyStatus(Slice s) throws Failed {
            long frame = status.getLong(0);
            if (MooncakeWire.hasMagic(frame) && MooncakeWire.code(frame) == MooncakeWire.STATUS_OK) {
                throw new Failed(ErrorCode.PROTOCOL, "the target answered OK before the whole payload was sent");
            }
            checkStatus(s);
        }

        /** Waits until the socket is ready for {@code ops}, the slice's deadline passes, or the connection closes. */
        private int await(int ops, Slice s, String what) throws IOException, Failed {
            key.interestOps(ops);
            while (true) {
                if (closed) {
                    throw new Failed(ErrorCode.PEER_FAILED, "the connection was closed");
                }
                long left = s.deadlineNanos() - clock.nanoTime();
                if (left <= 0) {
                    throw new Failed(ErrorCode.TIMEOUT, "no progress on " + what + " from the target by the deadline");
                }
                long wait = Math.clamp(TimeUnit.NANOSECONDS.toMillis(left) + 1, 1, POLL_MS);
                if (selector.select(wait) > 0) {
                    selector.selectedKeys().clear();
                    return key.readyOps();
                }
            }
        }

        void connect(long deadlineNanos) throws IOException {
            SocketChannel ch = SocketChannel.open();
            try {
                ch.configureBlocking(false);
                ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                InetSocketAddress resolved = address.isUnresolved()
                        ? new InetSocketAddress(address.getHostString(), address.getPort()) : address;
                if (resolved.isUnresolved()) {
                    throw new IOException("cannot resolve host '" + address.getHostString() + "'");
                }
                SelectionKey k = ch.register(selector, 0);
                if (!ch.connect(resolved)) {
                    k.interestOps(SelectionKey.OP_CONNECT);
                    while (!ch.finishConnect()) {
                        long left = deadlineNanos - clock.nanoTime();
                        if (left <= 0 || closed) {
                            throw new IOException(closed ? "the connection was closed"
                                    : "connect timed out after " + connectTimeout.toMillis() + " ms");
                        }
                        selector.select(Math.clamp(TimeUnit.NANOSECONDS.toMillis(left) + 1, 1, POLL_MS));
                        selector.selectedKeys().clear();
                    }
                }
                channel = ch;
                key = k;
            } catch (IOException | RuntimeException e) {
                MooncakeTcpTransport.closeQuietly(ch);
                throw e;
            }
        }

        void dropSocket() {
            if (key != null) {
                key.cancel();
                key = null;
            }
            MooncakeTcpTransport.closeQuietly(channel);
            channel = null;
        }

        void failQueued(String why) {
            for (Slice s; (s = queue.poll()) != null; ) {
                s.fail(ErrorCode.PEER_FAILED, describe(s) + ": " + why);
            }
        }
    }
}
