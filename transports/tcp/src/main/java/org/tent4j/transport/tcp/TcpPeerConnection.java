package org.tent4j.transport.tcp;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import io.netty.channel.Channel;
import io.netty.util.concurrent.EventExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Slice;
import org.tent4j.spi.TimeSource;

/**
 * {@code lanes} persistent connections to one peer segment over each of its rails (multi-rail tcp: one rail per
 * reachable (local address, remote address) pair, {@link RailConnector}); each lane is a path of the runtime's
 * scheduler, path {@code r * lanes + i} being lane i of rail r, so the runtime's bandwidth estimates and health apply
 * per socket and slices spread over the rails by their measured speed. A slice whose lane is dead goes to the live
 * lane of the same rail with the fewest outstanding bytes; a rail with no live lane fails its slices at once, so the
 * runtime retries them on another rail. A lane that dies breaks the connection ({@link #isOpen()} false), as a QP error
 * breaks an RDMA one: the runtime reopens it over the rails that still connect. Rails that did not connect are re-tried
 * every {@code rail_recheck}: one whose lanes all connect is appended to the live connection as new paths
 * ({@link PeerConnection#onPathsAdded}), and the lanes of the other rails go on untouched. Where nobody listens for
 * added paths, a rail that answers breaks the connection instead, so the reopened one has it.
 */
final class TcpPeerConnection implements PeerConnection {
    private static final Logger log = LoggerFactory.getLogger(TcpPeerConnection.class);

    private final TcpTransport transport;
    private final String peerName;
    /** The peer's largest accepted slice, or {@link Long#MAX_VALUE} if it did not publish one. */
    private final long peerMaxFrame;
    private final int lanesPerRail;
    private final PayloadCounters counters;
    /** The rails that connected: set by {@link #keep} before the connection is handed out, appended to by {@link #addRail}. */
    private volatile List<RailConnector.Rail> rails;
    /** {@code lanesPerRail} per rail, rail by rail; replaced (never changed in place) when a rail is added. */
    private volatile InitiatorLane[] lanes;
    /** The runtime's listener for added paths, or null: then a rail that answers again asks for a reopen. */
    private volatile Runnable pathsAdded;
    /** Rails that did not connect, re-tried in the background. */
    private volatile List<RailConnector.Rail> missing = List.of();
    private volatile SegmentDescriptor descriptor;
    private volatile long nextRecheckNanos;
    private final AtomicBoolean probing = new AtomicBoolean();
    /** Why the connection should be reopened although its lanes live (a missing rail answered), or null. */
    private volatile String reopen;
    /** The engine's clock: slice deadlines are in its time, which a test may drive. */
    final TimeSource clock;
    private final AtomicInteger rotation = new AtomicInteger();
    private volatile boolean closed;

    /** Lanes for every rail of {@code tried}; {@link #keep} then drops those of the rails that did not connect. */
    TcpPeerConnection(TcpTransport transport, SegmentDescriptor peer, List<RailConnector.Rail> tried, long peerMaxFrame,
                      int laneCount, PayloadCounters counters, TimeSource clock) {
        this.transport = transport;
        this.clock = clock;
        this.peerName = peer.name();
        this.descriptor = peer;
        this.peerMaxFrame = peerMaxFrame;
        this.lanesPerRail = laneCount;
        this.counters = counters;
        this.rails = List.copyOf(tried);
        this.lanes = new InitiatorLane[tried.size() * laneCount];
        for (int r = 0; r < tried.size(); r++) {
            for (int i = 0; i < laneCount; i++) {
                lanes[r * laneCount + i] = new InitiatorLane(this, i, counters);
            }
        }
    }

    /** Keeps the rails at {@code up} (indices into the rails tried) and remembers the others to re-try them. */
    void keep(List<Integer> up, Duration recheck) {
        List<RailConnector.Rail> kept = new ArrayList<>();
        List<RailConnector.Rail> left = new ArrayList<>(rails);
        InitiatorLane[] keptLanes = new InitiatorLane[up.size() * lanesPerRail];
        for (int k = 0; k < up.size(); k++) {
            int r = up.get(k);
            kept.add(rails.get(r));
            left.remove(rails.get(r));
            System.arraycopy(lanes, r * lanesPerRail, keptLanes, k * lanesPerRail, lanesPerRail);
        }
        missing(left, recheck);
        rails = List.copyOf(kept);
        lanes = keptLanes;
    }

    /** Rails worth trying that were not tried or did not connect: re-tried after {@code recheck}. */
    void missing(List<RailConnector.Rail> more, Duration recheck) {
        List<RailConnector.Rail> all = new ArrayList<>(missing);
        for (RailConnector.Rail r : more) {
            if (!all.contains(r)) {
                all.add(r);
            }
        }
        missing = List.copyOf(all);
        nextRecheckNanos = clock.nanoTime() + recheck.toNanos();
    }

    InitiatorLane lane(int i) {
        return lanes[i];
    }

    int laneCount() {
        return lanes.length;
    }

    /** The rails' names, e.g. {@code [eth0->10.0.0.2, eth1->10.0.1.2]} ({@code explain} shows them as paths). */
    List<String> railNames() {
        return rails.stream().map(RailConnector.Rail::name).toList();
    }

