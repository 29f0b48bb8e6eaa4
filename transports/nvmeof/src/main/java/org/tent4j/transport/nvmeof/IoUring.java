package org.tent4j.transport.nvmeof;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * One io_uring instance set up with the raw system calls and its rings mapped through FFM. Single-threaded: the thread
 * that owns it prepares submissions and reaps completions (the kernel is the other side of each ring, so the ring
 * indices are read with acquire and published with release semantics, as liburing does).
 *
 * <p>Layouts ({@code io_uring_params}, {@code io_sqring_offsets}, {@code io_cqring_offsets}, {@code io_uring_sqe},
 * {@code io_uring_cqe}) and constants are from {@code <linux/io_uring.h>}; {@code IoUringAbiTest} checks them against
 * the installed header.
 */
final class IoUring implements AutoCloseable {
    // io_uring_params
    static final long PARAMS_SIZE = 120;
    static final long P_SQ_ENTRIES = 0;
    static final long P_CQ_ENTRIES = 4;
    static final long P_FLAGS = 8;
    static final long P_FEATURES = 20;
    static final long P_SQ_OFF = 40;
    static final long P_CQ_OFF = 80;
    // io_sqring_offsets (relative to P_SQ_OFF)
    static final long SQO_HEAD = 0;
    static final long SQO_TAIL = 4;
    static final long SQO_RING_MASK = 8;
    static final long SQO_RING_ENTRIES = 12;
    static final long SQO_FLAGS = 16;
    static final long SQO_ARRAY = 24;
    // io_cqring_offsets (relative to P_CQ_OFF)
    static final long CQO_HEAD = 0;
    static final long CQO_TAIL = 4;
    static final long CQO_RING_MASK = 8;
    static final long CQO_RING_ENTRIES = 12;
    static final long CQO_OVERFLOW = 16;
    static final long CQO_CQES = 20;
    // io_uring_sqe
    static final long SQE_SIZE = 64;
    static final long SQE_OPCODE = 0;
    static final long SQE_FLAGS = 1;
    static final long SQE_IOPRIO = 2;
    static final long SQE_FD = 4;
    static final long SQE_OFF = 8;
    static final long SQE_ADDR = 16;
    static final long SQE_LEN = 24;
    static final long SQE_RW_FLAGS = 28;
    static final long SQE_USER_DATA = 32;
    // io_uring_cqe
    static final long CQE_SIZE = 16;
    static final long CQE_USER_DATA = 0;
    static final long CQE_RES = 8;
    static final long CQE_FLAGS = 12;

    static final byte IORING_OP_NOP = 0;
    static final byte IORING_OP_POLL_ADD = 6;
    static final byte IORING_OP_READ = 22;
    static final byte IORING_OP_WRITE = 23;
    static final int IORING_ENTER_GETEVENTS = 1;
    static final int IORING_FEAT_SINGLE_MMAP = 1;
    /** Came with IORING_OP_READ/WRITE (Linux 5.6); its absence means the kernel lacks them. */
    static final int IORING_FEAT_RW_CUR_POS = 1 << 3;
    static final long IORING_OFF_SQ_RING = 0L;
    static final long IORING_OFF_CQ_RING = 0x8000000L;
    static final long IORING_OFF_SQES = 0x10000000L;
    static final int POLLIN = 1;

    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    private final int fd;
    private final MemorySegment sqRing;
    private final MemorySegment cqRing;
    private final MemorySegment sqes;
    private final int sqEntries;
    private final int sqMask;
    private final int cqMask;
    private final long sqHead;
    private final long sqTail;
    private final long sqArray;
    private final long cqHead;
    private final long cqTail;
    private final long cqes;
    private final int features;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment callState;
    private final MemorySegment waitState;
    private int tail;
    private int pending;

