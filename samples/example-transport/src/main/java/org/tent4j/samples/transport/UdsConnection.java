package org.tent4j.samples.transport;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.Slice;
import org.tent4j.spi.TimeSource;

/**
 * The initiator side towards one peer: one socket per path ("lane"), each with a queue and a thread that sends one
 * request at a time and waits for its reply. The runtime picks the path of every slice; this class only honours it.
 *
 * <p>Settling exactly once is the contract that matters most: the runtime reuses a slice the moment it settles. Three
 * parties may want to settle a lane's current slice (its thread, the deadline watchdog, {@link #close()}); each
 * takes it out of {@link Lane#current} with an atomic swap first, and only the one that got it settles it.
 *
 * <p>This example favours clarity over speed: a slice costs a round trip per lane, bytes go through the kernel twice
 * (user to socket buffer to user), and each slice allocates a ByteBuffer view. The registered memory itself is never
 * staged: the socket reads and writes the direct view of it.
 */
final class UdsConnection implements PeerConnection {
    private static final long WATCHDOG_PERIOD_MS = 100;

    private final UdsTransport transport;
    private final String peer;
    private final Lane[] lanes;
    /**
     * The engine's clock ({@code TransportContext#clock()}): slice deadlines are in its time, which a test may run
     * virtually, so they are never compared with {@link System#nanoTime()}.
     */
    private final TimeSource clock;
    private final ScheduledFuture<?> watchdog;
    private volatile boolean closed;

    UdsConnection(UdsTransport transport, String peer, List<SocketChannel> channels, ScheduledExecutorService scheduler,
                  TimeSource clock) {
        this.transport = transport;
        this.clock = clock;
        this.peer = peer;
        this.lanes = new Lane[channels.size()];
        for (int i = 0; i < lanes.length; i++) {
            lanes[i] = new Lane(i, channels.get(i));
        }
        // blocking socket calls cannot time out by themselves; one periodic check per connection enforces deadlines
        this.watchdog = scheduler.scheduleWithFixedDelay(this::expireOverdue, WATCHDOG_PERIOD_MS, WATCHDOG_PERIOD_MS,
                TimeUnit.MILLISECONDS);
    }

    /** Starts the lanes' threads, once every lane exists: a lane that fails at once may close the others. */
    void start() {
        for (Lane lane : lanes) {
            lane.thread = transport.start("uds-" + transport.segmentName() + "->" + peer + "/lane-" + lane.index, lane);
        }
    }

