package org.tent4j.transport.rdma;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.Slice;
import org.tent4j.testkit.transport.TestLocalMemory;

/**
 * Stand-ins for the completion path's collaborators, to test this module's own slot and completion logic: a scripted
 * completion source (what {@code ibv_poll_cq} would return), a lane that records what it is told, and a slice that
 * counts how often it is finished.
 */
final class Fakes {
    static final MemorySegment LOCAL = Arena.global().allocate(1 << 16, 64);
    static final LocalBuffer LOCAL_BUFFER = new TestLocalMemory.Buffer(1, LOCAL, Location.CPU, Permission.READ_WRITE,
            Map.of());
    static final BufferDescriptor REMOTE = BufferDescriptor.builder().address(0x7f00_0000_0000L).length(1 << 20)
            .location(Location.CPU).permission(Permission.READ_WRITE).transports(List.of("rdma")).attributes(Map.of())
            .build();

    private Fakes() {
    }

    static long allocatedBytes() {
        return ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean())
                .getCurrentThreadAllocatedBytes();
    }

    /** Completions as a test scripts them; poll() moves them out like ibv_poll_cq, without allocating. */
    static final class ScriptedCompletions implements CompletionSource {
        private final long[] wrId = new long[1 << 16];
        private final int[] status = new int[1 << 16];
        private final int[] vendorErr = new int[1 << 16];
        private int head;
        private int tail;
        private long polls;
        volatile int failWith;

        synchronized void add(long id, int st, int vendor) {
            int i = tail++ & (wrId.length - 1);
            wrId[i] = id;
            status[i] = st;
            vendorErr[i] = vendor;
        }

        @Override
        public synchronized int poll(CompletionBatch batch) {
            polls++;
            notifyAll();
            if (failWith != 0) {
                return failWith;
            }
            int n = 0;
            while (head != tail && n < batch.capacity()) {
                int i = head++ & (wrId.length - 1);
                batch.wrId[n] = wrId[i];
                batch.status[n] = status[i];
                batch.vendorErr[n] = vendorErr[i];
                batch.qpNum[n] = 0x1a2;
                n++;
            }
            return n;
        }

        /**
         * Waits until every completion added so far was handed out and the (single) polling thread has polled again:
         * it dispatches a batch before it polls next, so by then it has finished with all of them.
         */
        synchronized void awaitDispatched(String what) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (head != tail) {
                waitUntil(deadline, what);
            }
            long drainedBy = polls;
            while (polls == drainedBy) {
                waitUntil(deadline, what);
            }
        }

        private void waitUntil(long deadline, String what) throws InterruptedException {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new AssertionError("not reached within 10 s: " + what);
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
    }

    /** Records what the completion path tells a lane. */
    static final class RecordingLane implements Lane {
        final AtomicInteger credits = new AtomicInteger();
        final AtomicInteger timeouts = new AtomicInteger();
        volatile String broken;

        @Override
        public void creditReturned() {
            credits.incrementAndGet();
        }

        @Override
        public void broken(String cause) {
            if (broken == null) {
                broken = cause;
            }
        }

        @Override
        public void timedOut(String cause) {
            timeouts.incrementAndGet();
            broken(cause);
        }

        @Override
        public String brokenCause() {
            return broken;
        }

        @Override
        public String describe() {
            return "fake0 qp 0x1a2 -> 'peer' fake1 qp 0x3c4";
        }
    }

    /** A slice that counts every finish, so exactly-once can be asserted (and a second finish is visible). */
    static final class CountingSlice implements Slice {
        final AtomicInteger completes = new AtomicInteger();
        final AtomicInteger fails = new AtomicInteger();
        /** Opens at the first completion or failure: what a test waits on instead of polling the counters. */
        final CountDownLatch finished = new CountDownLatch(1);
        volatile ErrorCode code;
        volatile String message;
        final long deadline;
        final Opcode opcode;

        CountingSlice() {
            this(Long.MAX_VALUE, Opcode.READ);
        }

        CountingSlice(long deadline, Opcode opcode) {
            this.deadline = deadline;
            this.opcode = opcode;
        }

        int finishes() {
            return completes.get() + fails.get();
        }

        @Override public Opcode opcode() { return opcode; }
        @Override public LocalBuffer localBuffer() { return LOCAL_BUFFER; }
        @Override public long localOffset() { return 4096; }
        @Override public BufferDescriptor remoteBuffer() { return REMOTE; }
        @Override public long remoteAddress() { return REMOTE.address() + 8192; }
        @Override public long length() { return 4096; }
        @Override public long deadlineNanos() { return deadline; }

        @Override
        public void complete() {
            completes.incrementAndGet();
            finished.countDown();
        }

        @Override
        public void fail(ErrorCode c, String m) {
            code = c;
            message = m;
            fails.incrementAndGet();
            finished.countDown();
        }
    }
}