    private IoUring(int fd, MemorySegment sqRing, MemorySegment cqRing, MemorySegment sqes, MemorySegment params) {
        this.fd = fd;
        this.sqRing = sqRing;
        this.cqRing = cqRing;
        this.sqes = sqes;
        this.sqEntries = params.get(JAVA_INT, P_SQ_ENTRIES);
        this.sqMask = sqRing.get(JAVA_INT, params.get(JAVA_INT, P_SQ_OFF + SQO_RING_MASK));
        this.cqMask = cqRing.get(JAVA_INT, params.get(JAVA_INT, P_CQ_OFF + CQO_RING_MASK));
        this.sqHead = Integer.toUnsignedLong(params.get(JAVA_INT, P_SQ_OFF + SQO_HEAD));
        this.sqTail = Integer.toUnsignedLong(params.get(JAVA_INT, P_SQ_OFF + SQO_TAIL));
        this.sqArray = Integer.toUnsignedLong(params.get(JAVA_INT, P_SQ_OFF + SQO_ARRAY));
        this.cqHead = Integer.toUnsignedLong(params.get(JAVA_INT, P_CQ_OFF + CQO_HEAD));
        this.cqTail = Integer.toUnsignedLong(params.get(JAVA_INT, P_CQ_OFF + CQO_TAIL));
        this.cqes = Integer.toUnsignedLong(params.get(JAVA_INT, P_CQ_OFF + CQO_CQES));
        this.features = params.get(JAVA_INT, P_FEATURES);
        this.tail = (int) INT.getAcquire(sqRing, sqTail);
        this.callState = LinuxIo.newCallState(arena);
        this.waitState = LinuxIo.newCallState(arena);
    }

    /**
     * Sets up a ring of {@code entries} submission slots (rounded up to a power of two by the kernel).
     *
     * @throws IOException naming the failing call and errno (EPERM when seccomp or {@code kernel.io_uring_disabled}
     *                     forbids io_uring, ENOSYS on kernels without it)
     */
    static IoUring open(int entries) throws IOException {
        if (!LinuxIo.isAvailable()) {
            throw new IOException("libc calls are unavailable: " + LinuxIo.unavailabilityCause());
        }
        int fd;
        MemorySegment params;
        try (Arena setup = Arena.ofConfined()) {
            params = setup.allocate(PARAMS_SIZE, 8);
            MemorySegment state = LinuxIo.newCallState(setup);
            long rc = LinuxIo.syscall(state, LinuxIo.SYS_IO_URING_SETUP, entries, params.address(), 0, 0, 0, 0);
            if (rc < 0) {
                int errno = LinuxIo.errno(state);
                throw new IOException("io_uring_setup(" + entries + ") failed: " + LinuxIo.describe(errno)
                        + (errno == 1 ? " (io_uring is forbidden here: seccomp profile or sysctl kernel.io_uring_disabled)"
                        : errno == 38 ? " (the kernel has no io_uring)" : ""));
            }
            fd = (int) rc;
            MemorySegment copy = Arena.ofAuto().allocate(PARAMS_SIZE, 8).copyFrom(params);
            params = copy;
        }
        MemorySegment sq = null;
        MemorySegment cq = null;
        MemorySegment sqes = null;
        try {
            int feats = params.get(JAVA_INT, P_FEATURES);
            if ((feats & IORING_FEAT_RW_CUR_POS) == 0) {
                throw new IOException("io_uring lacks IORING_OP_READ/WRITE (features 0x" + Integer.toHexString(feats)
                        + ", kernel older than 5.6)");
            }
            int sqEntries = params.get(JAVA_INT, P_SQ_ENTRIES);
            int cqEntries = params.get(JAVA_INT, P_CQ_ENTRIES);
            long sqSize = Integer.toUnsignedLong(params.get(JAVA_INT, P_SQ_OFF + SQO_ARRAY)) + 4L * sqEntries;
            long cqSize = Integer.toUnsignedLong(params.get(JAVA_INT, P_CQ_OFF + CQO_CQES)) + CQE_SIZE * cqEntries;
            int prot = LinuxIo.PROT_READ | LinuxIo.PROT_WRITE;
            int flags = LinuxIo.MAP_SHARED | LinuxIo.MAP_POPULATE;
            if ((feats & IORING_FEAT_SINGLE_MMAP) != 0) {
                sq = LinuxIo.mmap(Math.max(sqSize, cqSize), prot, flags, fd, IORING_OFF_SQ_RING);
                cq = sq;
            } else {
                sq = LinuxIo.mmap(sqSize, prot, flags, fd, IORING_OFF_SQ_RING);
                cq = LinuxIo.mmap(cqSize, prot, flags, fd, IORING_OFF_CQ_RING);
            }
            sqes = LinuxIo.mmap(SQE_SIZE * sqEntries, prot, flags, fd, IORING_OFF_SQES);
            return new IoUring(fd, sq, cq, sqes, params);
        } catch (IOException | RuntimeException e) {
            LinuxIo.munmap(sqes);
            if (cq != sq) {
                LinuxIo.munmap(cq);
            }
            LinuxIo.munmap(sq);
            LinuxIo.close(fd);
            throw e;
        }
    }

    int sqEntries() {
        return sqEntries;
    }

    int features() {
        return features;
    }

