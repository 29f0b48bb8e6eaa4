package org.tent4j.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.Test;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.TimeSource;

/**
 * The completion path against a scripted completion source: what each work-completion status does to the slice, the
 * lane and the slot, exactly-once under duplicates, timeouts and races, and the polling thread's wake-up.
 */
class CompletionPollerTest {
    private final Fakes.ScriptedCompletions cq = new Fakes.ScriptedCompletions();
    private final SlotTable slots = new SlotTable(64);
    private final Fakes.RecordingLane lane = new Fakes.RecordingLane();
    private final CompletionPoller poller = new CompletionPoller("fake0", cq, slots, 16, null, TimeSource.SYSTEM);

    @Test
    void successCompletesTheSliceAndFreesSlotAndCredit() {
        Fakes.CountingSlice s = new Fakes.CountingSlice();
        long id = slots.acquire(s, lane, Long.MAX_VALUE);
        cq.add(id, Verbs.IBV_WC_SUCCESS, 0);
        assertEquals(1, poller.pollOnce());
        assertEquals(1, s.completes.get());
        assertEquals(0, s.fails.get());
        assertEquals(1, lane.credits.get());
        assertEquals(0, slots.occupied());
        assertNull(lane.brokenCause());
    }

    @Test
    void remoteAccessErrorIsPermissionDeniedAndBreaksTheLane() {
        Fakes.CountingSlice s = new Fakes.CountingSlice(Long.MAX_VALUE, Opcode.WRITE);
        cq.add(slots.acquire(s, lane, Long.MAX_VALUE), Verbs.IBV_WC_REM_ACCESS_ERR, 0x88);
        poller.pollOnce();
        assertEquals(ErrorCode.PERMISSION_DENIED, s.code);
        long local = Fakes.LOCAL.address() + 4096;
        assertEquals("rdma WRITE of 4096 bytes from local 0x" + Long.toHexString(local) + " to remote 0x7f0000002000"
                + " (fake0 qp 0x1a2 -> 'peer' fake1 qp 0x3c4) failed: IBV_WC_REM_ACCESS_ERR (status 10, vendor_err"
                + " 0x88)", s.message);
        assertEquals("IBV_WC_REM_ACCESS_ERR (status 10, vendor_err 0x88)", lane.brokenCause());
        assertEquals(1, lane.credits.get());
    }

    @Test
    void retryExceededIsPeerFailedAndLaterFlushesNameTheFirstError() {
        Fakes.CountingSlice first = new Fakes.CountingSlice();
        Fakes.CountingSlice second = new Fakes.CountingSlice();
        Fakes.CountingSlice third = new Fakes.CountingSlice();
        cq.add(slots.acquire(first, lane, Long.MAX_VALUE), Verbs.IBV_WC_RETRY_EXC_ERR, 0x81);
        cq.add(slots.acquire(second, lane, Long.MAX_VALUE), Verbs.IBV_WC_WR_FLUSH_ERR, 0xf9);
        cq.add(slots.acquire(third, lane, Long.MAX_VALUE), Verbs.IBV_WC_WR_FLUSH_ERR, 0xf9);
        assertEquals(3, poller.pollOnce());
        assertEquals(ErrorCode.PEER_FAILED, first.code);
        assertTrue(first.message.endsWith("failed: IBV_WC_RETRY_EXC_ERR (status 12, vendor_err 0x81)"),
                first.message);
        assertEquals(ErrorCode.PEER_FAILED, second.code);
        assertTrue(second.message.endsWith("failed: flushed, queue pair broke earlier: IBV_WC_RETRY_EXC_ERR"
                + " (status 12, vendor_err 0x81)"), second.message);
        assertEquals(1, third.fails.get());
        assertEquals(3, lane.credits.get());
        assertEquals(0, slots.occupied());
        assertTrue(first.code.retryable(), "another path may succeed");
    }

