package org.tent4j.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.transport.tcp.TcpFixture.awaitCode;
import static org.tent4j.transport.tcp.TcpFixture.awaitDone;
import static org.tent4j.transport.tcp.TcpFixture.awaitFailure;
import static org.tent4j.transport.tcp.TcpFixture.crc;
import static org.tent4j.transport.tcp.TcpFixture.fillRandom;
import static org.tent4j.transport.tcp.TcpFixture.slice;
import static org.tent4j.transport.tcp.TcpFixture.sliceAt;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.netty.buffer.ByteBuf;
import io.netty.channel.DefaultEventLoop;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.PeerConnection;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;

/** Bytes between two tcp transports in one JVM: integrity, concurrency and the target's access checks. */
class TcpTransferTest {
    private TcpFixture f;

    @BeforeEach
    void setUp() {
        f = new TcpFixture();
    }

    @AfterEach
    void tearDown() {
        f.close();
    }

    @ParameterizedTest(name = "{0} of {1} bytes, local +{2}, remote +{3}")
    @CsvSource({
            "WRITE, 1, 3, 5", "READ, 1, 7, 1",
            "WRITE, 4095, 1, 13", "READ, 4095, 5, 3",
            "WRITE, 65536, 7, 9", "READ, 65536, 3, 11"})
    void bytesArriveIntactAtUnalignedOffsets(Opcode op, int size, int localOffset, int remoteOffset) {
        TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate(size + 64, 64));
        TcpFixture.Guarded target = new TcpFixture.Guarded(f.arena, size + 64, 4096);
        TestLocalMemory.Buffer remote = f.registerAtTarget(target.middle, Permission.READ_WRITE);
        fillRandom(local.segment(), 1);
        fillRandom(remote.segment(), 2);
        MemorySegment src = (op == Opcode.WRITE ? local.segment().asSlice(localOffset, size)
                : remote.segment().asSlice(remoteOffset, size));
        MemorySegment dst = (op == Opcode.WRITE ? remote.segment().asSlice(remoteOffset, size)
                : local.segment().asSlice(localOffset, size));
        MemorySegment dstWhole = op == Opcode.WRITE ? remote.segment() : local.segment();
        long dstOffset = op == Opcode.WRITE ? remoteOffset : localOffset;
        long beforeCrc = crc(dstWhole.asSlice(0, dstOffset));
        long afterCrc = crc(dstWhole.asSlice(dstOffset + size));
        long srcCrc = crc(src);

