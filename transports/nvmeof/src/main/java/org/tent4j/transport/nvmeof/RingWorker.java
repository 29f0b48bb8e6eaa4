package org.tent4j.transport.nvmeof;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.Slice;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * One io_uring and the thread that owns it (one path of the transport). Slices arrive through an {@link Inbox}; the
 * thread turns as many as fit into submissions, submits them with one {@code io_uring_enter}, and completes slices as
 * their completions arrive. When it has nothing to submit it sleeps in {@code io_uring_enter} waiting for a
 * completion; a poll on an eventfd is always armed, so a poster wakes it with one eventfd write (only when it sleeps).
 *
 * <p>How each slice moves: aligned (memory address, file offset and length all multiples of the alignment) goes
 * straight between the caller's memory and the {@code O_DIRECT} descriptor. An unaligned READ whose aligned window
 * fits a bounce buffer is read {@code O_DIRECT} into the bounce buffer and copied out. Everything else (unaligned
 * WRITEs, larger unaligned READs, files without O_DIRECT) uses the buffered descriptor: the page cache does the
 * read-modify-write of partial blocks under the kernel's own locking, which a bounce-buffer read-modify-write
 * could not do safely with concurrent writers to one block.
 *
 * <p>After a completion, the file is checked once per loop iteration with {@code fstat}: a file whose last link was
 * removed, or that is now shorter than its registered length, fails the slice with that cause instead of reporting
 * bytes that went nowhere. Files are never mapped, so truncation cannot raise SIGBUS.
 */
final class RingWorker implements Runnable, Inbox.Sink {
    private static final Logger log = LoggerFactory.getLogger(RingWorker.class);
    private static final long WAKE = -1L;
    private static final int RUNNING = 0;
    private static final int WAITING = 1;
    private static final byte DIRECT = 0;
    private static final byte BOUNCE = 1;
    private static final byte BUFFERED = 2;
    private static final byte FILE_OK = 0;
    private static final byte FILE_REMOVED = 1;
    private static final byte FILE_TRUNCATED = 2;
    private static final byte FILE_UNKNOWN = 3;

    final int index;
    private final IoUring ring;
    private final Inbox inbox;
    private final Thread thread;
    private final int alignment;
    private final Op[] ops;
    private final int[] freeOps;
    private int freeOpsTop;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment bounce;
    private final int bounceSize;
    private final int[] freeBounces;
    private int freeBouncesTop;
    private final int eventFd;
    private final MemorySegment one;
    private final MemorySegment drainBuf;
    private final MemorySegment statBuf;
    private final MemorySegment statState;
    private final AtomicInteger state = new AtomicInteger(RUNNING);
    private volatile boolean closing;
    private int inflight;
    private long loop;
    private final String name;

    private static final class Op {
        Slice slice;
        OpenFile file;
        boolean read;
        byte kind;
        int bounce = -1;
        long fileOffset;
        long ioOffset;
        int ioLength;
    }

    RingWorker(int index, String engine, int entries, int inboxCapacity, int alignment, int bounceSize, int bounces)
            throws IOException {
        this.index = index;
        this.alignment = alignment;
        this.ring = IoUring.open(entries);
        try {
            this.eventFd = LinuxIo.eventfd();
        } catch (IOException e) {
            ring.close();
            throw e;
        }
        int n = ring.sqEntries();
        this.ops = new Op[n];
        this.freeOps = new int[n];
        for (int i = 0; i < n; i++) {
            ops[i] = new Op();
            freeOps[freeOpsTop++] = i;
        }
        this.inbox = new Inbox(inboxCapacity);
        this.bounceSize = bounceSize;
        this.bounce = bounces == 0 ? MemorySegment.NULL : arena.allocate((long) bounceSize * bounces, alignment);
        this.freeBounces = new int[bounces];
        for (int i = 0; i < bounces; i++) {
            freeBounces[freeBouncesTop++] = i;
        }
        this.one = arena.allocate(8, 8);
        one.set(JAVA_LONG, 0, 1L);
        this.drainBuf = arena.allocate(8, 8);
        this.statBuf = arena.allocate(LinuxIo.STAT_SIZE, 8);
        this.statState = LinuxIo.newCallState(arena);
        this.name = "tent4j-nvmeof-ring-" + index + "-" + engine;
        this.thread = Thread.ofPlatform().daemon().name(name).unstarted(this);
    }