    @Test
    void statusToErrorCode() {
        assertEquals(ErrorCode.PERMISSION_DENIED, CompletionPoller.errorCode(Verbs.IBV_WC_REM_ACCESS_ERR));
        assertEquals(ErrorCode.PERMISSION_DENIED, CompletionPoller.errorCode(Verbs.IBV_WC_LOC_PROT_ERR));
        assertEquals(ErrorCode.PEER_FAILED, CompletionPoller.errorCode(Verbs.IBV_WC_RETRY_EXC_ERR));
        assertEquals(ErrorCode.PEER_FAILED, CompletionPoller.errorCode(Verbs.IBV_WC_RNR_RETRY_EXC_ERR));
        assertEquals(ErrorCode.PEER_FAILED, CompletionPoller.errorCode(Verbs.IBV_WC_REM_OP_ERR));
        assertEquals(ErrorCode.PEER_FAILED, CompletionPoller.errorCode(Verbs.IBV_WC_WR_FLUSH_ERR));
        assertEquals(ErrorCode.PEER_FAILED, CompletionPoller.errorCode(Verbs.IBV_WC_FATAL_ERR));
        assertEquals(ErrorCode.INTERNAL, CompletionPoller.errorCode(Verbs.IBV_WC_LOC_LEN_ERR));
        assertEquals(ErrorCode.INTERNAL, CompletionPoller.errorCode(Verbs.IBV_WC_REM_INV_REQ_ERR));
        assertThrows(IllegalArgumentException.class, () -> CompletionPoller.errorCode(Verbs.IBV_WC_SUCCESS));
        assertEquals("IBV_WC_STATUS_99", VerbsValues.wcStatusName(99));
    }

    @Test
    void duplicateAndUnknownCompletionsAreIgnored() {
        Fakes.CountingSlice s = new Fakes.CountingSlice();
        long id = slots.acquire(s, lane, Long.MAX_VALUE);
        cq.add(id, Verbs.IBV_WC_SUCCESS, 0);
        cq.add(id, Verbs.IBV_WC_SUCCESS, 0);
        cq.add(id, Verbs.IBV_WC_REM_ACCESS_ERR, 0);
        cq.add(0x0000_0005_0000_0003L, Verbs.IBV_WC_SUCCESS, 0);
        poller.pollOnce();
        assertEquals(1, s.finishes());
        assertEquals(1, s.completes.get());
        assertEquals(1, lane.credits.get(), "one credit per posted request");
        assertNull(lane.brokenCause(), "a stale error does not break the lane");
    }

    @Test
    void overdueSliceTimesOutOnceAndItsLateCompletionOnlyFreesTheSlot() {
        long now = System.nanoTime();
        Fakes.CountingSlice s = new Fakes.CountingSlice(now - 1, Opcode.READ);
        long id = slots.acquire(s, lane, s.deadlineNanos());
        poller.sweep(now);
        poller.sweep(now);
        assertEquals(1, s.fails.get());
        assertEquals(ErrorCode.TIMEOUT, s.code);
        assertTrue(s.message.endsWith("timed out: no completion before the deadline"), s.message);
        assertEquals(1, lane.timeouts.get(), "the stuck queue pair is flushed once");
        assertEquals(1, slots.occupied(), "slot held until the request leaves the hardware");
        cq.add(id, Verbs.IBV_WC_WR_FLUSH_ERR, 0);
        poller.pollOnce();
        assertEquals(1, s.finishes());
        assertEquals(0, slots.occupied());
        assertEquals(1, lane.credits.get());
    }

    @Test
    void failedQueueIsReportedAndNamedInTimeouts() {
        long now = System.nanoTime();
        Fakes.CountingSlice s = new Fakes.CountingSlice(now - 1, Opcode.READ);
        slots.acquire(s, lane, s.deadlineNanos());
        cq.failWith = -5;
        assertEquals(-5, poller.pollOnce());
        assertEquals("ibv_poll_cq on fake0 failed with -5", poller.queueFailure());
        poller.sweep(now);
        assertTrue(s.message.endsWith("(ibv_poll_cq on fake0 failed with -5)"), s.message);
    }