    @Override
    public void post(Slice slice) {
        // never throw and never block: a slice that cannot start is failed through the slice
        if (closed) {
            slice.fail(ErrorCode.PEER_FAILED, describe(slice) + ": the connection is closed");
            return;
        }
        int path = slice.path();
        if (path < 0 || path >= lanes.length) {
            slice.fail(ErrorCode.INVALID_ARGUMENT, describe(slice) + ": no path " + path + " (have " + lanes.length + ")");
            return;
        }
        if (slice.length() <= 0 || slice.localOffset() < 0
                || slice.localOffset() > slice.localBuffer().length() - slice.length()) {
            slice.fail(ErrorCode.OUT_OF_BOUNDS, describe(slice) + ": outside local buffer " + slice.localBuffer().id()
                    + " of " + slice.localBuffer().length() + " bytes");
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

    /** Fails everything in flight; the runtime sees {@link #isOpen()} false and connects again when it needs to. */
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
        watchdog.cancel(false);
        for (Lane lane : lanes) {
            UdsTransport.closeQuietly(lane.channel); // wakes a thread blocked in read or write
            Thread t = lane.thread;
            if (t != null) {
                t.interrupt(); // wakes a thread waiting for work
            }
            Slice s = lane.current.getAndSet(null);
            if (s != null) {
                s.fail(ErrorCode.PEER_FAILED, describe(s) + ": " + why);
            }
            lane.failQueued(why);
        }
        for (Lane lane : lanes) {
            join(lane.thread);
        }
        transport.connectionClosed(this);
    }

    /** A slice stuck past its deadline fails with TIMEOUT; its lane's framing is then unknown, so the connection goes. */
    private void expireOverdue() {
        long now = clock.nanoTime();
        for (Lane lane : lanes) {
            Slice s = lane.current.get();
            if (s != null && now - s.deadlineNanos() > 0 && lane.current.compareAndSet(s, null)) {
                s.fail(ErrorCode.TIMEOUT, describe(s) + ": no reply from the peer by the deadline");
                close("a slice on lane-" + lane.index + " timed out");
                return;
            }
        }
    }

    static void join(Thread t) {
        if (t != null && t != Thread.currentThread()) {
            try {
                t.join(2_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private String describe(Slice s) {
        return "uds " + s.opcode() + " of " + s.length() + " bytes at 0x" + Long.toHexString(s.remoteAddress())
                + " in segment '" + peer + "' on lane-" + s.path() + " (local buffer " + s.localBuffer().id()
                + " offset " + s.localOffset() + ")";
    }

    /** One socket, one thread, one request at a time. */
    private final class Lane implements Runnable {
        final int index;
        final SocketChannel channel;
        final LinkedBlockingQueue<Slice> queue = new LinkedBlockingQueue<>();
        final AtomicReference<Slice> current = new AtomicReference<>();
        // reused for every request: only the payload view is per slice
        private final ByteBuffer request = ByteBuffer.allocateDirect(UdsTransport.REQUEST_BYTES);
        private final ByteBuffer reply = ByteBuffer.allocateDirect(UdsTransport.REPLY_BYTES + UdsTransport.MAX_MESSAGE_BYTES);
        volatile Thread thread;

        Lane(int index, SocketChannel channel) {
            this.index = index;
            this.channel = channel;
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
                    String error = exchange(s);
                    if (current.compareAndSet(s, null)) { // else the watchdog or close() settled it
                        if (error == null) {
                            s.complete();
                        } else {
                            int nl = error.indexOf('\n');
                            s.fail(codeOf(error.substring(0, nl)), describe(s) + ": " + error.substring(nl + 1));
                        }
                    }
                }
            } catch (InterruptedException e) {
                // close() woke us; it settles what is left
            } catch (IOException | RuntimeException e) {
                // the socket broke (peer gone, or close()/the watchdog closed it) or local memory went away
                Slice s = current.getAndSet(null);
                if (s != null) {
                    s.fail(ErrorCode.PEER_FAILED, describe(s) + ": " + e);
                }
                close("lane-" + index + " failed: " + e);
            }
        }

        /** Sends one request and reads its reply: null on success, else {@code "<code>\n<message>"} from the target. */
        private String exchange(Slice s) throws IOException {
            ByteBuffer local = s.localBuffer().segment().asSlice(s.localOffset(), s.length()).asByteBuffer();
            request.clear().putInt(UdsTransport.MAGIC).putInt(s.opcode() == Opcode.READ ? UdsTransport.OP_READ
                    : UdsTransport.OP_WRITE).putLong(s.remoteAddress()).putLong(s.length()).flip();
            UdsTransport.writeFully(channel, request);
            if (s.opcode() == Opcode.WRITE) {
                UdsTransport.writeFully(channel, local);
            }
            UdsTransport.readFully(channel, reply.clear().limit(UdsTransport.REPLY_BYTES), false);
            int status = reply.getInt(0);
            int n = reply.getInt(4);
            if (status != 0) {
                if (n < 0 || n > UdsTransport.MAX_MESSAGE_BYTES) {
                    throw new IOException("bad reply from segment '" + peer + "': message of " + n + " bytes");
                }
                UdsTransport.readFully(channel, reply.clear().limit(n), false);
                byte[] text = new byte[n];
                reply.flip().get(text);
                String error = new String(text, StandardCharsets.UTF_8);
                return error.indexOf('\n') > 0 ? error : ErrorCode.PROTOCOL + "\n" + error;
            }
            if (s.opcode() == Opcode.READ) {
                UdsTransport.readFully(channel, local, false);
            }
            return null;
        }

        /** The target's code; one this runtime does not know (a newer peer) is a protocol problem, not a crash. */
        private static ErrorCode codeOf(String name) {
            try {
                return ErrorCode.valueOf(name);
            } catch (IllegalArgumentException e) {
                return ErrorCode.PROTOCOL;
            }
        }

        void failQueued(String why) {
            for (Slice s; (s = queue.poll()) != null; ) {
                s.fail(ErrorCode.PEER_FAILED, describe(s) + ": " + why);
            }
        }
    }
}