    void start() {
        thread.start();
    }

    /** Queues a slice (the caller holds a reference on {@code file}); fails it when the inbox is full or closed. */
    void post(Slice slice, OpenFile file) {
        if (closing) {
            file.release();
            slice.fail(ErrorCode.ENGINE_CLOSED, "nvmeof " + slice.opcode() + " of " + file + ": transport closed");
            return;
        }
        if (!inbox.offer(slice, file)) {
            file.release();
            slice.fail(ErrorCode.TOO_MANY_REQUESTS, "nvmeof " + slice.opcode() + " of " + file + ": ring " + index
                    + " has too many queued slices");
            return;
        }
        if (state.get() == WAITING && state.compareAndSet(WAITING, RUNNING)) {
            LinuxIo.signal(eventFd, one);
        }
    }

    @Override
    public void run() {
        try {
            arm();
            for (;;) {
                boolean stop = closing;
                if (stop) {
                    inbox.drain(this::failClosed, Integer.MAX_VALUE);
                } else {
                    // keep one submission slot for re-arming the wake-up poll
                    inbox.drain(this, Math.min(freeOpsTop, ring.sqSpace() - 1));
                }
                loop++;
                ring.reap(this::completed);
                if (stop && inflight == 0) {
                    break;
                }
                boolean more = !inbox.isEmpty() && freeOpsTop > 0 && ring.sqSpace() > 1;
                if (more) {
                    ring.enter(0);
                    continue;
                }
                state.set(WAITING);
                if ((!inbox.isEmpty() && freeOpsTop > 0) || closing != stop) {
                    state.set(RUNNING);
                    if (ring.pending() > 0) {
                        ring.enter(0);
                    }
                    continue;
                }
                ring.enter(1);
                state.set(RUNNING);
            }
        } catch (IOException | RuntimeException | Error e) {
            log.error("nvmeof ring {} stopped: {}", index, e.toString(), e);
            closing = true;
            inbox.drain(this::failClosed, Integer.MAX_VALUE);
            // In-flight operations cannot be completed without the ring; fail their slices (the kernel still owns
            // the memory until the ring closes below, which waits for them).
            for (Op op : ops) {
                if (op.slice != null) {
                    fail(op, ErrorCode.INTERNAL, "ring " + index + " failed: " + e);
                }
            }
        } finally {
            ring.close();
            LinuxIo.close(eventFd);
        }
    }

    private void arm() {
        if (!ring.prepare(IoUring.IORING_OP_POLL_ADD, eventFd, 0, 0, 0, IoUring.POLLIN, WAKE)) {
            throw new IllegalStateException("no submission slot to arm the wake-up poll");
        }
    }

    private void failClosed(Slice s, OpenFile f) {
        f.release();
        s.fail(ErrorCode.ENGINE_CLOSED, "nvmeof " + s.opcode() + " of " + f + ": transport closed");
    }

    /** From the inbox: prepare the submission for one slice. */
    @Override
    public void accept(Slice s, OpenFile f) {
        Op op = ops[freeOps[--freeOpsTop]];
        int id = freeOps[freeOpsTop];
        op.slice = s;
        op.file = f;
        op.read = s.opcode() == Opcode.READ;
        op.fileOffset = s.remoteAddress() - f.base;
        long mem = s.localBuffer().address() + s.localOffset();
        long len = s.length();
        if (!op.read && !f.writable) {
            fail(op, ErrorCode.PERMISSION_DENIED, "the file could not be opened for writing");
            release(id);
            return;
        }
        long mask = alignment - 1;
        int fd;
        long address;
        if (f.directFd >= 0 && ((mem | op.fileOffset | len) & mask) == 0) {
            op.kind = DIRECT;
            fd = f.directFd;
            address = mem;
            op.ioOffset = op.fileOffset;
            op.ioLength = (int) len;
        } else {
            long start = op.fileOffset & ~mask;
            long window = ((op.fileOffset + len + mask) & ~mask) - start;
            if (op.read && f.directFd >= 0 && window <= bounceSize && freeBouncesTop > 0) {
                op.kind = BOUNCE;
                op.bounce = freeBounces[--freeBouncesTop];
                fd = f.directFd;
                address = bounce.address() + (long) op.bounce * bounceSize;
                op.ioOffset = start;
                op.ioLength = (int) window;
            } else {
                op.kind = BUFFERED;
                fd = f.bufferedFd;
                address = mem;
                op.ioOffset = op.fileOffset;
                op.ioLength = (int) len;
            }
        }
        boolean ok = ring.prepare(op.read ? IoUring.IORING_OP_READ : IoUring.IORING_OP_WRITE, fd, address, op.ioLength,
                op.ioOffset, 0, id);
        assert ok : "drain is bounded by the ring's free slots";
        inflight++;
    }