        try (PeerConnection conn = f.connect(remote)) {
            TestSlice s = slice(op, local, localOffset, remote, remoteOffset, size);
            conn.post(s);
            awaitDone(s);
        }
        assertEquals(srcCrc, crc(dst), "CRC32 of the bytes that arrived");
        assertEquals(-1, src.mismatch(dst));
        assertEquals(beforeCrc, crc(dstWhole.asSlice(0, dstOffset)), "bytes before the range untouched");
        assertEquals(afterCrc, crc(dstWhole.asSlice(dstOffset + size)), "bytes after the range untouched");
        target.assertGuardsIntact();
    }

    @Test
    void sixtyFourMebibytesWriteThenReadBack() {
        int size = 64 << 20;
        TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate(2L * size + 64, 64));
        TestLocalMemory.Buffer remote = f.registerAtTarget(f.arena.allocate(size + 64, 64), Permission.READ_WRITE);
        MemorySegment source = local.segment().asSlice(3, size);
        fillRandom(source, 64);
        long sourceCrc = crc(source);

        try (PeerConnection conn = f.connect(remote)) {
            TestSlice write = slice(Opcode.WRITE, local, 3, remote, 17, size);
            conn.post(write);
            awaitDone(write);
            assertEquals(sourceCrc, crc(remote.segment().asSlice(17, size)), "CRC32 at the target after WRITE");

            TestSlice read = slice(Opcode.READ, local, size + 33, remote, 17, size);
            conn.post(read);
            awaitDone(read);
        }
        assertEquals(sourceCrc, crc(local.segment().asSlice(size + 33, size)), "CRC32 after READ back");
        // zero copy on receive: at most the bytes that shared a read with their header were copied
        assertEquals(size, f.b.payloadBytesLanded() + f.b.payloadBytesCopied(), "WRITE payload bytes at the target");
        assertEquals(size, f.a.payloadBytesLanded() + f.a.payloadBytesCopied(), "READ payload bytes at the initiator");
        assertTrue(f.b.payloadBytesCopied() <= MemoryRegionBufs.READ_BUFFER_BYTES, "target copied "
                + f.b.payloadBytesCopied() + " of " + size + " payload bytes");
        assertTrue(f.a.payloadBytesCopied() <= MemoryRegionBufs.READ_BUFFER_BYTES, "initiator copied "
                + f.a.payloadBytesCopied() + " of " + size + " payload bytes");
    }

    @Test
    void smallPipelinedReadsAreCopiedOutOfSharedReadsAndArriveIntact() {
        int count = 64;
        int size = 4096;
        TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate((long) count * size + 64, 64));
        TestLocalMemory.Buffer remote = f.registerAtTarget(f.arena.allocate((long) count * size + 64, 64), Permission.READ_WRITE);
        fillRandom(remote.segment(), 21);
        List<TestSlice> reads = new ArrayList<>();
        try (PeerConnection conn = f.connect(remote)) {
            for (int i = 0; i < count; i++) {
                // unaligned on both sides, so a copy that is off by a header or a frame shows in the CRC
                TestSlice read = slice(Opcode.READ, local, 5 + (long) i * size, remote, 3 + (long) i * size, size);
                reads.add(read);
                conn.post(read);
            }
            reads.forEach(TcpFixture::awaitDone);
        }
        assertEquals(crc(remote.segment().asSlice(3, (long) count * size)), crc(local.segment().asSlice(5, (long) count * size)),
                "CRC32 of 64 pipelined 4 KiB READs");
        assertEquals((long) count * size, f.a.payloadBytesCopied(), "payload bytes copied out of shared reads");
        assertEquals(0, f.a.payloadBytesLanded(), "a 4 KiB READ answer was landed in place with a read of its own");
    }

    @Test
    void manyConcurrentSlicesFromFourThreads() throws Exception {
        int area = 8 << 20;
        // local: [0, area) WRITE sources, [area, 2 area) READ destinations
        // remote: [0, area) READ sources (never written), [area, 2 area) WRITE destinations
        TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate(2L * area, 64));
        TestLocalMemory.Buffer remote = f.registerAtTarget(f.arena.allocate(2L * area, 64), Permission.READ_WRITE);
        fillRandom(local.segment(), 11);
        fillRandom(remote.segment(), 12);
        MemorySegment readSource = remote.segment().asSlice(0, area);
        MemorySegment writeSource = local.segment().asSlice(0, area);
        int threads = 4;
        int perThread = 300;
        List<List<TestSlice>> posted = new ArrayList<>();
        try (PeerConnection conn = f.connect(remote)) {
            CountDownLatch start = new CountDownLatch(1);
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                List<TestSlice> mine = new ArrayList<>();
                posted.add(mine);
                long seed = 100 + t;
                workers.add(Thread.ofPlatform().start(() -> {
                    SplittableRandom r = new SplittableRandom(seed);
                    try {
                        start.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                    for (int i = 0; i < perThread; i++) {
                        int len = r.nextInt(8) == 0 ? 1 + r.nextInt(512 << 10) : 1 + r.nextInt(16 << 10);
                        int off = r.nextInt(area - len + 1);
                        TestSlice s = r.nextBoolean()
                                ? slice(Opcode.READ, local, area + off, remote, off, len)
                                : slice(Opcode.WRITE, local, off, remote, area + off, len);
                        mine.add(s);
                        conn.post(s);
                    }
                }));
            }
            start.countDown();
            for (Thread w : workers) {
                w.join();
            }
            for (List<TestSlice> mine : posted) {
                for (TestSlice s : mine) {
                    awaitDone(s);
                }
            }
            assertTrue(conn.isOpen());
        }
        int checked = 0;
        for (List<TestSlice> mine : posted) {
            for (TestSlice s : mine) {
                int len = (int) s.length();
                if (s.opcode() == Opcode.READ) {
                    long off = s.remoteAddress() - remote.address();
                    assertEquals(-1, readSource.asSlice(off, len).mismatch(local.segment().asSlice(s.localOffset(), len)),
                            "READ of " + len + " at +" + off);
                } else {
                    long off = s.localOffset();
                    assertEquals(-1, writeSource.asSlice(off, len).mismatch(
                            remote.segment().asSlice(s.remoteAddress() - remote.address(), len)),
                            "WRITE of " + len + " at +" + off);
                }
                checked++;
            }
        }
        assertEquals(threads * perThread, checked);
    }

    @Test
    void targetRejectsBadAccessesAndTouchesNothingOutsideRegistrations() {
        int size = 64 << 10;
        TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate(size, 64));
        fillRandom(local.segment(), 5);
        TcpFixture.Guarded rw = new TcpFixture.Guarded(f.arena, size, 8192);
        TcpFixture.Guarded ro = new TcpFixture.Guarded(f.arena, size, 8192);
        TcpFixture.Guarded lo = new TcpFixture.Guarded(f.arena, size, 8192);
        TestLocalMemory.Buffer readWrite = f.registerAtTarget(rw.middle, Permission.READ_WRITE);
        TestLocalMemory.Buffer readOnly = f.registerAtTarget(ro.middle, Permission.READ_ONLY);
        TestLocalMemory.Buffer localOnly = f.registerAtTarget(lo.middle, Permission.LOCAL_ONLY);
        long roCrc = crc(ro.middle);
        long loCrc = crc(lo.middle);
        long rwCrc = crc(rw.middle);
        long far = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);

        try (PeerConnection conn = f.connect(readWrite, readOnly, localOnly)) {
            for (Opcode op : Opcode.values()) {
                // not registered: just before and just after the registered middle
                TestSlice before = sliceAt(op, local, 0, readWrite, rw.beforeAddress(), 4096, far);
                TestSlice after = sliceAt(op, local, 0, readWrite, rw.afterAddress(), 4096, far);
                // starts inside, runs past the end
                TestSlice pastEnd = slice(op, local, 0, readWrite, size - 100, 4096);
                TestSlice localOnlyAccess = slice(op, local, 0, localOnly, 0, 4096);
                conn.post(before);
                conn.post(after);
                conn.post(pastEnd);
                conn.post(localOnlyAccess);
                TransferException e = awaitFailure(before);
                assertEquals(ErrorCode.ADDRESS_NOT_REGISTERED, e.code(), e.getMessage());
                assertTrue(e.getMessage().contains("segment 'b'"), e.getMessage());
                assertTrue(e.getMessage().contains(Long.toHexString(rw.beforeAddress())), e.getMessage());
                assertEquals(ErrorCode.ADDRESS_NOT_REGISTERED, awaitCode(after));
                TransferException oob = awaitFailure(pastEnd);
                assertEquals(ErrorCode.OUT_OF_BOUNDS, oob.code(), oob.getMessage());
                assertEquals(ErrorCode.PERMISSION_DENIED, awaitCode(localOnlyAccess));
            }
            TestSlice writeReadOnly = slice(Opcode.WRITE, local, 0, readOnly, 0, size);
            conn.post(writeReadOnly);
            TransferException denied = awaitFailure(writeReadOnly);
            assertEquals(ErrorCode.PERMISSION_DENIED, denied.code(), denied.getMessage());
            assertTrue(denied.getMessage().contains("READ_ONLY"), denied.getMessage());

            // rejected requests leave the connection in sync: a READ_ONLY buffer still reads fine
            TestSlice readReadOnly = slice(Opcode.READ, local, 0, readOnly, 0, size);
            conn.post(readReadOnly);
            awaitDone(readReadOnly);
            assertEquals(roCrc, crc(local.segment()));
            assertTrue(conn.isOpen(), "bad accesses answered with errors must not break the connection");
        }
        assertEquals(roCrc, crc(ro.middle), "READ_ONLY buffer unchanged");
        assertEquals(loCrc, crc(lo.middle), "LOCAL_ONLY buffer unchanged");
        assertEquals(rwCrc, crc(rw.middle), "no rejected WRITE reached the READ_WRITE buffer");
        rw.assertGuardsIntact();
        ro.assertGuardsIntact();
        lo.assertGuardsIntact();
    }

    @Test
    void sliceLargerThanPeersMaxFrameFailsLocallyAndKeepsTheConnection() {
        f.close();
        f = new TcpFixture(Map.of(), Map.of("max_frame", "64k"));
        TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate(1 << 20, 64));
        TestLocalMemory.Buffer remote = f.registerAtTarget(f.arena.allocate(1 << 20, 64), Permission.READ_WRITE);
        try (PeerConnection conn = f.connect(remote)) {
            TestSlice big = slice(Opcode.WRITE, local, 0, remote, 0, (64 << 10) + 1);
            conn.post(big);
            TransferException e = awaitFailure(big);
            assertEquals(ErrorCode.INVALID_ARGUMENT, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("max_frame"), e.getMessage());
            TestSlice fits = slice(Opcode.WRITE, local, 0, remote, 0, 64 << 10);
            conn.post(fits);
            awaitDone(fits);
            assertTrue(conn.isOpen());
        }
    }

    @Test
    void targetAnswersAnOversizeRequestWithProtocolErrorWhenTheInitiatorDidNotKnowItsLimit() {
        f.close();
        f = new TcpFixture(Map.of(), Map.of("max_frame", "64k"));
        TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate(1 << 20, 64));
        TestLocalMemory.Buffer remote = f.registerAtTarget(f.arena.allocate(1 << 20, 64), Permission.READ_WRITE);
        // a descriptor from an older publisher: the port, but no max_frame
        try (PeerConnection conn = f.a.connect(TcpFixture.descriptor("b", TcpFixture.portOnly(f.b.port()), remote))) {
            TestSlice big = slice(Opcode.READ, local, 0, remote, 0, 128 << 10);
            conn.post(big);
            TransferException e = awaitFailure(big);
            assertEquals(ErrorCode.PROTOCOL, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("max_frame"), e.getMessage());
            assertFalse(conn.isOpen(), "the target closes a connection that broke the protocol");
        }
        // the target itself is fine
        try (PeerConnection conn = f.connect(remote)) {
            TestSlice ok = slice(Opcode.READ, local, 0, remote, 0, 4096);
            conn.post(ok);
            awaitDone(ok);
        }
    }

    @Test
    void memoryViewsGiveTheKernelTheRegisteredAddressWithOrWithoutUnsafe() throws Exception {
        // the build runs this class twice: with Unsafe allowed, and as Java 25 ships (Netty then has no Unsafe)
        boolean expectUnsafe = Boolean.parseBoolean(System.getProperty("tent4j.test.nettyUnsafe", "true"));
        assertEquals(expectUnsafe, io.netty.util.internal.PlatformDependent.hasUnsafe());
        MemorySegment memory = f.arena.allocate(64);
        DefaultEventLoop loop = new DefaultEventLoop();
        try {
            loop.submit(() -> {
                MemoryRegionBufs views = new MemoryRegionBufs(loop);
                ByteBuf view = views.landing(memory, 8, 16, null);
                assertTrue(view.hasMemoryAddress());
                assertEquals(memory.address() + 8, view.memoryAddress());
                assertEquals(16, view.writableBytes());
                view.writeLong(0x0102030405060708L).writeIntLE(0x0A0B0C0D);
                assertEquals(0x01, memory.get(ValueLayout.JAVA_BYTE, 8));
                assertEquals(0x0D, memory.get(ValueLayout.JAVA_BYTE, 16));
                assertThrows(IndexOutOfBoundsException.class, () -> view.setByte(16, 1), "a view stays in its range");
                view.release();
                // released on its loop, the same object serves the next slice: no view is allocated per slice
                ByteBuf next = views.readable(memory, 0, 32, null);
                assertSame(view, next);
                assertEquals(32, next.readableBytes());
                assertEquals(0x0102030405060708L, next.getLong(8));
                next.release();
                assertThrows(IllegalArgumentException.class,
                        () -> views.landing(memory.asReadOnly(), 0, 8, null), "no receiving into read-only memory");
                assertThrows(IndexOutOfBoundsException.class, () -> views.readable(memory, 60, 8, null));
                ByteBuf header = views.header();
                assertEquals(MemoryRegionBufs.FRAME_HEADER_BYTES, header.writableBytes());
                header.writeLongLE(7).release();
                ByteBuf nextHeader = views.header();
                assertSame(header, nextHeader, "headers are recycled too");
                assertEquals(0, nextHeader.readableBytes());
                nextHeader.release();
                return null;
            }).get();
        } finally {
            loop.shutdownGracefully(0, 0, TimeUnit.SECONDS);
        }
    }

    @Test
    void invalidLocalRangeFailsWithoutSending() {
        TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate(4096, 64));
        TestLocalMemory.Buffer remote = f.registerAtTarget(f.arena.allocate(8192, 64), Permission.READ_WRITE);
        try (PeerConnection conn = f.connect(remote)) {
            TestSlice s = slice(Opcode.READ, local, 100, remote, 0, 4096);
            conn.post(s);
            assertEquals(ErrorCode.OUT_OF_BOUNDS, awaitCode(s));
            TestSlice zero = slice(Opcode.READ, local, 0, remote, 0, 0);
            conn.post(zero);
            assertEquals(ErrorCode.INVALID_ARGUMENT, awaitCode(zero));
            assertTrue(conn.isOpen());
        }
    }
}
