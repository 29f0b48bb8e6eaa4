package org.tent4j.transport.tcp;

import static org.tent4j.transport.tcp.WireProtocol.*;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Queue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.util.internal.PlatformDependent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.Slice;
import org.tent4j.spi.TimeSource;

/**
 * One persistent connection to a peer's data port. Slices are pipelined: requests go out as they are posted and the
 * peer answers in order, so the oldest outstanding slice is always the one the next response is about.
 *
 * <p>Threads: {@link #submit} runs on any thread and only enqueues; everything else runs on the channel's event loop,
 * which is what makes "each slice completes exactly once" hold without locks: a slice is removed from a queue before
 * it is completed or failed, and only the event loop removes.
 */
final class InitiatorLane extends ChannelInboundHandlerAdapter implements LandingRecvAllocator.PayloadSink {
    private static final Logger log = LoggerFactory.getLogger(InitiatorLane.class);

    private enum State { HEADER, PAYLOAD, ERROR_LENGTH, ERROR_MESSAGE, DEAD }

    private final TcpPeerConnection owner;
    private final int index;
    private final PayloadCounters counters;
    /** The engine's clock, which slice deadlines are in; the owner's, kept here so the sweep need not reach for it. */
    private final TimeSource clock;

    /** Posted, not yet written; multi-producer, drained by the event loop alone. */
    private final Queue<Slice> posted = PlatformDependent.newMpscQueue();
    private final AtomicBoolean drainScheduled = new AtomicBoolean();
    private final Runnable drainTask = this::drain;
    private final Runnable sweepTask = this::sweep;
    /** Bytes posted and not yet answered, for spreading slices over lanes. */
    final AtomicLong outstandingBytes = new AtomicLong();
    /** Why this lane is dead, or {@code null} while it lives. Written on the event loop only. */
    private volatile String deathReason;

    private ChannelHandlerContext ctx;
    private Channel channel;
    private EventLoop loop;
    /** Written and awaiting their answer, oldest first. */
    private final ArrayDeque<Slice> inflight = new ArrayDeque<>();
    private long nextRequestId = 1;

    /** Views of local memory for payloads, recycled on this lane's event loop. */
    private MemoryRegionBufs views;

    private ByteBuf header;
    private ByteBuf errorText;
    private State state = State.HEADER;
    private ByteBuf landing;
    private int received;
    private int errorStatus;
    private int errorLength;

    InitiatorLane(TcpPeerConnection owner, int index, PayloadCounters counters) {
        this.owner = owner;
        this.clock = owner.clock;
        this.counters = counters;
        this.index = index;
    }

    // ---- any thread ----

    boolean alive() {
        Channel ch = channel;
        return deathReason == null && ch != null && ch.isActive();
    }

    String deathReason() {
        String r = deathReason;
        return r != null ? r : "connection is closed";
    }

    Channel channel() {
        return channel;
    }

    /** Queues {@code slice} for this lane's event loop; never blocks. */
    void submit(Slice slice) {
        outstandingBytes.addAndGet(slice.length());
        posted.offer(slice);
        if (drainScheduled.compareAndSet(false, true)) {
            try {
                loop.execute(drainTask);
            } catch (RejectedExecutionException e) {
                failPostedWithoutLoop("the transport's event loop has shut down");
            }
        }
    }

    /** Asks the event loop to fail what has passed its deadline; called from the transport's periodic sweep. */
    void requestSweep() {
        if (outstandingBytes.get() > 0 && deathReason == null) {
            try {
                loop.execute(sweepTask);
            } catch (RejectedExecutionException ignored) {
                // shutting down: close() fails what is left
            }
        }
    }

    /** Kills the lane from any thread, failing its slices with PEER_FAILED naming {@code reason}. */
    void shutdown(String reason) {
        if (loop.inEventLoop()) {
            die(reason, false);
            return;
        }
        try {
            loop.execute(() -> die(reason, false));
        } catch (RejectedExecutionException e) {
            failPostedWithoutLoop(reason);
            abort(channel);
        }
    }

