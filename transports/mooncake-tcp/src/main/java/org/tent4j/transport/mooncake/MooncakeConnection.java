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
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.Slice;
import org.tent4j.spi.TimeSource;

/**
 * The initiator towards one Mooncake target: one connection per path ("lane"), each with a thread that sends its
 * slices' requests and reads their answers. In v2 framing a lane keeps up to {@code window} requests on the wire
 * (the option {@code pipeline}): a Mooncake target serves a connection's requests one after the other and answers
 * in order, so the next request can go out before the last answer is back, and the lane stops paying a round trip
 * per request (Mooncake's own initiator waits for each answer: window 1). v1 framing has no WRITE acknowledgement
 * and always runs at window 1.
 *
 * <p>Sockets are non-blocking under a selector per lane, so that every wait ends by the slice's deadline (read in the
 * engine's clock, at least every {@link #POLL_MS} ms) and a v2 WRITE notices a REJECT status that arrives while its
 * payload is still going out: a Mooncake target refuses a range as soon as it reads the header and closes.
 *
 * <p>A lane whose framing is lost (a refusal, which the target follows by closing; a timeout; a broken socket)
 * drops its socket and connects again for its next slice. Only when that reconnect fails is the whole connection
 * closed, so the runtime sees the peer gone and fails over.
 *
 * <p>When framing is lost, the failed slice gets its own cause and the other requests on the wire, whose answers went
 * with the connection (a Mooncake target closes after a refusal), go out again in order on the lane's next
 * connection: READs and WRITEs of the same bytes to the same place are safe to repeat, and a refusal must not
 * disturb the slices around it.
 *
 * <p>Settling exactly once: the lane's thread and {@link #close()} both may settle a lane's slices on the wire; each
 * takes a slice out of {@link MooncakeLane#inflight} first, and only the one that got it settles it.
 */
final class MooncakeConnection implements PeerConnection {
    static final long POLL_MS = 100;

    private final MooncakeTcpTransport transport;
    private final String peer;
    private final InetSocketAddress address;
    private final boolean v2;
    private final Duration connectTimeout;
    private final TimeSource clock;
    private final MooncakeLane[] lanes;
    private volatile boolean closed;

    MooncakeConnection(MooncakeTcpTransport transport, String peer, InetSocketAddress address, int lanes, int window,
                       boolean v2, boolean v1WriteFence, Duration connectTimeout, KeepAlive keepAlive, TimeSource clock) {
        if (window < 1 || (!v2 && window != 1)) {
            throw new IllegalArgumentException("window must be >= 1, and 1 in v1 framing: " + window);
        }
        this.transport = transport;
        this.peer = peer;
        this.address = address;
        this.v2 = v2;
        this.connectTimeout = connectTimeout;
        this.clock = clock;
        this.lanes = new MooncakeLane[lanes];
        for (int i = 0; i < lanes; i++) {
            this.lanes[i] = new MooncakeLane(this, i, window, v2, v1WriteFence, connectTimeout, keepAlive, address, clock);
        }
    }

    /** Connects every lane, then starts their threads; throws if the peer cannot be reached. */
    void open() throws IOException {
        long deadline = clock.nanoTime() + connectTimeout.toNanos();
        for (MooncakeLane lane : lanes) {
            lane.selector = Selector.open();
            lane.connect(deadline);
        }
        for (MooncakeLane lane : lanes) {
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
        MooncakeLane lane = lanes[path];
        lane.queue.add(slice);
        if (lane.awaitingAnswer) {
            lane.selector.wakeup(); // it may send this one before the answer it waits for
        }
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

    /** Whether {@link #close} ran: lanes stop and settle nothing more. */
    boolean isClosed() {
        return closed;
    }

    void close(String why) {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        for (MooncakeLane lane : lanes) {
            Thread t = lane.thread;
            if (t != null) {
                t.interrupt(); // wakes it from the queue, and from select() (an interrupt calls wakeup())
            } else {
                lane.dropSocket(); // never started: nobody else owns the socket
                MooncakeTcpTransport.closeQuietly(lane.selector);
            }
            for (Slice s; (s = lane.inflight.pollFirst()) != null; ) {
                s.fail(ErrorCode.PEER_FAILED, describe(s) + ": " + why);
            }
            lane.failQueued(why);
        }
        for (MooncakeLane lane : lanes) {
            MooncakeTcpTransport.join(lane.thread);
        }
        transport.connectionClosed(this);
    }

    String describe(Slice s) {
        return "mooncake-tcp " + (v2 ? "v2 " : "v1 ") + s.opcode() + " of " + s.length() + " bytes at 0x"
                + Long.toHexString(s.remoteAddress()) + " in segment '" + peer + "' (" + address.getHostString() + ":"
                + address.getPort() + ") on lane-" + s.path() + " (local buffer " + s.localBuffer().id() + " offset "
                + s.localOffset() + ")";
    }

}
