package org.tent4j.transport.nvmeof;

import java.io.IOException;
import java.nio.ByteBuffer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.Slice;

/**
 * One path of the fallback engine, used where io_uring is unavailable: a thread doing positional {@link
 * java.nio.channels.FileChannel} reads and writes (the page cache, no O_DIRECT) one slice at a time. Each slice checks
 * afterwards that the path still names the opened file and that the file still holds its registered length.
 */
final class ChannelWorker implements Runnable, Inbox.Sink {
    private static final Logger log = LoggerFactory.getLogger(ChannelWorker.class);

    final int index;
    private final Inbox inbox;
    private final Thread thread;
    private volatile boolean closing;

    ChannelWorker(int index, String engine, int inboxCapacity) {
        this.index = index;
        this.inbox = new Inbox(inboxCapacity);
        this.thread = Thread.ofPlatform().daemon().name("tent4j-nvmeof-channel-" + index + "-" + engine).unstarted(this);
    }

    void start() {
        thread.start();
    }

    void post(Slice slice, OpenFile file) {
        if (closing) {
            failClosed(slice, file);
            return;
        }
        if (!inbox.offer(slice, file)) {
            file.release();
            slice.fail(ErrorCode.TOO_MANY_REQUESTS, "nvmeof " + slice.opcode() + " of " + file + ": path " + index
                    + " has too many queued slices");
        }
    }

    @Override
    public void run() {
        try {
            while (!closing) {
                inbox.await(() -> closing);
                inbox.drain(this, 1);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            inbox.drain(this::failClosed, Integer.MAX_VALUE);
        }
    }

    private void failClosed(Slice s, OpenFile f) {
        f.release();
        s.fail(ErrorCode.ENGINE_CLOSED, "nvmeof " + s.opcode() + " of " + f + ": transport closed");
    }

    @Override
    public void accept(Slice s, OpenFile f) {
        long fileOffset = s.remoteAddress() - f.base;
        long len = s.length();
        String where = "nvmeof " + s.opcode() + " of file " + f + " [offset " + fileOffset + ", length " + len + "] ";
        ErrorCode code = null;
        String why = null;
        try {
            if (s.opcode() == Opcode.WRITE && !f.writable) {
                code = ErrorCode.PERMISSION_DENIED;
                why = "the file could not be opened for writing";
            } else {
                ByteBuffer bb = s.localBuffer().segment().asSlice(s.localOffset(), len).asByteBuffer();
                long pos = fileOffset;
                while (bb.hasRemaining()) {
                    int n = s.opcode() == Opcode.READ ? f.channel.read(bb, pos) : f.channel.write(bb, pos);
                    if (n < 0) {
                        code = ErrorCode.OUT_OF_BOUNDS;
                        why = "moved only " + (pos - fileOffset) + " bytes: the file ends before the registered length of "
                                + f.length + " bytes (truncated under the transfer?)";
                        break;
                    }
                    pos += n;
                }
                if (code == null) {
                    if (!f.stillLinked()) {
                        code = ErrorCode.ADDRESS_NOT_REGISTERED;
                        why = "the file was removed or replaced while the transfer was in flight";
                    } else if (f.channel.size() < f.length && java.nio.file.Files.isRegularFile(f.path)) {
                        code = ErrorCode.OUT_OF_BOUNDS;
                        why = "the file was truncated below its registered length of " + f.length + " bytes";
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            code = ErrorCode.PEER_FAILED;
            why = "failed: " + e;
        }
        f.release();
        if (code == null) {
            s.complete();
        } else {
            log.debug("{}{}", where, why);
            s.fail(code, where + why);
        }
    }

    void close() {
        closing = true;
        inbox.wakeAll();
        try {
            thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    Thread thread() {
        return thread;
    }
}
