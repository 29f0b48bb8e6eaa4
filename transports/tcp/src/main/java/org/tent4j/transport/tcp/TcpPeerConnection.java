package org.tent4j.transport.tcp;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.netty.channel.Channel;
import io.netty.util.concurrent.EventExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.Slice;
import org.tent4j.spi.TimeSource;

/**
 * {@code lanes} persistent connections to one peer segment, each a path of the runtime's scheduler: a slice goes to
 * the lane {@link Slice#path()} names, so the runtime's bandwidth estimates and health apply per socket. A slice whose
 * lane is dead (or that names none) goes to the live lane with the fewest outstanding bytes.
 */
final class TcpPeerConnection implements PeerConnection {
    private static final Logger log = LoggerFactory.getLogger(TcpPeerConnection.class);

    private final TcpTransport transport;
    private final String peerName;
    private final String endpoint;
    /** The peer's largest accepted slice, or {@link Long#MAX_VALUE} if it did not publish one. */
    private final long peerMaxFrame;
    private final InitiatorLane[] lanes;
    /** The engine's clock: slice deadlines are in its time, which a test may drive. */
    final TimeSource clock;
    private final AtomicInteger rotation = new AtomicInteger();
    private volatile boolean closed;

    TcpPeerConnection(TcpTransport transport, String peerName, String endpoint, long peerMaxFrame, int laneCount,
                      PayloadCounters counters, TimeSource clock) {
        this.transport = transport;
        this.clock = clock;
        this.peerName = peerName;
        this.endpoint = endpoint;
        this.peerMaxFrame = peerMaxFrame;
        this.lanes = new InitiatorLane[laneCount];
        for (int i = 0; i < laneCount; i++) {
            lanes[i] = new InitiatorLane(this, i, counters);
        }
    }

    InitiatorLane lane(int i) {
        return lanes[i];
    }

    int laneCount() {
        return lanes.length;
    }

    String describePeer() {
        return "segment '" + peerName + "' (" + endpoint + ")";
    }

    @Override
    public void post(Slice slice) {
        if (closed) {
            fail(slice, ErrorCode.PEER_FAILED, "tcp: connection to " + describePeer() + " is closed; "
                    + InitiatorLane.describe(slice) + " was not sent");
            return;
        }
        String invalid = invalid(slice);
        if (invalid != null) {
            fail(slice, invalid.startsWith("local range") ? ErrorCode.OUT_OF_BOUNDS : ErrorCode.INVALID_ARGUMENT,
                    "tcp: " + InitiatorLane.describe(slice) + " to " + describePeer() + ": " + invalid);
            return;
        }
        if (clock.nanoTime() - slice.deadlineNanos() > 0) {
            fail(slice, ErrorCode.TIMEOUT, "tcp: " + InitiatorLane.describe(slice) + " to " + describePeer()
                    + ": deadline passed before it was sent");
            return;
        }
        int path = slice.path();
        InitiatorLane lane = path >= 0 && path < lanes.length && lanes[path].alive() ? lanes[path] : pickLane();
        if (lane == null) {
            fail(slice, ErrorCode.PEER_FAILED, "tcp: no live connection to " + describePeer() + " ("
                    + lanes[0].deathReason() + "); " + InitiatorLane.describe(slice) + " was not sent");
            return;
        }
        lane.submit(slice);
    }

    /** Why the slice cannot be sent, or {@code null}; allocation-free when it can. */
    private String invalid(Slice s) {
        long length = s.length();
        if (length <= 0) {
            return "length must be > 0";
        }
        if (length > peerMaxFrame) {
            return "length exceeds the peer's max_frame of " + peerMaxFrame + " bytes";
        }
        if (length > WireProtocol.MAX_FRAME_LIMIT) {
            return "length exceeds the tcp frame limit of " + WireProtocol.MAX_FRAME_LIMIT + " bytes";
        }
        if (s.opcode() == null) {
            return "no opcode";
        }
        LocalBuffer local = s.localBuffer();
        long offset = s.localOffset();
        if (offset < 0 || offset > local.length() - length) {
            return "local range [+" + offset + ", +" + length + ") lies outside local buffer " + local.id() + " of "
                    + local.length() + " bytes";
        }
        if (s.opcode() == Opcode.READ && local.segment().isReadOnly()) {
            return "local buffer " + local.id() + " is a read-only segment and cannot receive a READ";
        }
        return null;
    }

    private InitiatorLane pickLane() {
        int n = lanes.length;
        int start = n == 1 ? 0 : Math.floorMod(rotation.getAndIncrement(), n);
        InitiatorLane best = null;
        long bestBytes = Long.MAX_VALUE;
        for (int k = 0; k < n; k++) {
            InitiatorLane lane = lanes[(start + k) % n];
            if (!lane.alive()) {
                continue;
            }
            long bytes = lane.outstandingBytes.get();
            if (bytes < bestBytes) {
                best = lane;
                bestBytes = bytes;
                if (bytes == 0) {
                    break;
                }
            }
        }
        return best;
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
        if (closed) {
            return false;
        }
        for (InitiatorLane lane : lanes) {
            if (!lane.alive()) {
                return false;
            }
        }
        return true;
    }

    int liveLanes() {
        int n = 0;
        for (InitiatorLane lane : lanes) {
            if (lane.alive()) {
                n++;
            }
        }
        return n;
    }

    void sweep() {
        for (InitiatorLane lane : lanes) {
            lane.requestSweep();
        }
    }

    void laneDied(InitiatorLane lane) {
        if (!closed) {
            log.debug("tcp: a lane to {} died ({}); the connection reports closed", describePeer(), lane.deathReason());
        }
    }

    @Override
    public void close() {
        close("connection closed by the local engine");
    }

    void close(String reason) {
        if (closed) {
            return;
        }
        closed = true;
        transport.forget(this);
        for (InitiatorLane lane : lanes) {
            if (lane.channel() != null) {
                lane.shutdown(reason);
            }
        }
        // wait for the lanes to fail their slices, unless that would mean waiting on our own event loop
        for (InitiatorLane lane : lanes) {
            Channel ch = lane.channel();
            if (ch == null) {
                continue;
            }
            EventExecutor loop = ch.eventLoop();
            if (loop.inEventLoop() || transport.onEventLoop()) {
                continue;
            }
            ch.closeFuture().awaitUninterruptibly(2, TimeUnit.SECONDS);
        }
    }

    private static void fail(Slice slice, ErrorCode code, String message) {
        try {
            slice.fail(code, message);
        } catch (Throwable t) {
            log.warn("slice failure callback threw", t);
        }
    }
}
