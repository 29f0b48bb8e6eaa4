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

    private enum State { HEADER, PAYLOAD, DISCARD, CLOSED,
        /** remote file segments (issue 12): a file WRITE's payload is arriving into {@link #filePayload} */
        FILE_PAYLOAD,
        /** remote file segments (issue 12): requests wait in {@link #stash} for file I/O to finish */
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

    // remote file segments (issue 12): begin
    /** File requests in flight on one connection at most; past it the connection stops reading its peer. */
    static final int MAX_FILE_OPS = 8;
    private FileServing fileServing;
    /** File requests started and not yet answered, oldest first; answers leave in this order. */
    private final java.util.ArrayDeque<FileOp> fileOps = new java.util.ArrayDeque<>();
    /** The file WRITE whose payload is arriving. */
    private FileOp filePayload;
    /** Requests that arrived while they had to wait for file I/O, in order. */
    private ByteBuf stash;
    /** A memory request that arrived behind file requests: it is served once they are answered. */
    private ByteBuf deferredHeader;
    /** {@link #deferredHeader} is a file request waiting for the transport's file buffer budget, not for our requests. */
    private boolean waitingForBudget;

    /** One file request: its buffer (READ: the answer; WRITE: the payload) and, once done, its outcome. */
    private static final class FileOp {
        final long id;
        final Opcode op;
        final int length;
        final org.tent4j.spi.LocalFile file;
        final long address;
        ByteBuf buf;
        boolean done;
        boolean running;
        int status;
        String message;

        FileOp(long id, Opcode op, int length, org.tent4j.spi.LocalFile file, long address) {
            this.id = id;
            this.op = op;
            this.length = length;
            this.file = file;
            this.address = address;
        }
    }
    // remote file segments (issue 12): end

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
        this.fileServing = serving;
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
            ByteBuf b = filePayload.buf;
            b.retain();
            return b.setIndex(b.writerIndex(), b.writerIndex());
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

    private void consume(ByteBuf in) {
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
                    case FILE_PAYLOAD -> onFilePayload(in); // remote file segments (issue 12)
                    case FILE_WAIT -> stashInput(in); // remote file segments (issue 12)
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
                && state != State.FILE_PAYLOAD && state != State.FILE_WAIT && fileOps.isEmpty() // remote file segments (issue 12)
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
        if (fileServing != null && fileServing.servesAddress(address)) { // remote file segments (issue 12)
            onFileHeader(op, opcode, address);
            return;
        }
        if (!fileOps.isEmpty()) { // remote file segments (issue 12): answers must stay in request order
            deferBehindFileOps(op, flags, address);
            return;
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
            ByteBuf ok = views.header();
            writeOkResponse(ok, id);
            ctx.write(ok, ctx.voidPromise());
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

    // remote file segments (issue 12): begin
    /** A request for a file range: checked, then its payload gathered (WRITE) or its I/O started (READ). */
    private void onFileHeader(int op, Opcode opcode, long address) {
        org.tent4j.spi.LocalFile file;
        try {
            file = fileServing.check(address, length, opcode);
        } catch (TransferException e) {
            if (op == OP_READ) {
                errorInOrder(requestId, statusOf(e.code()), "segment '" + segmentName + "': " + e.getMessage());
            } else {
                reject(op, statusOf(e.code()), "segment '" + segmentName + "': " + e.getMessage());
            }
            return;
        }
        if (overlapsUnansweredWrite(opcode, address)) {
            // in request order, as for memory: a READ after a WRITE of the same bytes sees the WRITE
            deferBehindFileOps(op, 0, address);
            return;
        }
        if (!fileServing.budget().tryAcquire(length, this::budgetReleased)) {
            // the transport's file buffers are spent (by any connection): read nothing more until some are freed
            deferBehindFileOps(op, 0, address);
            waitingForBudget = true;
            return;
        }
        FileOp f = new FileOp(requestId, opcode, length, file, address);
        f.buf = ctx.alloc().directBuffer(length, length);
        fileOps.add(f);
        if (op == OP_READ) {
            startFileIo(f);
        } else {
            filePayload = f;
            state = State.FILE_PAYLOAD;
        }
    }

    private void onFilePayload(ByteBuf in) {
        FileOp f = filePayload;
        if (in == f.buf) {
            counters.landed.add(in.readableBytes()); // the socket read straight into the buffer
            in.skipBytes(in.readableBytes());
        } else {
            int n = Math.min(in.readableBytes(), f.length - f.buf.writerIndex());
            f.buf.writeBytes(in, n);
            counters.copied.add(n);
        }
        if (f.buf.writerIndex() == f.length) {
            filePayload = null;
            state = State.HEADER;
            startFileIo(f);
        }
    }

    /** Starts the I/O on a worker; at {@link #MAX_FILE_OPS} in flight the peer waits (not read) until one is answered. */
    private void startFileIo(FileOp f) {
        f.running = true;
        if (fileOps.size() >= MAX_FILE_OPS) {
            waitForFileOps();
        }
        fileServing.run(f.op, f.file, f.address, f.buf, f.length, ctx.executor(), failure -> fileDone(f, failure));
    }

    private void waitForFileOps() {
        state = State.FILE_WAIT;
        ctx.channel().config().setAutoRead(false);
    }

    /** Runs on the thread that freed file buffers: retry the waiting request on this connection's event loop. */
    private void budgetReleased() {
        try {
            ctx.executor().execute(() -> {
                if (state == State.FILE_WAIT && waitingForBudget) {
                    waitingForBudget = false;
                    if (fileOps.size() < MAX_FILE_OPS) {
                        resumeReading();
                    }
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // the transport is closing, and this connection with it
        }
    }

    /** Frees a file request's buffer and gives its bytes back to the transport's budget. */
    private void dropFileBuf(FileOp f) {
        if (f.buf != null) {
            f.buf.release();
            f.buf = null;
            fileServing.budget().release(f.length);
        }
    }

    /** Whether the request overlaps an unanswered file request where either is a WRITE. */
    private boolean overlapsUnansweredWrite(Opcode opcode, long address) {
        for (FileOp f : fileOps) {
            if (f.file != null && (f.op == Opcode.WRITE || opcode == Opcode.WRITE)
                    && address < f.address + f.length && f.address < address + length) {
                return true;
            }
        }
        return false;
    }

    /** A memory request behind unanswered file requests waits for them; what follows it waits in the stash. */
    private void deferBehindFileOps(int op, int flags, long address) {
        ByteBuf h = ctx.alloc().buffer(REQUEST_HEADER_BYTES);
        h.writeIntLE(REQUEST_MAGIC).writeByte(VERSION).writeByte(op).writeShortLE(flags).writeLongLE(requestId)
                .writeLongLE(address).writeLongLE(length);
        deferredHeader = h;
        waitForFileOps();
    }

    /** An error answer that must not overtake file requests still unanswered. */
    private void errorInOrder(long id, int status, String message) {
        if (fileOps.isEmpty()) {
            respondError(id, status, message);
            return;
        }
        FileOp f = new FileOp(id, null, 0, null, 0);
        f.done = true;
        f.status = status;
        f.message = message;
        fileOps.add(f);
    }

    private void fileDone(FileOp f, TransferException failure) {
        f.running = false;
        if (state == State.CLOSED) {
            dropFileBuf(f);
            return;
        }
        f.done = true;
        if (failure != null) {
            f.status = statusOf(failure.code());
            f.message = "segment '" + segmentName + "': " + failure.getMessage();
        }
        answerDoneFileOps();
        if (state == State.FILE_WAIT && !waitingForBudget && fileOps.size() < MAX_FILE_OPS
                && (deferredHeader == null || fileOps.isEmpty())) {
            resumeReading();
            return;
        }
        flushAndReadOn();
    }

    /** Serves what waited (a deferred request, then the stash) and reads the peer again unless it must wait anew. */
    private void resumeReading() {
        state = State.HEADER;
        ByteBuf waiting = deferredHeader;
        deferredHeader = null;
        if (stash != null) {
            waiting = waiting == null ? stash : waiting.writeBytes(stash);
            if (waiting != stash) {
                stash.release();
            }
            stash = null;
        }
        if (waiting != null) {
            try {
                consume(waiting);
            } finally {
                waiting.release();
            }
        }
        flushAndReadOn();
    }

    private void flushAndReadOn() {
        flushIfPending();
        if (state != State.FILE_WAIT && state != State.CLOSED && ctx.channel().isWritable()) {
            ctx.channel().config().setAutoRead(true);
        }
    }

    /** Sends the answers at the head of the queue that are ready, in request order. */
    private void answerDoneFileOps() {
        FileOp f;
        while ((f = fileOps.peek()) != null && f.done) {
            fileOps.poll();
            if (f.message != null) {
                dropFileBuf(f);
                respondError(f.id, f.status, f.message);
                continue;
            }
            ByteBuf ok = views.header();
            writeOkResponse(ok, f.id);
            ctx.write(ok, ctx.voidPromise());
            if (f.op == Opcode.READ) {
                // the bytes go back to the budget once the socket took them (or the connection dropped them)
                int charged = f.length;
                ctx.write(f.buf.writerIndex(f.length)).addListener(w -> fileServing.budget().release(charged));
                f.buf = null;
            } else {
                dropFileBuf(f); // the WRITE is in the file: only now may the initiator hear it is done
            }
            responded();
        }
    }

    private void stashInput(ByteBuf in) {
        if (stash == null) {
            stash = ctx.alloc().buffer(in.readableBytes());
        }
        stash.writeBytes(in);
    }
    // remote file segments (issue 12): end

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
            ByteBuf ok = views.header();
            writeOkResponse(ok, requestId);
            ctx.write(ok, ctx.voidPromise());
            responded();
        }
    }

    private void reject(int op, int status, String message) {
        if (op == OP_WRITE) {
            discardRemaining = length;
            discardStatus = status;
            discardMessage = message;
            state = State.DISCARD;
        } else {
            respondError(requestId, status, message);
        }
    }

    private void respondError(long id, int status, String message) {
        byte[] text = errorText(message);
        ByteBuf frame = ctx.alloc().directBuffer(RESPONSE_HEADER_BYTES + 4 + text.length);
        writeErrorResponse(frame, id, status, text);
        ctx.write(frame, ctx.voidPromise());
        responded();
    }

    private void responded() {
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

    private void flushIfPending() {
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
        // remote file segments (issue 12): a buffer under file I/O is released when that I/O reports back
        for (FileOp f : fileOps) {
            if (!f.running) {
                dropFileBuf(f);
            }
        }
        waitingForBudget = false;
        fileOps.clear();
        filePayload = null;
        for (ByteBuf b : new ByteBuf[] {stash, deferredHeader}) {
            if (b != null) {
                b.release();
            }
        }
        stash = null;
        deferredHeader = null;
    }
}