    @Test
    void completionRacingTimeoutAndCloseFinishesEachSliceOnce() throws Exception {
        for (int round = 0; round < 100; round++) {
            SlotTable t = new SlotTable(128);
            Fakes.ScriptedCompletions q = new Fakes.ScriptedCompletions();
            CompletionPoller p = new CompletionPoller("fake0", q, t, 32, null, TimeSource.SYSTEM);
            List<Fakes.CountingSlice> slices = new ArrayList<>();
            long now = System.nanoTime();
            for (int i = 0; i < 128; i++) {
                Fakes.CountingSlice s = new Fakes.CountingSlice(i % 2 == 0 ? now - 1 : Long.MAX_VALUE, Opcode.READ);
                slices.add(s);
                q.add(t.acquire(s, lane, s.deadlineNanos()), Verbs.IBV_WC_SUCCESS, 0);
            }
            Thread closer = Thread.ofPlatform().start(() -> t.detachAll(lane, (s, l) -> s.fail(ErrorCode.PEER_FAILED,
                    "closed")));
            Thread sweeper = Thread.ofPlatform().start(() -> p.sweep(now));
            while (p.pollOnce() > 0) {
                // drain
            }
            closer.join();
            sweeper.join();
            for (Fakes.CountingSlice s : slices) {
                assertEquals(1, s.finishes(), "round " + round);
            }
            assertEquals(0, t.occupied());
        }
    }

    @Test
    void pollingThreadWakesFromItsIdleParkForWorkAndStops() throws Exception {
        CompletionPoller threaded = new CompletionPoller("fake0", cq, slots, 16, null, TimeSource.SYSTEM);
        // with the production park (one sweep interval) a lost wake-up would only delay the completion; this long, it
        // leaves the completion undelivered and the test fails
        threaded.idleParkNanos = TimeUnit.HOURS.toNanos(1);
        Thread t = threaded.start();
        try {
            for (int round = 0; round < 20; round++) {
                awaitIdlePark(t, threaded);
                Fakes.CountingSlice s = new Fakes.CountingSlice();
                long id = slots.acquire(s, lane, Long.MAX_VALUE);
                cq.add(id, Verbs.IBV_WC_SUCCESS, 0);
                threaded.wake();
                assertTrue(s.finished.await(10, TimeUnit.SECONDS),
                        "round " + round + ": the parked poller was not woken");
                assertEquals(1, s.completes.get(), "round " + round);
            }
        } finally {
            threaded.stop();
        }
        assertTrue(!t.isAlive(), "poller thread stopped");
        assertEquals("tent4j-rdma-poller-fake0", t.getName());
        assertTrue(t.isDaemon());
    }

    /**
     * Waits until the poller thread sits in its park with nothing in flight. Parking signals nothing a test could wait
     * on, so this watches the thread itself: timed-waiting with the poller as its park blocker means it is inside
     * {@code LockSupport.parkNanos(this, ...)}, and with no slot occupied that is the idle park. Bounded, and it ends
     * as soon as the park begins; it spins rather than sleeps because the poller gets there within microseconds.
     */
    private static void awaitIdlePark(Thread t, CompletionPoller p) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (t.getState() != Thread.State.TIMED_WAITING || LockSupport.getBlocker(t) != p) {
            assertTrue(System.nanoTime() < deadline, "the poller never parked; it is " + t.getState());
            Thread.onSpinWait();
        }
    }

    @Test
    void successPathIsAllocationFree() {
        Fakes.CountingSlice s = new Fakes.CountingSlice();
        for (int i = 0; i < 20_000; i++) {
            round(s);
        }
        int rounds = 50_000;
        long before = Fakes.allocatedBytes();
        for (int i = 0; i < rounds; i++) {
            round(s);
        }
        long allocated = Fakes.allocatedBytes() - before;
        assertTrue(allocated < rounds, allocated + " bytes allocated by " + rounds + " acquire/complete rounds");
        assertEquals(70_000, s.completes.get());
    }

    private void round(Fakes.CountingSlice s) {
        cq.add(slots.acquire(s, lane, Long.MAX_VALUE), Verbs.IBV_WC_SUCCESS, 0);
        poller.pollOnce();
    }
}
