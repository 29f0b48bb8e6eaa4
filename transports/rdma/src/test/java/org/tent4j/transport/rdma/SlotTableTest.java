package org.tent4j.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.tent4j.spi.Slice;

class SlotTableTest {
    private final Fakes.RecordingLane lane = new Fakes.RecordingLane();

    @Test
    void acquiresEverySlotOnceThenReportsFull() {
        SlotTable t = new SlotTable(8);
        Set<Integer> indexes = new HashSet<>();
        for (int i = 0; i < 8; i++) {
            long id = t.acquire(new Fakes.CountingSlice(), lane, Long.MAX_VALUE);
            assertTrue(id >= 0);
            assertTrue(indexes.add(SlotTable.index(id)), "slot handed out twice");
        }
        assertEquals(-1, t.acquire(new Fakes.CountingSlice(), lane, Long.MAX_VALUE));
        assertEquals(8, t.occupied());
        assertThrows(IllegalArgumentException.class, () -> new SlotTable(0));
    }

    @Test
    void takeHandsTheSliceOutExactlyOnce() {
        SlotTable t = new SlotTable(4);
        Fakes.CountingSlice s = new Fakes.CountingSlice();
        long id = t.acquire(s, lane, Long.MAX_VALUE);
        assertSame(lane, t.lane(id));
        assertSame(s, t.take(id));
        assertNull(t.take(id), "second take");
        assertSame(lane, t.lane(id), "still occupied until freed");
        assertEquals(1, t.occupied());
        assertTrue(t.free(id));
        assertFalse(t.free(id), "second free");
        assertNull(t.lane(id));
        assertEquals(0, t.occupied());
    }

    @Test
    void staleWrIdNeverReachesTheSlotsNextOccupant() {
        SlotTable t = new SlotTable(1);
        Fakes.CountingSlice first = new Fakes.CountingSlice();
        long old = t.acquire(first, lane, Long.MAX_VALUE);
        t.take(old);
        t.free(old);
        Fakes.CountingSlice second = new Fakes.CountingSlice();
        long now = t.acquire(second, lane, Long.MAX_VALUE);
        assertEquals(SlotTable.index(old), SlotTable.index(now), "same slot reused");
        assertNotEquals(old, now, "with a new generation");
        assertNull(t.lane(old));
        assertNull(t.take(old));
        assertFalse(t.free(old));
        assertSame(second, t.take(now));
        assertNull(t.take(-5L), "garbage wr_id");
        assertNull(t.take(0x0000_0001_00FF_FFFFL), "index out of range");
    }

    @Test
    void expireDetachesOnlyOverdueSlicesAndKeepsTheirSlots() {
        SlotTable t = new SlotTable(4);
        long now = 1_000_000_000L;
        Fakes.CountingSlice overdue = new Fakes.CountingSlice(now - 1, org.tent4j.api.Opcode.READ);
        Fakes.CountingSlice fresh = new Fakes.CountingSlice(now + 1_000_000, org.tent4j.api.Opcode.WRITE);
        long a = t.acquire(overdue, lane, overdue.deadlineNanos());
        long b = t.acquire(fresh, lane, fresh.deadlineNanos());
        List<Slice> expired = new ArrayList<>();
        t.expire(now, (s, l) -> expired.add(s));
        assertEquals(List.of(overdue), expired);
        t.expire(now, (s, l) -> expired.add(s));
        assertEquals(1, expired.size(), "expired once");
        assertEquals(2, t.occupied(), "the overdue request is still on the hardware");
        assertNull(t.take(a));
        assertSame(fresh, t.take(b));
    }

