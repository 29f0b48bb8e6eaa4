package org.tent4j.testkit.conformance;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.PeerConnection;
import org.tent4j.testkit.conformance.TransportUnderTest.Region;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Bytes arrive intact: every route, opcode and size, every path, four posting threads, one settlement each. */
abstract class ByteCases extends PluginCases {
    // ------------------------------------------------------------------------------------------------ bytes

    static Stream<Arguments> routesOpcodesAndSizes() {
        List<Arguments> out = new ArrayList<>();
        for (TransportConformance.Route r : TransportConformance.Route.values()) {
            for (Opcode op : Opcode.values()) {
                for (TransportConformance.SizeClass s : TransportConformance.SizeClass.values()) {
                    out.add(Arguments.of(r, op, s));
                }
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0} {1} of {2}")
    @MethodSource("org.tent4j.testkit.conformance.ByteCases#routesOpcodesAndSizes")
    void bytesArriveIntactAtUnalignedOffsets(TransportConformance.Route route, Opcode op, TransportConformance.SizeClass sizeClass) {
        if (route == TransportConformance.Route.LOOPBACK) {
            assumeTrue(supportsLoopback(), "the transport does not support loopback");
        }
        long size = Math.min(sizeClass.bytes, Math.min(largestSliceTested(), maxSliceSize()));
        TransportUnderTest initiator = a();
        TransportUnderTest target = route == TransportConformance.Route.LOOPBACK ? a() : b();
        Region local = initiator.allocate(LOCAL_OFFSET + size + TAIL, Permission.READ_WRITE);
        Region remote = target.allocate(REMOTE_OFFSET + size + TAIL, Permission.READ_WRITE);
        PeerConnection c = connect(initiator, target.descriptor());

        MemorySegment source = op == Opcode.WRITE ? local.segment() : remote.segment();
        long sourceOffset = op == Opcode.WRITE ? LOCAL_OFFSET : REMOTE_OFFSET;
        MemorySegment dest = op == Opcode.WRITE ? remote.segment() : local.segment();
        long destOffset = op == Opcode.WRITE ? REMOTE_OFFSET : LOCAL_OFFSET;
        BytePattern.fill(source, sourceOffset, size, size * 31 + op.ordinal());

        ConformanceSlice s = post(c, slice(op, local, LOCAL_OFFSET, remote.descriptor(),
                remote.address() + REMOTE_OFFSET, size, 0, dataDeadline()));
        assertCompleted(s);
        assertSameBytes(source, sourceOffset, dest, destOffset, size, s);
        assertUntouched(dest, 0, destOffset, "before the " + (op == Opcode.WRITE ? "target" : "local") + " range of " + s);
        assertUntouched(dest, destOffset + size, TAIL, "after the " + (op == Opcode.WRITE ? "target" : "local")
                + " range of " + s);
    }

    @Test
    void everySliceSettlesExactlyOnce() throws Exception {
        long[] sizes = {1, 100, 4096, 65537, 300_000};
        long span = 4 * MIB;
        Region local = a().allocate(span, Permission.READ_WRITE);
        Region remote = b().allocate(span, 64 * KIB, Permission.READ_WRITE);
        BytePattern.fill(local.segment(), 0, span, 11);
        PeerConnection c = connect(a(), b().descriptor());
        int paths = Math.max(1, c.pathCount());
        List<ConformanceSlice> good = new ArrayList<>();
        List<ConformanceSlice> bad = new ArrayList<>();
        long at = 0;
        // good and bad slices interleaved on one connection: a rejected slice must not disturb the ones around it
        for (int i = 0; i < 30; i++) {
            if (i % 6 == 5) {
                bad.add(post(c, slice(Opcode.WRITE, local, 0, remote.descriptor(), remote.address() + span - 10, 100,
                        i % paths, failureDeadline())));
                continue;
            }
            long n = sizes[i % sizes.length];
            good.add(post(c, slice(Opcode.WRITE, local, at, remote.descriptor(), remote.address() + at, n, i % paths,
                    dataDeadline())));
            at += n;
        }
        for (ConformanceSlice s : good) {
            assertCompleted(s);
        }
        for (ConformanceSlice s : bad) {
            assertFailedWith(s, BAD_INPUT, "its remote range runs 90 bytes past the end of the buffer");
        }
        Thread.sleep(GRACE_MILLIS);
        for (ConformanceSlice s : posted) {
            assertEquals(1, s.settlements(), () -> "slice settled " + s.settlements() + " times: " + s + ": "
                    + s.settlementHistory());
        }
        assertSameBytes(local.segment(), 0, remote.segment(), 0, at, good.getLast());
        assertUntouched(remote.memory(), span, 64 * KIB, "in the guard zone after the target buffer");
    }

    @Test
    void slicesMoveOnEveryPath() {
        PeerConnection c = connect(a(), b().descriptor());
        int paths = c.pathCount();
        assertTrue(paths >= 1, () -> "pathCount() is " + paths + "; it must be at least 1");
        for (int p = 0; p < paths; p++) {
            String name = c.pathName(p);
            int path = p;
            assertFalse(name == null || name.isBlank(), () -> "pathName(" + path + ") is blank; metrics and logs use it");
        }
        long chunk = 64 * KIB + 3;
        Region local = a().allocate(2 * paths * chunk, Permission.READ_WRITE);
        Region remote = b().allocate(paths * chunk, Permission.READ_WRITE);
        BytePattern.fill(local.segment(), 0, paths * chunk, 21);
        List<ConformanceSlice> writes = new ArrayList<>();
        for (int p = 0; p < paths; p++) {
            writes.add(post(c, slice(Opcode.WRITE, local, p * chunk, remote.descriptor(), remote.address() + p * chunk,
                    chunk, p, dataDeadline())));
        }
        writes.forEach(this::assertCompleted);
        List<ConformanceSlice> reads = new ArrayList<>();
        for (int p = 0; p < paths; p++) {
            reads.add(post(c, slice(Opcode.READ, local, (paths + p) * chunk, remote.descriptor(),
                    remote.address() + p * chunk, chunk, p, dataDeadline())));
        }
        reads.forEach(this::assertCompleted);
        for (int p = 0; p < paths; p++) {
            assertSameBytes(local.segment(), p * chunk, remote.segment(), p * chunk, chunk, writes.get(p));
            assertSameBytes(local.segment(), p * chunk, local.segment(), (paths + p) * chunk, chunk, reads.get(p));
        }
    }

    @Test
    void concurrentSlicesFromFourThreadsLandIntact() throws Exception {
        int threads = 4;
        int perThread = 16;
        long chunk = 64 * KIB + 5;
        long quarter = perThread * chunk;
        long total = threads * quarter;
        Region source = a().allocate(total, Permission.READ_WRITE);
        Region readBack = a().allocate(total, Permission.READ_WRITE);
        Region remote = b().allocate(total, Permission.READ_WRITE);
        BytePattern.fill(source.segment(), 0, total, 31);
        PeerConnection c = connect(a(), b().descriptor());
        int paths = Math.max(1, c.pathCount());
        ExecutorService pool = Executors.newFixedThreadPool(threads, Thread.ofPlatform().name("conformance-poster-", 0).factory());
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long base = t * quarter;
                done.add(pool.submit(() -> {
                    go.await();
                    List<ConformanceSlice> mine = new ArrayList<>();
                    for (int k = 0; k < perThread; k++) {
                        long off = base + k * chunk;
                        mine.add(post(c, slice(Opcode.WRITE, source, off, remote.descriptor(), remote.address() + off,
                                chunk, k % paths, dataDeadline())));
                    }
                    mine.forEach(this::assertCompleted);
                    mine.clear();
                    for (int k = 0; k < perThread; k++) {
                        long off = base + k * chunk;
                        mine.add(post(c, slice(Opcode.READ, readBack, off, remote.descriptor(), remote.address() + off,
                                chunk, (k + 1) % paths, dataDeadline())));
                    }
                    mine.forEach(this::assertCompleted);
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : done) {
                try {
                    f.get(dataLimit().toMillis() * 2, TimeUnit.MILLISECONDS);
                } catch (ExecutionException e) {
                    throw e.getCause() instanceof AssertionError ae ? ae : new AssertionError(e.getCause());
                }
            }
        } finally {
            pool.shutdownNow();
        }
        assertSameBytes(source.segment(), 0, remote.segment(), 0, total, posted.getFirst());
        assertSameBytes(source.segment(), 0, readBack.segment(), 0, total, posted.getLast());
    }
}