    private void completed(long userData, int res) {
        if (userData == WAKE) {
            LinuxIo.drain(eventFd, drainBuf);
            arm();
            return;
        }
        int id = (int) userData;
        Op op = ops[id];
        inflight--;
        Slice s = op.slice;
        if (res < 0) {
            fail(op, -res == 5 ? ErrorCode.PEER_FAILED : ErrorCode.INTERNAL, "failed: " + LinuxIo.describe(-res));
        } else {
            long needed = op.kind == BOUNCE ? op.fileOffset - op.ioOffset + s.length() : op.ioLength;
            if (res < needed) {
                long got = op.kind == BOUNCE ? Math.max(0, res - (op.fileOffset - op.ioOffset)) : res;
                fail(op, ErrorCode.OUT_OF_BOUNDS, "moved only " + got + " bytes: the file ends at offset " + (op.ioOffset + res)
                        + " (truncated under the transfer?)");
            } else {
                byte fileState = check(op.file);
                if (fileState == FILE_REMOVED) {
                    fail(op, ErrorCode.ADDRESS_NOT_REGISTERED, "the file was removed (no links left) while the transfer was in flight");
                } else if (fileState == FILE_TRUNCATED) {
                    fail(op, ErrorCode.OUT_OF_BOUNDS, "the file was truncated below its registered length of " + op.file.length + " bytes");
                } else {
                    if (op.kind == BOUNCE) {
                        MemorySegment.copy(bounce, (long) op.bounce * bounceSize + (op.fileOffset - op.ioOffset),
                                s.localBuffer().segment(), s.localOffset(), s.length());
                    }
                    op.file.release();
                    clear(op);
                    s.complete();
                }
            }
        }
        release(id);
    }

    /** Once per loop and file: is it still linked and long enough? */
    private byte check(OpenFile f) {
        if (f.checkedLoop[index] == loop) {
            return f.checkedState[index];
        }
        byte st;
        if (LinuxIo.fstat(f.bufferedFd, statBuf, statState) != 0) {
            st = FILE_UNKNOWN;
        } else if (LinuxIo.nlink(statBuf) == 0) {
            st = FILE_REMOVED;
        } else if (LinuxIo.size(statBuf) < f.length && isRegular()) {
            st = FILE_TRUNCATED;
        } else {
            st = FILE_OK;
        }
        f.checkedLoop[index] = loop;
        f.checkedState[index] = st;
        return st;
    }

    private boolean isRegular() {
        // block devices report st_size 0, so only regular files are checked for truncation
        int mode = statBuf.get(java.lang.foreign.ValueLayout.JAVA_INT, LinuxIo.STAT_MODE);
        return (mode & 0170000) == 0100000;
    }

    private void fail(Op op, ErrorCode code, String what) {
        Slice s = op.slice;
        OpenFile f = op.file;
        String message = "nvmeof " + s.opcode() + " of file " + f + " [offset " + op.fileOffset + ", length " + s.length() + "] " + what;
        f.release();
        clear(op);
        s.fail(code, message);
    }

    private void clear(Op op) {
        op.slice = null;
        op.file = null;
    }

    private void release(int id) {
        Op op = ops[id];
        if (op.bounce >= 0) {
            freeBounces[freeBouncesTop++] = op.bounce;
            op.bounce = -1;
        }
        freeOps[freeOpsTop++] = id;
    }

    /** Fails what is queued, waits for in-flight operations to complete, and stops the thread. */
    void close() {
        closing = true;
        if (thread.isAlive()) {
            LinuxIo.signal(eventFd, one);
        }
        try {
            thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        arena.close();
    }

    Thread thread() {
        return thread;
    }

    String name() {
        return name;
    }
}