    /** Submission slots free now (the kernel consumes prepared entries at {@link #enter}). */
    int sqSpace() {
        int head = (int) INT.getAcquire(sqRing, sqHead);
        return sqEntries - (tail - head);
    }

    /**
     * Prepares one read, write or poll; {@code false} when the submission ring is full. Published to the kernel by
     * the next {@link #enter}.
     */
    boolean prepare(byte opcode, int fileFd, long address, int length, long offset, int rwFlags, long userData) {
        if (sqSpace() == 0) {
            return false;
        }
        int index = tail & sqMask;
        long at = index * SQE_SIZE;
        for (long i = 0; i < SQE_SIZE; i += 8) {
            sqes.set(JAVA_LONG, at + i, 0L);
        }
        sqes.set(JAVA_BYTE, at + SQE_OPCODE, opcode);
        sqes.set(JAVA_INT, at + SQE_FD, fileFd);
        sqes.set(JAVA_LONG, at + SQE_OFF, offset);
        sqes.set(JAVA_LONG, at + SQE_ADDR, address);
        sqes.set(JAVA_INT, at + SQE_LEN, length);
        sqes.set(JAVA_INT, at + SQE_RW_FLAGS, rwFlags);
        sqes.set(JAVA_LONG, at + SQE_USER_DATA, userData);
        sqRing.set(JAVA_INT, sqArray + 4L * index, index);
        tail++;
        INT.setRelease(sqRing, sqTail, tail);
        pending++;
        return true;
    }

    int pending() {
        return pending;
    }

    /**
     * Submits what was prepared and, with {@code minComplete > 0}, waits until that many completions are ready.
     *
     * @return entries the kernel consumed
     * @throws IOException with errno, except EINTR (returns 0) and EAGAIN/EBUSY (returns 0: reap completions first)
     */
    int enter(int minComplete) throws IOException {
        long rc = LinuxIo.syscall(callState, LinuxIo.SYS_IO_URING_ENTER, fd, pending, minComplete,
                minComplete > 0 ? IORING_ENTER_GETEVENTS : 0, 0, 0);
        if (rc < 0) {
            int errno = LinuxIo.errno(callState);
            if (errno == LinuxIo.EINTR || errno == LinuxIo.EAGAIN || errno == LinuxIo.EBUSY) {
                return 0;
            }
            throw new IOException("io_uring_enter failed: " + LinuxIo.describe(errno));
        }
        pending -= (int) rc;
        return (int) rc;
    }

    /**
     * Waits until at least one completion is ready, submitting nothing: the thread that reaps may wait while others
     * submit (the kernel serializes submissions; the waiter only reads the completion ring).
     */
    void awaitCompletion() throws IOException {
        long rc = LinuxIo.syscall(waitState, LinuxIo.SYS_IO_URING_ENTER, fd, 0, 1, IORING_ENTER_GETEVENTS, 0, 0);
        if (rc < 0) {
            int errno = LinuxIo.errno(waitState);
            if (errno != LinuxIo.EINTR && errno != LinuxIo.EAGAIN && errno != LinuxIo.EBUSY) {
                throw new IOException("io_uring_enter (wait) failed: " + LinuxIo.describe(errno));
            }
        }
    }

    /** Receives each ready completion ({@code user_data}, {@code res}); returns how many. */
    int reap(CompletionSink sink) {
        int head = (int) INT.getAcquire(cqRing, cqHead);
        int end = (int) INT.getAcquire(cqRing, cqTail);
        int n = 0;
        while (head != end) {
            long at = cqes + (long) (head & cqMask) * CQE_SIZE;
            long userData = cqRing.get(JAVA_LONG, at + CQE_USER_DATA);
            int res = cqRing.get(JAVA_INT, at + CQE_RES);
            head++;
            n++;
            // Release the slot before handling it: the handler may prepare new work that completes into it.
            INT.setRelease(cqRing, cqHead, head);
            sink.completed(userData, res);
        }
        return n;
    }

    @FunctionalInterface
    interface CompletionSink {
        void completed(long userData, int res);
    }

    @Override
    public void close() {
        LinuxIo.munmap(sqes);
        if (cqRing != sqRing) {
            LinuxIo.munmap(cqRing);
        }
        LinuxIo.munmap(sqRing);
        LinuxIo.close(fd);
        arena.close();
    }

    /** Whether io_uring with READ/WRITE works here; the exception says precisely why not. */
    static void probe() throws IOException {
        try (IoUring ring = open(4)) {
            assert ring.sqEntries() >= 4;
        }
    }

}