    @Test
    void detachAllAndReclaimConcernOnlyTheirLane() {
        SlotTable t = new SlotTable(8);
        Fakes.RecordingLane other = new Fakes.RecordingLane();
        t.acquire(new Fakes.CountingSlice(), lane, Long.MAX_VALUE);
        t.acquire(new Fakes.CountingSlice(), lane, Long.MAX_VALUE);
        long keep = t.acquire(new Fakes.CountingSlice(), other, Long.MAX_VALUE);
        AtomicInteger detached = new AtomicInteger();
        t.detachAll(lane, (s, l) -> {
            assertSame(lane, l);
            detached.incrementAndGet();
        });
        assertEquals(2, detached.get());
        assertEquals(2, t.reclaim(lane));
        assertEquals(1, t.occupied());
        assertSame(other, t.lane(keep));
    }

    @Test
    void concurrentTakersGetEachSliceExactlyOnce() throws Exception {
        SlotTable t = new SlotTable(256);
        int rounds = 200;
        for (int r = 0; r < rounds; r++) {
            long[] ids = new long[256];
            Fakes.CountingSlice[] slices = new Fakes.CountingSlice[256];
            for (int i = 0; i < 256; i++) {
                slices[i] = new Fakes.CountingSlice();
                ids[i] = t.acquire(slices[i], lane, Long.MAX_VALUE);
            }
            CyclicBarrier start = new CyclicBarrier(2);
            AtomicInteger taken = new AtomicInteger();
            Runnable taker = () -> {
                try {
                    start.await();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                for (long id : ids) {
                    Slice s = t.take(id);
                    if (s != null) {
                        s.complete();
                        taken.incrementAndGet();
                    }
                }
            };
            Thread other = Thread.ofPlatform().start(taker);
            taker.run();
            other.join();
            assertEquals(256, taken.get());
            for (int i = 0; i < 256; i++) {
                assertEquals(1, slices[i].completes.get(), "slice " + i);
                assertTrue(t.free(ids[i]));
            }
        }
        assertEquals(0, t.occupied());
    }

    @Test
    void concurrentAcquireAndFreeNeverShareASlot() throws Exception {
        SlotTable t = new SlotTable(64);
        int threads = 4;
        int perThread = 20_000;
        AtomicInteger clashes = new AtomicInteger();
        boolean[] inUse = new boolean[64];
        CountDownLatch done = new CountDownLatch(threads);
        for (int k = 0; k < threads; k++) {
            Thread.ofPlatform().start(() -> {
                Fakes.CountingSlice s = new Fakes.CountingSlice();
                for (int i = 0; i < perThread; i++) {
                    long id = t.acquire(s, lane, Long.MAX_VALUE);
                    if (id < 0) {
                        continue;
                    }
                    int idx = SlotTable.index(id);
                    synchronized (inUse) {
                        if (inUse[idx]) {
                            clashes.incrementAndGet();
                        }
                        inUse[idx] = true;
                    }
                    t.take(id);
                    synchronized (inUse) {
                        inUse[idx] = false;
                    }
                    t.free(id);
                }
                done.countDown();
            });
        }
        done.await();
        assertEquals(0, clashes.get());
        assertEquals(0, t.occupied());
    }

    @Test
    void steadyStateIsAllocationFree() {
        SlotTable t = new SlotTable(64);
        Fakes.CountingSlice s = new Fakes.CountingSlice();
        for (int i = 0; i < 50_000; i++) {
            cycle(t, s);
        }
        int cycles = 100_000;
        long before = Fakes.allocatedBytes();
        for (int i = 0; i < cycles; i++) {
            cycle(t, s);
        }
        long allocated = Fakes.allocatedBytes() - before;
        // one object per cycle would be >= 16 bytes a cycle; what remains is JIT and MXBean noise (under 1 KiB)
        assertTrue(allocated < cycles, allocated + " bytes allocated by " + cycles + " acquire/take/free cycles");
    }

    private void cycle(SlotTable t, Fakes.CountingSlice s) {
        long id = t.acquire(s, lane, Long.MAX_VALUE);
        t.lane(id);
        t.take(id).complete();
        t.free(id);
    }
}
