package org.tent4j.transport.tcp;

import static org.tent4j.transport.tcp.WireProtocol.*;

import java.util.ArrayDeque;
import java.util.concurrent.RejectedExecutionException;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;

import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.LocalFile;
import org.tent4j.transport.tcp.TargetConnection.State;

/**
 * Remote file segments (issue 12): the file requests of one inbound connection ({@link TargetConnection}). A file
 * request's bytes go through a pooled buffer and its I/O runs on the engine's workers ({@link FileServing}), so its
 * answer may come after requests that arrived behind it; this keeps every answer in request order by holding what
 * follows (a memory request, an overlapping file request, the peer's further bytes) until the file requests ahead
 * of it are answered, and stops reading the peer while it waits. Runs on the connection's event loop only.
 */
final class FileRequests {
    /** File requests in flight on one connection at most; past it the connection stops reading its peer. */
    static final int MAX_FILE_OPS = 8;

    private final TargetConnection conn;
    private final FileServing serving;
    private final String segmentName;
    private final PayloadCounters counters;
    /** File requests started and not yet answered, oldest first; answers leave in this order. */
    private final ArrayDeque<FileOp> fileOps = new ArrayDeque<>();
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
        final LocalFile file;
        final long address;
        ByteBuf buf;
        boolean done;
        boolean running;
        int status;
        String message;

