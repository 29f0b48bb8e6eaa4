package org.tent4j.transport.efa;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.PeerConnection;
import org.tent4j.testkit.transport.TestSlice;

/** Two transports in one JVM over each software provider: bytes arrive intact, READ and WRITE, alone and concurrent. */
class EfaLoopbackTest {
    private static final long[] SIZES = {1, 4095, 64 << 10, 64 << 20};

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp;ofi_rxm", "sockets", "shm"})
    void writeAndReadEverySizeAtUnalignedOffsets(String provider) {
        EfaPair.assumeProvider(provider);
        long span = (64L << 20) + 3 * 4096;
        try (EfaPair p = new EfaPair(provider)) {
            FabricInfo info = ((EfaTransport) p.a).fabricInfo();
            assertEquals(provider, info.provider);
            assertTrue((info.txOpFlags & FiAbi.FI_DELIVERY_COMPLETE) != 0,
                    "a WRITE completes only once visible at the target");
            EfaPair.Registered local = p.register(p.a, span, Permission.READ_WRITE);
            EfaPair.Registered remote = p.register(p.b, span, Permission.READ_WRITE);
            PeerConnection c = p.connectToB(remote.descriptor());
            int round = 0;
            for (long size : SIZES) {
                for (Opcode op : Opcode.values()) {
                    round++;
                    long localOff = 1 + 7L * round;          // odd: never aligned
                    long remoteOff = 4093 + 13L * round;
                    MemorySegment src = (op == Opcode.WRITE ? local : remote).segment();
                    MemorySegment dst = (op == Opcode.WRITE ? remote : local).segment();
                    long srcOff = op == Opcode.WRITE ? localOff : remoteOff;
                    long dstOff = op == Opcode.WRITE ? remoteOff : localOff;
                    EfaPair.fill(src, round);
                    dst.fill((byte) 0x5A);
                    TestSlice s = EfaPair.slice(op, local, localOff, remote.descriptor(), remoteOff, size);
                    c.post(s);
                    EfaPair.awaitDone(s);
                    String what = provider + " " + op + " " + size + " bytes";
                    assertEquals(EfaPair.crc(src.asSlice(srcOff, size)), EfaPair.crc(dst.asSlice(dstOff, size)), what);
                    // the bytes just outside the destination range are untouched
                    assertEquals((byte) 0x5A, dst.get(java.lang.foreign.ValueLayout.JAVA_BYTE, dstOff - 1), what);
                    assertEquals((byte) 0x5A, dst.get(java.lang.foreign.ValueLayout.JAVA_BYTE, dstOff + size), what);
                }
            }
            assertTrue(awaitIdle(p), "every operation slot is free again");
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp;ofi_rxm", "sockets", "shm"})
    void concurrentSlicesFromSeveralThreads(String provider) throws Exception {
        EfaPair.assumeProvider(provider);
        int threads = 4;
        int perThread = 48;
        long sliceSize = (64 << 10) + 17;
        long stride = sliceSize + 3;
        long span = stride * threads * perThread + 64;
        // a small cq_size forces back-pressure (slices wait for operation slots) alongside concurrency
        try (EfaPair p = new EfaPair(provider, java.util.Map.of(EfaTransportProvider.OPT_CQ_SIZE, "16"))) {
            EfaPair.Registered local = p.register(p.a, span, Permission.READ_WRITE);
            EfaPair.Registered remote = p.register(p.b, span, Permission.READ_WRITE);
            EfaPair.fill(local.segment(), 11);
            EfaPair.fill(remote.segment(), 22);
            MemorySegment localBefore = p.arena.allocate(span);
            MemorySegment remoteBefore = p.arena.allocate(span);
            localBefore.copyFrom(local.segment());
            remoteBefore.copyFrom(remote.segment());
            PeerConnection c = p.connectToB(remote.descriptor());
            List<TestSlice> slices = new ArrayList<>();
            for (int i = 0; i < threads * perThread; i++) {
                long off = 5 + i * stride;
                // even: WRITE local->remote at off; odd: READ remote->local at off (disjoint ranges)
                Opcode op = (i & 1) == 0 ? Opcode.WRITE : Opcode.READ;
                slices.add(EfaPair.slice(op, local, off, remote.descriptor(), off, sliceSize));
            }
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            CountDownLatch start = new CountDownLatch(1);
            try {
                for (int t = 0; t < threads; t++) {
                    int from = t * perThread;
                    pool.submit(() -> {
                        start.await();
                        for (int i = from; i < from + perThread; i++) {
                            c.post(slices.get(i));
                        }
                        return null;
                    });
                }
                start.countDown();
                for (TestSlice s : slices) {
                    EfaPair.awaitDone(s);
                }
            } finally {
                pool.shutdownNow();
                pool.awaitTermination(5, TimeUnit.SECONDS);
            }
            for (int i = 0; i < slices.size(); i++) {
                long off = 5 + i * stride;
                MemorySegment expected = ((i & 1) == 0 ? localBefore : remoteBefore).asSlice(off, sliceSize);
                MemorySegment actual = ((i & 1) == 0 ? remote.segment() : local.segment()).asSlice(off, sliceSize);
                assertEquals(EfaPair.crc(expected), EfaPair.crc(actual), provider + " slice " + i);
            }
            // a range no slice touched keeps its old bytes on both sides
            long gap = 5 + sliceSize;
            assertEquals(localBefore.get(java.lang.foreign.ValueLayout.JAVA_BYTE, gap),
                    local.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, gap));
            assertNotEquals(EfaPair.crc(localBefore), EfaPair.crc(local.segment()), "reads landed locally");
            assertTrue(awaitIdle(p), "every operation slot is free again");
        }
    }

    /**
     * Two endpoints per engine (slices spread round-robin) and operations capped at 1 MiB, so a 5 MiB + 3 slice moves
     * as six consecutive chunks from one operation slot.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp;ofi_rxm", "shm"})
    void severalEndpointsAndChunkedSlices(String provider) {
        EfaPair.assumeProvider(provider);
        long size = (5L << 20) + 3;
        long span = 4 * size + 64;
        try (EfaPair p = new EfaPair(provider, java.util.Map.of(EfaTransportProvider.OPT_ENDPOINT_COUNT, "2"),
                1 << 20)) {
            assertEquals(2, p.b.segmentAttributes().get(EfaAttributes.ADDR).split(",").length);
            EfaPair.Registered local = p.register(p.a, span, Permission.READ_WRITE);
            EfaPair.Registered remote = p.register(p.b, span, Permission.READ_WRITE);
            EfaPair.fill(local.segment(), 31);
            EfaPair.fill(remote.segment(), 32);
            PeerConnection c = p.connectToB(remote.descriptor());
            List<TestSlice> slices = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                long off = 1 + i * size;
                slices.add(EfaPair.slice(i < 2 ? Opcode.WRITE : Opcode.READ, local, off, remote.descriptor(), off, size));
            }
            MemorySegment expectLocal = p.arena.allocate(span);
            MemorySegment expectRemote = p.arena.allocate(span);
            expectLocal.copyFrom(local.segment());
            expectRemote.copyFrom(remote.segment());
            slices.forEach(c::post);
            slices.forEach(EfaPair::awaitDone);
            for (int i = 0; i < 4; i++) {
                long off = 1 + i * size;
                MemorySegment src = (i < 2 ? expectLocal : expectRemote).asSlice(off, size);
                MemorySegment dst = (i < 2 ? remote.segment() : local.segment()).asSlice(off, size);
                assertEquals(EfaPair.crc(src), EfaPair.crc(dst), provider + " slice " + i);
            }
            assertTrue(awaitIdle(p), "every operation slot is free again");
        }
    }

    static boolean awaitIdle(EfaPair p) {
        EfaTransport t = (EfaTransport) p.a;
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (System.nanoTime() < end) {
            if (t.progress().idleSlots()) {
                return true;
            }
            Thread.onSpinWait();
        }
        return false;
    }
}