    // ---- event loop ----

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        this.channel = ctx.channel();
        this.loop = ctx.channel().eventLoop();
        this.views = new MemoryRegionBufs(loop);
        header = views.header();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        die("connection handler removed", false);
        releaseScratch();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        die("connection closed", false);
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (deathReason != null) {
            return; // writes still queued at close fail one by one; the lane already reported why it died
        }
        log.debug("tcp lane {} to {} failed", index, owner.describePeer(), cause);
        die(String.valueOf(cause), false);
    }

    @Override
    public ByteBuf nextReadBuffer() {
        if (state == State.PAYLOAD) {
            if (landing.capacity() <= MemoryRegionBufs.COPY_OUT_BYTES) {
                return views.bulkReadBuffer();
            }
            landing.retain();
            return landing.setIndex(received, received);
        }
        Slice head = inflight.peekFirst();
        return head != null && head.opcode() == Opcode.READ && head.length() <= MemoryRegionBufs.COPY_OUT_BYTES
                ? views.bulkReadBuffer() : views.readBuffer();
    }

    private void drain() {
        drainScheduled.set(false);
        if (deathReason != null || !channel.isActive()) {
            die("connection closed", false);
            return;
        }
        boolean wrote = false;
        Slice s;
        while ((s = posted.poll()) != null) {
            send(s);
            wrote = true;
        }
        if (wrote) {
            ctx.flush();
        }
    }

    private void send(Slice s) {
        long id = nextRequestId++;
        int op = opcodeOf(s.opcode());
        ByteBuf h = views.header();
        writeRequest(h, op, id, s.remoteAddress(), s.length());
        // queued before writing: a failed write fires exceptionCaught, which must find it to fail it
        inflight.addLast(s);
        ctx.write(h, ctx.voidPromise());
        if (op == OP_WRITE) {
            LocalBuffer local = s.localBuffer();
            ctx.write(views.readable(local.segment(), s.localOffset(), (int) s.length(), null), ctx.voidPromise());
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        ByteBuf in = (ByteBuf) msg;
        try {
            while (in.isReadable() && state != State.DEAD) {
                switch (state) {
                    case HEADER -> {
                        int at = wholeHeaderAt(header, in, RESPONSE_HEADER_BYTES);
                        if (at >= 0) {
                            onResponseHeader(in, at);
                        } else if (fill(header, in, RESPONSE_HEADER_BYTES)) {
                            onResponseHeader(header, 0);
                        }
                    }
                    case PAYLOAD -> onPayload(in);
                    case ERROR_LENGTH -> {
                        if (fill(header, in, 4)) {
                            errorLength = header.getIntLE(0);
                            header.clear();
                            if (errorLength < 0 || errorLength > MAX_ERROR_MESSAGE_BYTES) {
                                violation("error message length " + Integer.toUnsignedString(errorLength)
                                        + " exceeds " + MAX_ERROR_MESSAGE_BYTES);
                            } else if (errorLength == 0) {
                                failHead(errorOf(errorStatus), "(no message)");
                            } else {
                                if (errorText == null) {
                                    errorText = ctx.alloc().heapBuffer(MAX_ERROR_MESSAGE_BYTES, MAX_ERROR_MESSAGE_BYTES);
                                }
                                errorText.clear();
                                state = State.ERROR_MESSAGE;
                            }
                        }
                    }
                    case ERROR_MESSAGE -> {
                        if (fill(errorText, in, errorLength)) {
                            failHead(errorOf(errorStatus), errorText.toString(StandardCharsets.UTF_8));
                        }
                    }
                    case DEAD -> {
                    }
                }
            }
        } finally {
            in.release();
        }
    }

    /** The response header at {@code at} of {@code h}. */
    private void onResponseHeader(ByteBuf h, int at) {
        int magic = h.getIntLE(at);
        int status = h.getIntLE(at + 4);
        long id = h.getLongLE(at + 8);
        header.clear();
        if (magic != RESPONSE_MAGIC) {
            violation("bad response magic 0x" + Integer.toHexString(magic));
            return;
        }
        Slice head = inflight.peekFirst();
        long expected = nextRequestId - inflight.size();
        if (head == null) {
            // a target that cannot parse our stream answers with id 0; say what it said
            violation("response (status " + status + ", id " + id + ") while no request is outstanding");
            return;
        }
        if (id != expected) {
            if (status == STATUS_PROTOCOL) {
                // the target rejects our stream as a whole (e.g. it could not read the header); take its word
                errorStatus = status;
                state = State.ERROR_LENGTH;
                return;
            }
            violation("response for request " + id + " while request " + expected + " is the oldest outstanding");
            return;
        }
        if (status == STATUS_OK) {
            if (head.opcode() == Opcode.READ) {
                LocalBuffer local = head.localBuffer();
                landing = views.landing(local.segment(), head.localOffset(), (int) head.length(), null);
                received = 0;
                state = State.PAYLOAD;
            } else {
                completeHead();
            }
        } else {
            errorStatus = status;
            state = State.ERROR_LENGTH;
        }
    }

    private void onPayload(ByteBuf in) {
        int length = landing.capacity();
        int n;
        if (in == landing) {
            n = in.readableBytes();
            counters.landed.add(n);
        } else {
            n = Math.min(in.readableBytes(), length - received);
            landing.setBytes(received, in, in.readerIndex(), n);
            counters.copied.add(n);
        }
        in.skipBytes(n);
        received += n;
        if (received == length) {
            ByteBuf l = landing;
            landing = null;
            l.release();
            completeHead();
        }
    }

    private void completeHead() {
        Slice s = inflight.pollFirst();
        state = State.HEADER;
        outstandingBytes.addAndGet(-s.length());
        try {
            s.complete();
        } catch (Throwable t) {
            log.warn("slice completion callback threw", t);
        }
    }

    private void failHead(ErrorCode code, String targetMessage) {
        Slice s = inflight.pollFirst();
        state = State.HEADER;
        outstandingBytes.addAndGet(-s.length());
        if (code == ErrorCode.PROTOCOL) {
            // the target closes after a protocol error; the lane's other slices are lost with it. The lane dies
            // before the slice hears of it, so whoever the failure wakes sees the connection closed.
            die("target reported a protocol violation: " + targetMessage, false);
        }
        finish(s, code, "tcp: " + owner.describePeer() + " rejected " + describe(s) + ": " + targetMessage);
    }

    private void violation(String reason) {
        log.warn("tcp lane {} to {}: protocol violation by the peer: {}", index, owner.describePeer(), reason);
        Slice head = inflight.pollFirst();
        die("protocol violation by the peer: " + reason, false);
        if (head != null) {
            outstandingBytes.addAndGet(-head.length());
            finish(head, ErrorCode.PROTOCOL, "tcp: protocol violation by " + owner.describePeer() + " while "
                    + describe(head) + " was outstanding: " + reason);
        }
    }

    private void sweep() {
        if (deathReason != null || inflight.isEmpty()) {
            return;
        }
        long now = clock.nanoTime();
        for (Slice s : inflight) {
            if (now - s.deadlineNanos() >= 0) {
                // the answer may still come, so the stream cannot be trusted any more: the lane goes
                die("a request on this lane passed its deadline", true);
                return;
            }
        }
    }

    /**
     * Fails everything queued here and closes the channel; the first reason wins. With {@code timeouts}, slices past
     * their deadline fail with TIMEOUT and the others with PEER_FAILED.
     */
    private void die(String reason, boolean timeouts) {
        if (deathReason != null) {
            failPosted();
            return;
        }
        deathReason = reason;
        state = State.DEAD;
        if (landing != null) {
            ByteBuf l = landing;
            landing = null;
            l.release();
        }
        long now = clock.nanoTime();
        Slice s;
        while ((s = inflight.pollFirst()) != null) {
            outstandingBytes.addAndGet(-s.length());
            if (timeouts && now - s.deadlineNanos() >= 0) {
                finish(s, ErrorCode.TIMEOUT, "tcp: no answer from " + owner.describePeer() + " (lane " + index
                        + ") for " + describe(s) + " within its deadline; lane closed");
            } else {
                finish(s, ErrorCode.PEER_FAILED, "tcp: lane " + index + " to " + owner.describePeer() + " failed ("
                        + reason + ") while " + describe(s) + " was in flight");
            }
        }
        failPosted();
        if (channel != null) {
            abort(channel);
        }
        owner.laneDied(this);
    }

    /**
     * Closes with a reset (SO_LINGER 0), not a FIN: a graceful close leaves what the kernel has not yet sent in its
     * buffer and goes on sending it, so after a silent partition heals the peer would still apply the WRITEs of slices
     * already failed, over bytes a later request wrote (seen on the test bed, issue 24). A reset discards them.
     */
    private static void abort(Channel channel) {
        try {
            channel.config().setOption(ChannelOption.SO_LINGER, 0);
        } catch (RuntimeException closedAlready) {
            // the option cannot be set on a channel that is gone; there is nothing left to discard then
        }
        channel.close();
    }

    private void failPosted() {
        Slice s;
        while ((s = posted.poll()) != null) {
            outstandingBytes.addAndGet(-s.length());
            finish(s, ErrorCode.PEER_FAILED, "tcp: lane " + index + " to " + owner.describePeer() + " is closed ("
                    + deathReason() + "); " + describe(s) + " was not sent");
        }
    }

    private synchronized void failPostedWithoutLoop(String reason) {
        // the event loop is gone, so this thread is the only consumer left; the lock keeps callers from racing
        Slice s;
        while ((s = posted.poll()) != null) {
            outstandingBytes.addAndGet(-s.length());
            finish(s, ErrorCode.PEER_FAILED, "tcp: lane " + index + " to " + owner.describePeer() + " is closed ("
                    + reason + "); " + describe(s) + " was not sent");
        }
    }

    private void releaseScratch() {
        if (header != null) {
            header.release();
            header = null;
        }
        if (errorText != null) {
            errorText.release();
            errorText = null;
        }
    }

    private static void finish(Slice s, ErrorCode code, String message) {
        try {
            s.fail(code, message);
        } catch (Throwable t) {
            log.warn("slice failure callback threw", t);
        }
    }

    static String describe(Slice s) {
        return s.opcode() + " of " + s.length() + " bytes at 0x" + Long.toHexString(s.remoteAddress());
    }
}
