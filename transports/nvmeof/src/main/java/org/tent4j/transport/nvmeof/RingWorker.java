package org.tent4j.transport.nvmeof;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.Slice;
import org.tent4j.spi.TimeSource;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * One io_uring (one path of the transport). Posting threads prepare and submit their slices themselves, one
 * {@code io_uring_enter} each under the ring's lock, so nothing is handed over and no thread is woken to submit. The
 * ring's own thread waits for completions, settles every ready one, and then submits in one {@code io_uring_enter}
 * everything prepared meanwhile: slices the runtime posted from those completions, and those that waited in the
 * {@link Inbox} while every operation slot was taken. A poll on an eventfd stays armed so {@link #close()} can wake it.
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
    private volatile boolean closing;
    private int inflight;
    private long loop;
    private final String name;
    /** The engine's clock: slice deadlines are in its time, which a test may drive. */
    private final TimeSource clock;

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

    RingWorker(int index, String engine, int entries, int inboxCapacity, int alignment, int bounceSize, int bounces,
               TimeSource clock) throws IOException {
        this.index = index;
        this.clock = clock;
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

    /**
     * Submits a slice from the posting thread (the caller holds a reference on {@code file}): one
     * {@code io_uring_enter} and no hand-off, so the ring's thread only reaps. When every operation slot is taken the
     * slice waits in the inbox, and the ring's thread submits it as completions free slots.
     */
    void post(Slice slice, OpenFile file) {
        if (closing) {
            failClosed(slice, file);
            return;
        }
        boolean queued;
        synchronized (this) {
            if (closing) {
                queued = false;
            } else if (inbox.isEmpty() && freeOpsTop > 0 && ring.sqSpace() > 1) {
                accept(slice, file);
                if (Thread.currentThread() != thread) {
                    submit();
                }
                // else: posted from a completion this thread is settling (the runtime refills the path there); the
                // end of its loop submits everything prepared meanwhile with one io_uring_enter
                return;
            } else {
                queued = inbox.offer(slice, file);
            }
        }
        if (!queued && closing) {
            failClosed(slice, file);
        } else if (!queued) {
            file.release();
            slice.fail(ErrorCode.TOO_MANY_REQUESTS, "nvmeof " + slice.opcode() + " of " + file + ": ring " + index
                    + " has too many queued slices");
        }
    }

    /** Under the lock: hands what was prepared to the kernel (the ring's thread retries what it could not take). */
    private void submit() {
        try {
            ring.enter(0);
        } catch (IOException e) {
            throw new IllegalStateException("nvmeof ring " + index + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void run() {
        try {
            synchronized (this) {
                arm();
                submit();
            }
            for (;;) {
                ring.awaitCompletion();
                loop++;
                ring.reap(this::completed);
                synchronized (this) {
                    if (closing) {
                        inbox.drain(this::failClosed, Integer.MAX_VALUE);
                        if (inflight == 0) {
                            break;
                        }
                    } else {
                        // keep one submission slot for re-arming the wake-up poll
                        inbox.drain(this, Math.min(freeOpsTop, ring.sqSpace() - 1));
                    }
                    if (ring.pending() > 0) {
                        submit();
                    }
                }
            }
        } catch (IOException | RuntimeException | Error e) {
            log.error("nvmeof ring {} stopped: {}", index, e.toString(), e);
            closing = true;
            synchronized (this) {
                inbox.drain(this::failClosed, Integer.MAX_VALUE);
                // The kernel may still write into these slices' memory until the ring closes below; failing them
                // now is the lesser harm than leaving callers waiting forever.
                for (Op op : ops) {
                    if (op.slice != null) {
                        Slice s = op.slice;
                        String m = message(op, "failed: ring " + index + " stopped: " + e);
                        op.file.release();
                        clear(op);
                        s.fail(ErrorCode.INTERNAL, m);
                    }
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

    /** Under the lock: prepare the submission for one slice. */
    @Override
    public void accept(Slice s, OpenFile f) {
        int id = freeOps[--freeOpsTop];
        Op op = ops[id];
        op.slice = s;
        op.file = f;
        op.read = s.opcode() == Opcode.READ;
        op.fileOffset = s.remoteAddress() - f.base;
        long mem = s.localBuffer().address() + s.localOffset();
        long len = s.length();
        boolean late = s.deadlineNanos() - clock.nanoTime() <= 0;
        if (late || (!op.read && !f.writable)) {
            // late: it waited in the inbox past its deadline (operations already in the kernel are left to finish)
            String m = message(op, late ? "failed: the deadline passed while it waited for a free slot of ring " + index
                    : "failed: the file could not be opened for writing");
            f.release();
            clear(op);
            release(id);
            s.fail(late ? ErrorCode.TIMEOUT : ErrorCode.PERMISSION_DENIED, m);
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
        assert ok : "callers check for a free submission slot";
        inflight++;
    }

    /** On the ring's thread: settle one completion; the slice is completed or failed outside the lock. */
    private void completed(long userData, int res) {
        if (userData == WAKE) {
            LinuxIo.drain(eventFd, drainBuf);
            synchronized (this) {
                arm();
            }
            return;
        }
        int id = (int) userData;
        Slice s;
        ErrorCode code = null;
        String message = null;
        synchronized (this) {
            Op op = ops[id];
            s = op.slice;
            inflight--;
            if (res < 0) {
                int errno = -res;
                // EIO may be transient (a path of an NVMe-oF target); access errors are not; the rest is unexpected
                code = errno == 5 ? ErrorCode.PEER_FAILED
                        : errno == 1 || errno == 13 || errno == 30 ? ErrorCode.PERMISSION_DENIED : ErrorCode.INTERNAL;
                message = message(op, "failed: " + LinuxIo.describe(-res));
            } else {
                long needed = op.kind == BOUNCE ? op.fileOffset - op.ioOffset + s.length() : op.ioLength;
                if (res < needed) {
                    long got = op.kind == BOUNCE ? Math.max(0, res - (op.fileOffset - op.ioOffset)) : res;
                    code = ErrorCode.OUT_OF_BOUNDS;
                    message = message(op, "moved only " + got + " bytes: the file ends before the registered length of "
                            + op.file.length + " bytes (truncated under the transfer?)");
                } else {
                    byte fileState = check(op.file);
                    if (fileState == FILE_REMOVED) {
                        code = ErrorCode.ADDRESS_NOT_REGISTERED;
                        message = message(op, "failed: the file was removed (no links left) while the transfer was in flight");
                    } else if (fileState == FILE_TRUNCATED) {
                        code = ErrorCode.OUT_OF_BOUNDS;
                        message = message(op, "failed: the file was truncated below its registered length of "
                                + op.file.length + " bytes");
                    } else if (op.kind == BOUNCE) {
                        MemorySegment.copy(bounce, (long) op.bounce * bounceSize + (op.fileOffset - op.ioOffset),
                                s.localBuffer().segment(), s.localOffset(), s.length());
                    }
                }
            }
            op.file.release();
            clear(op);
            release(id);
        }
        if (code == null) {
            s.complete();
        } else {
            s.fail(code, message);
        }
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

    private static String message(Op op, String what) {
        return "nvmeof " + op.slice.opcode() + " of file " + op.file + " [offset " + op.fileOffset + ", length "
                + op.slice.length() + "] " + what;
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
        synchronized (this) {
            closing = true;
            inbox.drain(this::failClosed, Integer.MAX_VALUE);
        }
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
