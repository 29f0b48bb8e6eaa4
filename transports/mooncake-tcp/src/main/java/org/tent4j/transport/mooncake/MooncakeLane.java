package org.tent4j.transport.mooncake;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.TimeUnit;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.Slice;
import org.tent4j.spi.TimeSource;

/**
 * One lane of a {@link MooncakeConnection}: one socket, one thread, up to {@code window} requests on the wire,
 * answered in order (see the connection's class comment for pipelining, lost framing and settling once).
 */
final class MooncakeLane implements Runnable {
    final int index;
    final LinkedBlockingDeque<Slice> queue = new LinkedBlockingDeque<>();
    /** Sent and not yet answered, oldest first. */
    final ConcurrentLinkedDeque<Slice> inflight = new ConcurrentLinkedDeque<>();
    private final ByteBuffer header = MooncakeWire.headerBuffer();
    private final ByteBuffer status = MooncakeWire.statusBuffer();
    private final ByteBuffer[] statusAndPayload = new ByteBuffer[2];
    private final ByteBuffer fence = ByteBuffer.allocateDirect(1);
    /** The WRITE whose early refusal {@link #status} may already partly hold (read while its payload went out). */
    private Slice statusOwner;
    /** The socket broke while sending: only the answers already on their way are read, then it is dropped. */
    private boolean draining;
    /** The slice whose answer is being read, and its payload buffer (its position is how far it got). */
    private Slice receiving;
    private ByteBuffer payload;
    /** Set while the thread waits for an answer with room in the window: a post then wakes it. */
    volatile boolean awaitingAnswer;
    volatile Thread thread;
    Selector selector;
    private SocketChannel channel;
    private SelectionKey key;

    private final MooncakeConnection conn;
    private final TimeSource clock;
    private final boolean v2;
    private final boolean v1WriteFence;
    private final int window;
    private final Duration connectTimeout;
    private final KeepAlive keepAlive;
    private final InetSocketAddress address;

    MooncakeLane(MooncakeConnection conn, int index, int window, boolean v2, boolean v1WriteFence,
                 Duration connectTimeout, KeepAlive keepAlive, InetSocketAddress address, TimeSource clock) {
        this.keepAlive = keepAlive;
        this.conn = conn;
        this.index = index;
        this.window = window;
        this.v2 = v2;
        this.v1WriteFence = v1WriteFence;
        this.connectTimeout = connectTimeout;
        this.address = address;
        this.clock = clock;
    }

    @Override
    public void run() {
        try {
            while (!conn.isClosed()) {
                if (draining && inflight.isEmpty()) {
                    dropSocket(); // every answer read: the next request reconnects
                }
                // send while the window has room and slices wait; wait for a slice only with nothing on the wire
                Slice s = draining ? null : inflight.isEmpty() ? queue.takeFirst() : nextToPipeline();
                if (s != null) {
                    if (clock.nanoTime() - s.deadlineNanos() > 0) {
                        s.fail(ErrorCode.TIMEOUT, conn.describe(s) + ": deadline passed before it was sent");
                        continue;
                    }
                    inflight.addLast(s);
                    if (conn.isClosed()) { // close() may have drained inflight before our add
                        if (inflight.remove(s)) {
                            s.fail(ErrorCode.PEER_FAILED, conn.describe(s) + ": the connection closed");
                        }
                        break;
                    }
                    Failed failure = send(s);
                    if (failure != null && failure.connectionBroke && inflight.peekFirst() != s) {
                        // the connection broke under older requests, and one of them may be why (a refusal the
                        // target closed after): read their answers first; this one goes out again afterwards
                        if (inflight.removeLastOccurrence(s)) {
                            queue.addFirst(s);
                            if (conn.isClosed()) {
                                failQueued("the connection closed");
                            }
                        }
                        draining = true;
                        continue;
                    }
                    if (failure != null) {
                        lost(s, failure);
                    }
                    if (failure != null || inflight.size() < window) {
                        continue;
                    }
                }
                Slice head = inflight.peekFirst();
                if (head == null) {
                    continue;
                }
                Failed failure = receive(head);
                if (failure == PAUSED) {
                    continue; // a slice to send came while the answer was on its way; the answer is read on
                }
                if (failure != null) {
                    lost(head, failure);
                } else if (inflight.remove(head)) { // else close() settled it
                    head.complete();
                }
            }
        } catch (InterruptedException e) {
            // close() woke us; it settles what is left
        } finally {
            dropSocket();
            MooncakeTcpTransport.closeQuietly(selector);
        }
    }

