package org.tent4j.transport.tcp;

import static org.tent4j.transport.tcp.WireProtocol.*;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.timeout.IdleStateEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.LocalMemory;

/**
 * The target side of one inbound connection: parses requests, checks each against the engine's registrations before
 * touching memory, receives WRITE payloads straight into registered memory, and answers in request order.
 *
 * <p>A request that fails its check is answered with an error status and the connection goes on (a WRITE's payload is
 * read and dropped first). A request that breaks the protocol closes this connection only, after an error frame that
 * says why. Runs on the channel's event loop only.
 */
final class TargetConnection extends ChannelInboundHandlerAdapter implements LandingRecvAllocator.PayloadSink {
    private static final Logger log = LoggerFactory.getLogger(TargetConnection.class);

    enum State { HEADER, PAYLOAD, DISCARD, CLOSED,
        /** remote file segments (issue 12): a file WRITE's payload is arriving into its buffer ({@link FileRequests}) */
        FILE_PAYLOAD,
        /** remote file segments (issue 12): requests wait for file I/O to finish ({@link FileRequests}) */
        FILE_WAIT }

    private final String segmentName;
    private final LocalMemory memory;
    private final BufferPins pins;
    private final long maxFrame;
    private final PayloadCounters counters;
    private final InboundLimits limits;

    private ChannelHandlerContext ctx;
    /** The pin of the buffer this connection used last; consecutive requests mostly hit the same buffer. */
    private BufferPins.Pin lastPin;
    private ByteBuf header;
    /** Views of registered memory for payloads, recycled on this connection's event loop. */
    private MemoryRegionBufs views;
    private State state = State.HEADER;
    private boolean flushPending;

    private long requestId;
    private int length;
    /** WRITE in progress: the destination view and how many of its bytes are in place. */
    private ByteBuf landing;
    private int received;
    /** Rejected WRITE: payload bytes still to drop, then the answer. */
    private long discardRemaining;
    private int discardStatus;
    private String discardMessage;

    /** remote file segments (issue 12): this connection's file requests; null when the engine serves no files. */
    private FileRequests files;

    TargetConnection(String segmentName, LocalMemory memory, BufferPins pins, long maxFrame,
                     PayloadCounters counters, InboundLimits limits) {
        this.segmentName = segmentName;
        this.limits = limits;
        this.counters = counters;
        this.memory = memory;
        this.pins = pins;
        this.maxFrame = maxFrame;
    }

    /** remote file segments (issue 12): serve peers' requests for this engine's registered files too. */
    void serveFiles(FileServing serving) {
        this.files = serving == null ? null : new FileRequests(this, serving, segmentName, counters);
    }

    ChannelHandlerContext ctx() {
        return ctx;
    }

    State state() {
        return state;
    }

    void state(State state) {
        this.state = state;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        this.views = new MemoryRegionBufs(ctx.channel().eventLoop());
        header = views.header();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        shutDown();
        if (header != null) {
            header.release();
            header = null;
        }
    }

    @Override
    public ByteBuf nextReadBuffer() {
        if (state == State.FILE_PAYLOAD) { // remote file segments (issue 12): the socket reads into the WRITE's buffer
            return files.nextReadBuffer();
        }
        if (state != State.PAYLOAD) {
            return views.readBuffer();
        }
        landing.retain();
        return landing.setIndex(received, received);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        ByteBuf in = (ByteBuf) msg;
        try {
            consume(in);
        } finally {
            in.release();
        }
    }