    String describePeer() {
        return "segment '" + peerName + "' (" + rails.stream().map(RailConnector.Rail::toString)
                .collect(java.util.stream.Collectors.joining(", ")) + ")";
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
        InitiatorLane[] ls = lanes;
        boolean known = path >= 0 && path < ls.length;
        InitiatorLane lane = known && ls[path].alive() ? ls[path] : known ? pickLane(path / lanesPerRail) : pickLane(-1);
        if (lane == null) {
            fail(slice, ErrorCode.PEER_FAILED, "tcp: no live connection to " + describePeer()
                    + (known && rails.size() > 1 ? " over rail " + rails.get(path / lanesPerRail).name() : "") + " ("
                    + ls[known ? path : 0].deathReason() + "); " + InitiatorLane.describe(slice) + " was not sent");
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

    /** The live lane of {@code rail} (-1: of any rail) with the fewest outstanding bytes, or null. */
    private InitiatorLane pickLane(int rail) {
        InitiatorLane[] ls = lanes;
        int first = rail < 0 ? 0 : rail * lanesPerRail;
        int n = rail < 0 ? ls.length : lanesPerRail;
        int start = n == 1 ? 0 : Math.floorMod(rotation.getAndIncrement(), n);
        InitiatorLane best = null;
        long bestBytes = Long.MAX_VALUE;
        for (int k = 0; k < n; k++) {
            InitiatorLane lane = ls[first + (start + k) % n];
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

    /**
     * {@code lane-i} where the peer has one rail to try (as before multi-rail), else {@code <rail>/lane-i}, e.g.
     * {@code eth1->10.0.1.2/lane-0}, also while the others are missing.
     */
    @Override
    public String pathName(int path) {
        return rails.size() == 1 && missing.isEmpty() ? "lane-" + path : rails.get(path / lanesPerRail).name() + "/lane-" + path % lanesPerRail;
    }

    @Override
    public void onPathsAdded(Runnable added) {
        pathsAdded = added;
    }

    @Override
    public void descriptorChanged(SegmentDescriptor d) {
        descriptor = d;
    }

    @Override
    public boolean isOpen() {
        if (closed || reopen != null) {
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
        List<RailConnector.Rail> m = missing;
        if (m.isEmpty() || closed || reopen != null || clock.nanoTime() - nextRecheckNanos < 0
                || !probing.compareAndSet(false, true)) {
            return;
        }
        // one probe at a time per connection; the next round starts rail_recheck after this one ended
        AtomicInteger left = new AtomicInteger(m.size());
        Runnable roundEnded = () -> {
            if (left.decrementAndGet() == 0) {
                nextRecheckNanos = clock.nanoTime() + transport.railRecheck().toNanos();
                probing.set(false);
            }
        };
        for (RailConnector.Rail r : m) {
            if (pathsAdded == null) {
                transport.probe(r, descriptor, reached -> {
                    if (Boolean.TRUE.equals(reached) && reopen == null && !closed) {
                        reopen = "rail " + r + " to segment '" + peerName + "' answers again";
                        log.info("tcp: {}; the connection is reopened to use it", reopen);
                    }
                    roundEnded.run();
                });
                continue;
            }
            List<InitiatorLane> fresh = new ArrayList<>(lanesPerRail);
            for (int i = 0; i < lanesPerRail; i++) {
                fresh.add(new InitiatorLane(this, i, counters));
            }
            transport.attach(r, descriptor, fresh, connected -> {
                if (Boolean.TRUE.equals(connected)) {
                    addRail(r, fresh);
                }
                roundEnded.run();
            });
        }
    }

    /** Appends {@code rail}, whose {@code fresh} lanes connected, as new paths, then tells the runtime. */
    private void addRail(RailConnector.Rail rail, List<InitiatorLane> fresh) {
        Runnable added;
        synchronized (this) {
            if (closed || rails.contains(rail)) {
                added = null;
            } else {
                InitiatorLane[] old = lanes;
                InitiatorLane[] grown = java.util.Arrays.copyOf(old, old.length + fresh.size());
                for (int i = 0; i < fresh.size(); i++) {
                    grown[old.length + i] = fresh.get(i);
                }
                List<RailConnector.Rail> more = new ArrayList<>(rails);
                more.add(rail);
                // rails before lanes: a path index never names a lane whose rail is not listed yet
                rails = List.copyOf(more);
                lanes = grown;
                missing = missing.stream().filter(r -> !r.equals(rail)).toList();
                added = pathsAdded;
            }
        }
        if (added == null) {
            for (InitiatorLane lane : fresh) {
                lane.shutdown("connection to " + describePeer() + " closed while rail " + rail + " was added");
            }
            return;
        }
        log.info("tcp: rail {} to segment '{}' answers again; added to the open connection as {} paths", rail,
                peerName, fresh.size());
        try {
            added.run();
        } catch (RuntimeException e) {
            log.warn("tcp: the listener for added paths threw", e);
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
        InitiatorLane[] ls;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            ls = lanes; // addRail appends no more: it checks closed under the same lock
        }
        transport.forget(this);
        for (InitiatorLane lane : ls) {
            if (lane.channel() != null) {
                lane.shutdown(reason);
            }
        }
        // wait for the lanes to fail their slices, unless that would mean waiting on our own event loop
        for (InitiatorLane lane : ls) {
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