    /**
     * Framing is lost at {@code s}: the socket goes, {@code s} fails with the cause, and the other requests on
     * the wire go back to the front of the queue, in order, to be sent again on a new connection.
     */
    private void lost(Slice s, Failed failure) {
        dropSocket();
        statusOwner = null;
        boolean mine = false;
        java.util.ArrayList<Slice> again = new java.util.ArrayList<>();
        for (Slice o; (o = inflight.pollFirst()) != null; ) {
            if (o == s) {
                mine = true;
            } else {
                again.add(o);
            }
        }
        if (mine) { // else close() settled it
            s.fail(failure.code, conn.describe(s) + ": " + failure.getMessage());
        }
        for (Slice o : again.reversed()) {
            queue.addFirst(o);
        }
        if (conn.isClosed()) { // close() may have drained the queue before our adds
            failQueued("the connection closed");
        }
        if (failure.code == ErrorCode.PEER_UNREACHABLE) {
            conn.close("lane-" + index + " could not reconnect: " + failure.getMessage());
        }
    }

    /**
     * The next queued slice if it may join the wire now, else null: the window has room and it has the opcode of
     * the requests on the wire. Mixing would risk a deadlock: a WRITE's payload waiting for room while the target,
     * which serves in order, waits for room to send an earlier READ's payload that this thread is not reading.
     * READs behind READs add 24-byte headers, WRITEs behind WRITEs get 8-byte answers.
     */
    private Slice nextToPipeline() {
        Slice head = inflight.peekFirst();
        Slice next = queue.peekFirst();
        if (head == null || next == null || next.opcode() != head.opcode() || inflight.size() >= window) {
            return null;
        }
        return queue.pollFirst();
    }

    /** Whether a slice waits that {@link #nextToPipeline()} would send. */
    private boolean wantsToSend() {
        Slice head = inflight.peekFirst();
        Slice next = queue.peekFirst();
        return !draining && head != null && next != null && next.opcode() == head.opcode() && inflight.size() < window;
    }

    /** Sends one slice's request (a WRITE's payload with it): null when it went out, else why not. */
    private Failed send(Slice s) {
        try {
            if (channel == null) {
                try {
                    connect(Math.min(s.deadlineNanos(), clock.nanoTime() + connectTimeout.toNanos()));
                } catch (IOException e) {
                    return new Failed(ErrorCode.PEER_UNREACHABLE, "cannot reconnect: " + e);
                }
            }
            writeAll(MooncakeWire.encodeHeader(header, s.opcode(), s.remoteAddress(), s.length(), v2), s, false);
            if (s.opcode() == Opcode.WRITE) {
                write(s, local(s));
            }
            return null;
        } catch (Failed f) {
            return f;
        } catch (IOException e) {
            return new Failed(ErrorCode.PEER_FAILED, e.toString(), true);
        } catch (RuntimeException e) {
            return new Failed(ErrorCode.PEER_FAILED, e.toString());
        }
    }

    /**
     * Reads the answer to {@code s}, the oldest request on the wire: null when it landed, {@link #PAUSED} when a
     * slice to send came first (the next call goes on where this one stopped), else why not.
     */
    private Failed receive(Slice s) {
        try {
            if (receiving != s) {
                receiving = s;
                if (statusOwner != s) {
                    status.clear();
                }
                statusOwner = null;
                payload = s.opcode() == Opcode.READ ? local(s) : v1WriteFence ? fence.clear() : null;
            }
            if (v2) {
                readStatus(s, s.opcode() == Opcode.READ ? payload : null);
            }
            if (s.opcode() == Opcode.READ) {
                readPayload(payload, s, v2 ? "the payload" : "the payload (a v1 target closes instead of answering "
                        + "when it refuses a range)");
            } else if (!v2 && v1WriteFence) {
                readPayload(payload, s, "the fence READ of the last byte (a v1 target closes instead of "
                        + "answering when it refused the WRITE's range)");
            }
            receiving = null;
            return null;
        } catch (Failed f) {
            if (f != PAUSED) {
                receiving = null;
            }
            return f;
        } catch (IOException | RuntimeException e) {
            receiving = null;
            return new Failed(ErrorCode.PEER_FAILED, e.toString());
        }
    }

    private ByteBuffer local(Slice s) {
        return s.localBuffer().segment().asSlice(s.localOffset(), s.length()).asByteBuffer();
    }

    private void write(Slice s, ByteBuffer local) throws IOException, Failed {
        if (!v2) {
            writeAll(local, s, false);
            if (v1WriteFence) {
                // v1 never acknowledges; the target serves a connection's requests in order, so the answer to a
                // one-byte READ of the WRITE's last byte proves the WRITE was stored (a refused one closes instead)
                long last = s.remoteAddress() + s.length() - 1;
                writeAll(MooncakeWire.encodeHeader(header, Opcode.READ, last, 1, false), s, false);
            }
            return;
        }
        // an early refusal is watched for only when nothing else is on the wire: otherwise the status frames that
        // arrive meanwhile answer older requests, and a refusal shows as the target closing
        boolean alone = inflight.peekFirst() == s;
        if (alone) {
            status.clear();
            statusOwner = s;
        }
        try {
            writeAll(local, s, alone);
        } catch (IOException e) {
            // a target that refused the range answered and closed while the payload was still going out
            if (alone && drainStatus()) {
                checkEarlyStatus(s);
            }
            throw e;
        }
    }