    void consume(ByteBuf in) {
        {
            while (in.isReadable()) {
                switch (state) {
                    case HEADER -> {
                        int at = wholeHeaderAt(header, in, REQUEST_HEADER_BYTES);
                        if (at >= 0) {
                            onHeader(in, at);
                        } else if (fill(header, in, REQUEST_HEADER_BYTES)) {
                            onHeader(header, 0);
                        } else if (header.writerIndex() >= 4 && header.getIntLE(0) != REQUEST_MAGIC) {
                            // reject a foreign protocol (an HTTP probe, say) without waiting for 32 bytes
                            // that may never come
                            violation(0, badMagic(header.getIntLE(0)));
                        }
                    }
                    case PAYLOAD -> onPayload(in);
                    case DISCARD -> {
                        int n = (int) Math.min(in.readableBytes(), discardRemaining);
                        in.skipBytes(n);
                        discardRemaining -= n;
                        if (discardRemaining == 0) {
                            errorInOrder(requestId, discardStatus, discardMessage); // remote file segments (issue 12)
                            discardMessage = null;
                            state = State.HEADER;
                        }
                    }
                    case CLOSED -> in.skipBytes(in.readableBytes());
                    case FILE_PAYLOAD -> files.onPayload(in); // remote file segments (issue 12)
                    case FILE_WAIT -> files.stashInput(in); // remote file segments (issue 12)
                }
            }
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        flushIfPending();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable() && state != State.CLOSED
                && state != State.FILE_WAIT) { // remote file segments (issue 12): reads resume when the file I/O is done
            ctx.channel().config().setAutoRead(true);
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        // idle = no request bytes for idle_timeout (a header cut off half way counts: that peer stalls us) and no
        // answer still queued; a peer slowly reading a large answer is not idle
        if (evt instanceof IdleStateEvent && state != State.CLOSED && state != State.PAYLOAD
                && state != State.FILE_PAYLOAD && state != State.FILE_WAIT && (files == null || files.idle()) // remote file segments (issue 12)
                && ctx.channel().unsafe().outboundBuffer() != null && ctx.channel().unsafe().outboundBuffer().isEmpty()) {
            limits.idleClosed.increment();
            log.debug("segment '{}': closing tcp connection from {}: idle for {}", segmentName,
                    ctx.channel().remoteAddress(), limits.idleTimeout);
            shutDown();
            ctx.close();
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        shutDown();
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (state == State.CLOSED) {
            // every answer still queued at close fails its void promise and lands here; one report is enough
            return;
        }
        log.debug("segment '{}': tcp connection from {} failed; closing it", segmentName, ctx.channel().remoteAddress(),
                cause);
        shutDown();
        ctx.close();
    }

    /** The request header at {@code at} of {@code h}. */
    private void onHeader(ByteBuf h, int at) {
        int magic = h.getIntLE(at);
        int version = h.getUnsignedByte(at + 4);
        int op = h.getUnsignedByte(at + 5);
        int flags = h.getUnsignedShortLE(at + 6);
        long id = h.getLongLE(at + 8);
        long address = h.getLongLE(at + 16);
        long len = h.getLongLE(at + 24);
        header.clear();
        if (magic != REQUEST_MAGIC) {
            violation(0, badMagic(magic));
            return;
        }
        if (version != VERSION) {
            violation(id, "unsupported protocol version " + version + " (this target speaks " + VERSION + ")");
            return;
        }
        if (op != OP_READ && op != OP_WRITE) {
            violation(id, "unknown opcode " + op);
            return;
        }
        if (flags != 0) {
            violation(id, "unknown flags 0x" + Integer.toHexString(flags));
            return;
        }
        if (len <= 0 || len > maxFrame) { // a u64 length >= 2^63 reads as negative
            violation(id, opcodeName(op) + " length " + Long.toUnsignedString(len) + " is outside [1, " + maxFrame
                    + "] (max_frame)");
            return;
        }
        if (Long.compareUnsigned(address + len, address) < 0) {
            violation(id, opcodeName(op) + " of " + len + " bytes at 0x" + Long.toHexString(address)
                    + ": address + length overflows");
            return;
        }
        requestId = id;
        length = (int) len;
        Opcode opcode = op == OP_READ ? Opcode.READ : Opcode.WRITE;
        if (files != null) { // remote file segments (issue 12)
            if (files.serves(address)) {
                files.onHeader(op, opcode, id, address, length);
                return;
            }
            if (!files.idle()) { // answers must stay in request order
                files.deferBehind(op, flags, id, address, length);
                return;
            }
        }
        LocalBuffer buffer;
        try {
            buffer = memory.checkRemoteAccess(address, len, opcode);
        } catch (TransferException e) {
            reject(op, statusOf(e.code()), "segment '" + segmentName + "': " + e.getMessage());
            return;
        } catch (RuntimeException e) {
            log.warn("segment '{}': access check of {} [0x{}, +{}) failed", segmentName, opcode,
                    Long.toHexString(address), len, e);
            reject(op, STATUS_INTERNAL, "segment '" + segmentName + "': access check failed: " + e);
            return;
        }
        if (op == OP_WRITE && buffer.segment().isReadOnly()) {
            reject(op, STATUS_PERMISSION_DENIED, "segment '" + segmentName + "': peer WRITE of [0x"
                    + Long.toHexString(address) + ", +" + len + ") denied: registered memory is a read-only segment");
            return;
        }
        BufferPins.Pin pin = pins.acquire(buffer, lastPin, memory, address, len);
        if (pin == null) {
            reject(op, STATUS_ADDRESS_NOT_REGISTERED, "segment '" + segmentName + "': peer " + opcode + " of [0x"
                    + Long.toHexString(address) + ", +" + len + "): buffer is being unregistered");
            return;
        }
        lastPin = pin;
        long offset = address - buffer.address();
        if (op == OP_READ) {
            ByteBuf view;
            try {
                view = views.readable(buffer.segment(), offset, length, pin);
            } catch (RuntimeException e) {
                pin.release();
                throw e;
            }
            writeOk(id);
            ctx.write(view, ctx.voidPromise());
            responded();
        } else {
            try {
                landing = views.landing(buffer.segment(), offset, length, pin);
            } catch (RuntimeException e) {
                pin.release();
                throw e;
            }
            received = 0;
            state = State.PAYLOAD;
        }
    }

    /** An error answer that must not overtake file requests still unanswered. */
    void errorInOrder(long id, int status, String message) {
        if (files == null || !files.errorBehind(id, status, message)) { // remote file segments (issue 12)
            respondError(id, status, message);
        }
    }


    private static String badMagic(int magic) {
        return "bad magic 0x" + Integer.toHexString(magic) + " (expected 0x" + Integer.toHexString(REQUEST_MAGIC)
                + ", \"T4JT\")";
    }

    private void onPayload(ByteBuf in) {
        int n;
        if (in == landing) {
            n = in.readableBytes(); // the socket read straight into the destination
            counters.landed.add(n);
        } else {
            n = Math.min(in.readableBytes(), length - received);
            landing.setBytes(received, in, in.readerIndex(), n);
            counters.copied.add(n);
        }
        in.skipBytes(n);
        received += n;
        if (received == length) {
            // every byte is in memory: only now may the initiator hear that the WRITE is done
            ByteBuf done = landing;
            landing = null;
            state = State.HEADER;
            done.release();
            writeOk(requestId);
            responded();
        }
    }

    void reject(int op, int status, String message) {
        if (op == OP_WRITE) {
            discardRemaining = length;
            discardStatus = status;
            discardMessage = message;
            state = State.DISCARD;
        } else {
            respondError(requestId, status, message);
        }
    }

    /** Queues the OK answer header for request {@code id}; a READ's bytes follow it. */
    void writeOk(long id) {
        ByteBuf ok = views.header();
        writeOkResponse(ok, id);
        ctx.write(ok, ctx.voidPromise());
    }

    void respondError(long id, int status, String message) {
        byte[] text = errorText(message);
        ByteBuf frame = ctx.alloc().directBuffer(RESPONSE_HEADER_BYTES + 4 + text.length);
        writeErrorResponse(frame, id, status, text);
        ctx.write(frame, ctx.voidPromise());
        responded();
    }

    void responded() {
        flushPending = true;
        if (!ctx.channel().isWritable()) {
            // the peer is not reading its answers fast enough: stop reading its requests until it does. Reading
            // stops before the flush, because the flush may drain the queue and fire channelWritabilityChanged,
            // whose restart must not be undone afterwards (that would stop this connection for good).
            limits.queued(views.headersInUse());
            if (ctx.channel().config().isAutoRead()) {
                limits.readPaused();
            }
            ctx.channel().config().setAutoRead(false);
            flushIfPending();
            if (ctx.channel().isWritable() && state != State.CLOSED
                    && state != State.FILE_WAIT) { // remote file segments (issue 12)
                ctx.channel().config().setAutoRead(true);
            }
        }
    }

    void flushIfPending() {
        if (flushPending) {
            flushPending = false;
            ctx.flush();
        }
    }

    private void violation(long id, String reason) {
        String message = "segment '" + segmentName + "': protocol violation from " + ctx.channel().remoteAddress()
                + ": " + reason + "; closing the connection";
        limits.violations.increment();
        long n = limits.violations.sum();
        if (Long.bitCount(n) == 1) { // the 1st, 2nd, 4th ...: a peer repeating one cannot flood the log
            log.warn("{} [{} protocol violations so far]", message, n);
        }
        byte[] text = errorText(message);
        ByteBuf frame = ctx.alloc().directBuffer(RESPONSE_HEADER_BYTES + 4 + text.length);
        writeErrorResponse(frame, id, STATUS_PROTOCOL, text);
        shutDown();
        flushPending = false;
        // close at once rather than after the frame is written: a peer that does not read must not keep this
        // connection alive; the frame normally fits the socket buffer and goes out before the FIN
        ctx.writeAndFlush(frame, ctx.voidPromise());
        ctx.close();
    }

    /** Stops using memory: the landing view goes back (its pin with it) and further input is dropped. */
    private void shutDown() {
        state = State.CLOSED;
        if (landing != null) {
            ByteBuf l = landing;
            landing = null;
            l.release();
        }
        discardMessage = null;
        if (files != null) { // remote file segments (issue 12)
            files.shutDown();
        }
    }
}