        FileOp(long id, Opcode op, int length, LocalFile file, long address) {
            this.id = id;
            this.op = op;
            this.length = length;
            this.file = file;
            this.address = address;
        }
    }

    FileRequests(TargetConnection conn, FileServing serving, String segmentName, PayloadCounters counters) {
        this.conn = conn;
        this.serving = serving;
        this.segmentName = segmentName;
        this.counters = counters;
    }

    private ChannelHandlerContext ctx() {
        return conn.ctx();
    }

    /** Whether {@code address} is in one of this engine's registered files. */
    boolean serves(long address) {
        return serving.servesAddress(address);
    }

    /** No file request is unanswered: a memory request may be answered at once. */
    boolean idle() {
        return fileOps.isEmpty();
    }

    /** The socket's next read buffer while a file WRITE's payload arrives: that WRITE's own buffer. */
    ByteBuf nextReadBuffer() {
        ByteBuf b = filePayload.buf;
        b.retain();
        return b.setIndex(b.writerIndex(), b.writerIndex());
    }

    /** A request for a file range: checked, then its payload gathered (WRITE) or its I/O started (READ). */
    void onHeader(int op, Opcode opcode, long id, long address, int length) {
        LocalFile file;
        try {
            file = serving.check(address, length, opcode);
        } catch (TransferException e) {
            if (op == OP_READ) {
                conn.errorInOrder(id, statusOf(e.code()), "segment '" + segmentName + "': " + e.getMessage());
            } else {
                conn.reject(op, statusOf(e.code()), "segment '" + segmentName + "': " + e.getMessage());
            }
            return;
        }
        if (overlapsUnansweredWrite(opcode, address, length)) {
            // in request order, as for memory: a READ after a WRITE of the same bytes sees the WRITE
            deferBehind(op, 0, id, address, length);
            return;
        }
        if (!serving.budget().tryAcquire(length, this::budgetReleased)) {
            // the transport's file buffers are spent (by any connection): read nothing more until some are freed
            deferBehind(op, 0, id, address, length);
            waitingForBudget = true;
            return;
        }
        FileOp f = new FileOp(id, opcode, length, file, address);
        f.buf = ctx().alloc().directBuffer(length, length);
        fileOps.add(f);
        if (op == OP_READ) {
            startFileIo(f);
        } else {
            filePayload = f;
            conn.state(State.FILE_PAYLOAD);
        }
    }

    /** Bytes of the file WRITE's payload; the last starts its I/O. */
    void onPayload(ByteBuf in) {
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
            conn.state(State.HEADER);
            startFileIo(f);
        }
    }

    /** Starts the I/O on a worker; at {@link #MAX_FILE_OPS} in flight the peer waits (not read) until one is answered. */
    private void startFileIo(FileOp f) {
        f.running = true;
        if (fileOps.size() >= MAX_FILE_OPS) {
            waitForFileOps();
        }
        serving.run(f.op, f.file, f.address, f.buf, f.length, ctx().executor(), failure -> fileDone(f, failure));
    }

    private void waitForFileOps() {
        conn.state(State.FILE_WAIT);
        ctx().channel().config().setAutoRead(false);
    }

    /** Runs on the thread that freed file buffers: retry the waiting request on this connection's event loop. */
    private void budgetReleased() {
        try {
            ctx().executor().execute(() -> {
                if (conn.state() == State.FILE_WAIT && waitingForBudget) {
                    waitingForBudget = false;
                    if (fileOps.size() < MAX_FILE_OPS) {
                        resumeReading();
                    }
                }
            });
        } catch (RejectedExecutionException e) {
            // the transport is closing, and this connection with it
        }
    }

    /** Frees a file request's buffer and gives its bytes back to the transport's budget. */
    private void dropFileBuf(FileOp f) {
        if (f.buf != null) {
            f.buf.release();
            f.buf = null;
            serving.budget().release(f.length);
        }
    }

    /** Whether the request overlaps an unanswered file request where either is a WRITE. */
    private boolean overlapsUnansweredWrite(Opcode opcode, long address, int length) {
        for (FileOp f : fileOps) {
            if (f.file != null && (f.op == Opcode.WRITE || opcode == Opcode.WRITE)
                    && address < f.address + f.length && f.address < address + length) {
                return true;
            }
        }
        return false;
    }

    /** A request behind unanswered file requests waits for them; what follows it waits in the stash. */
    void deferBehind(int op, int flags, long id, long address, int length) {
        ByteBuf h = ctx().alloc().buffer(REQUEST_HEADER_BYTES);
        h.writeIntLE(REQUEST_MAGIC).writeByte(VERSION).writeByte(op).writeShortLE(flags).writeLongLE(id)
                .writeLongLE(address).writeLongLE(length);
        deferredHeader = h;
        waitForFileOps();
    }

    /** Queues an error answer behind the unanswered file requests; false when there are none to wait for. */
    boolean errorBehind(long id, int status, String message) {
        if (fileOps.isEmpty()) {
            return false;
        }
        FileOp f = new FileOp(id, null, 0, null, 0);
        f.done = true;
        f.status = status;
        f.message = message;
        fileOps.add(f);
        return true;
    }

    private void fileDone(FileOp f, TransferException failure) {
        f.running = false;
        if (conn.state() == State.CLOSED) {
            dropFileBuf(f);
            return;
        }
        f.done = true;
        if (failure != null) {
            f.status = statusOf(failure.code());
            f.message = "segment '" + segmentName + "': " + failure.getMessage();
        }
        answerDoneFileOps();
        if (conn.state() == State.FILE_WAIT && !waitingForBudget && fileOps.size() < MAX_FILE_OPS
                && (deferredHeader == null || fileOps.isEmpty())) {
            resumeReading();
            return;
        }
        flushAndReadOn();
    }

    /** Serves what waited (a deferred request, then the stash) and reads the peer again unless it must wait anew. */
    private void resumeReading() {
        conn.state(State.HEADER);
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
                conn.consume(waiting);
            } finally {
                waiting.release();
            }
        }
        flushAndReadOn();
    }

    private void flushAndReadOn() {
        conn.flushIfPending();
        State state = conn.state();
        if (state != State.FILE_WAIT && state != State.CLOSED && ctx().channel().isWritable()) {
            ctx().channel().config().setAutoRead(true);
        }
    }

    /** Sends the answers at the head of the queue that are ready, in request order. */
    private void answerDoneFileOps() {
        ChannelHandlerContext ctx = ctx();
        FileOp f;
        while ((f = fileOps.peek()) != null && f.done) {
            fileOps.poll();
            if (f.message != null) {
                dropFileBuf(f);
                conn.respondError(f.id, f.status, f.message);
                continue;
            }
            conn.writeOk(f.id);
            if (f.op == Opcode.READ) {
                // the bytes go back to the budget once the socket took them (or the connection dropped them)
                int charged = f.length;
                ctx.write(f.buf.writerIndex(f.length)).addListener(w -> serving.budget().release(charged));
                f.buf = null;
            } else {
                dropFileBuf(f); // the WRITE is in the file: only now may the initiator hear it is done
            }
            conn.responded();
        }
    }

    /** Keeps the peer's bytes that arrived while requests wait for file I/O. */
    void stashInput(ByteBuf in) {
        if (stash == null) {
            stash = ctx().alloc().buffer(in.readableBytes());
        }
        stash.writeBytes(in);
    }

    /** The connection is closed: frees every buffer not under file I/O (those go when their I/O reports back). */
    void shutDown() {
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