    /**
     * Reads and checks the status frame; a READ's payload that follows it in the same segments goes into
     * {@code next} in the same read (a scattering read: one system call, not two, per request).
     */
    private void readStatus(Slice s, ByteBuffer next) throws IOException, Failed {
        if (!status.hasRemaining()) {
            return; // read and checked before a pause
        }
        statusAndPayload[0] = status;
        statusAndPayload[1] = next;
        while (status.hasRemaining()) {
            long n = next == null ? channel.read(status) : channel.read(statusAndPayload);
            if (n < 0) {
                throw new Failed(ErrorCode.PEER_FAILED, "the target closed the connection after " + status.position()
                        + " of the 8 bytes of the status frame");
            }
            if (n == 0) {
                awaitAnswer(s, "the status frame");
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

    /** Reads the rest of {@code into} (a buffer of its own from position 0, so its position is how far it got). */
    private void readPayload(ByteBuffer into, Slice s, String what) throws IOException, Failed {
        while (into.hasRemaining()) {
            int n = channel.read(into);
            if (n < 0) {
                throw new Failed(ErrorCode.PEER_FAILED, "the target closed the connection after "
                        + into.position() + " of " + into.limit() + " bytes of " + what);
            }
            if (n == 0) {
                awaitAnswer(s, what);
            }
        }
    }

    /**
     * Waits for more of {@code s}'s answer, like {@link #await} for reading, but gives way ({@link #PAUSED}) when
     * a slice that may join the wire is queued: its request goes out before the answer is read on.
     */
    private void awaitAnswer(Slice s, String what) throws IOException, Failed {
        awaitingAnswer = true;
        try {
            // checked after the flag is up, so a post in between either is seen here or wakes the select
            if (wantsToSend()) {
                throw PAUSED;
            }
            int ready = await(SelectionKey.OP_READ, s, what, true);
            if (ready == 0) {
                throw PAUSED;
            }
        } finally {
            awaitingAnswer = false;
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
        return await(ops, s, what, false);
    }

    /** As above; with {@code yieldToSend}, 0 when a slice that may be sent came (a post woke the selector). */
    private int await(int ops, Slice s, String what, boolean yieldToSend) throws IOException, Failed {
        key.interestOps(ops);
        while (true) {
            if (conn.isClosed()) {
                throw new Failed(ErrorCode.PEER_FAILED, "the connection was closed");
            }
            long left = s.deadlineNanos() - clock.nanoTime();
            if (left <= 0) {
                throw new Failed(ErrorCode.TIMEOUT, "no progress on " + what + " from the target by the deadline");
            }
            long wait = Math.clamp(TimeUnit.NANOSECONDS.toMillis(left) + 1, 1, MooncakeConnection.POLL_MS);
            if (selector.select(wait) > 0) {
                selector.selectedKeys().clear();
                return key.readyOps();
            }
            if (yieldToSend && wantsToSend()) {
                return 0;
            }
        }
    }

    void connect(long deadlineNanos) throws IOException {
        SocketChannel ch = SocketChannel.open();
        try {
            ch.configureBlocking(false);
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            keepAlive.apply(ch);
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
                    if (left <= 0 || conn.isClosed()) {
                        throw new IOException(conn.isClosed() ? "the connection was closed"
                                : "connect timed out after " + connectTimeout.toMillis() + " ms");
                    }
                    selector.select(Math.clamp(TimeUnit.NANOSECONDS.toMillis(left) + 1, 1, MooncakeConnection.POLL_MS));
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
        draining = false;
        receiving = null;
        if (key != null) {
            key.cancel();
            key = null;
        }
        MooncakeTcpTransport.closeQuietly(channel);
        channel = null;
    }

    void failQueued(String why) {
        for (Slice s; (s = queue.poll()) != null; ) {
            s.fail(ErrorCode.PEER_FAILED, conn.describe(s) + ": " + why);
        }
    }

    /** Not a failure: {@link #receive} gave way to a slice to send and goes on later. */
    private static final Failed PAUSED = new Failed(ErrorCode.PEER_FAILED, "paused to send");

    static final class Failed extends Exception {
        final ErrorCode code;
        /** Sending failed on the socket itself (reset, closed), not on an answer. */
        final boolean connectionBroke;

        Failed(ErrorCode code, String message) {
            this(code, message, false);
        }

        Failed(ErrorCode code, String message, boolean connectionBroke) {
            super(message, null, false, false);
            this.code = code;
            this.connectionBroke = connectionBroke;
        }
    }
}
