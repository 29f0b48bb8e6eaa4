package org.tent4j.transport.shm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.ControlPlane;
import org.tent4j.spi.LocalMemory;
import org.tent4j.spi.MemoryAllocator.Allocation;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.TimeSource;
import org.tent4j.spi.TransportContext;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;
import org.tent4j.testkit.transport.TestTransportContext;
import org.tent4j.testkit.ManualClock;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Two engines' shm transports in one JVM ("a" initiates, "b" owns shm memory), driven slice by slice. The memory
 * still crosses a real mapping: "a" maps b's file a second time, exactly as another process would.
 */
class ShmTransportTest {
    static final String MACHINE = "machine-1";
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(60);

    private final ShmTransportProvider provider = new ShmTransportProvider();
    private final Arena arena = Arena.ofShared();
    private TestTransportContext ctxA;
    private TestTransportContext ctxB;
    private ShmTransport a;
    private ShmTransport b;

    @BeforeEach
    void start() {
        ctxA = context("a", Map.of());
        ctxB = context("b", Map.of());
        a = (ShmTransport) provider.create(ctxA);
        b = (ShmTransport) provider.create(ctxB);
    }

    @AfterEach
    void stop() {
        a.close();
        b.close();
        ctxA.close();
        ctxB.close();
        arena.close();
    }

    // ------------------------------------------------------------------------------------------ bytes arrive intact

    static Stream<Arguments> sizesAndOpcodes() {
        List<Arguments> args = new ArrayList<>();
        for (long size : new long[]{1, 4095, 64 << 10, (64 << 10) + 1, 64L << 20}) {
            for (Opcode op : Opcode.values()) {
                args.add(Arguments.of(size, op));
            }
        }
        return args.stream();
    }

    @ParameterizedTest(name = "{1} of {0} bytes")
    @MethodSource("sizesAndOpcodes")
    void bytesArriveIntactAtUnalignedOffsets(long size, Opcode op) throws Exception {
        long localOffset = 7;
        long remoteOffset = 13;
        Remote remote = remote(size + 64, Permission.READ_WRITE);
        TestLocalMemory.Buffer local = local(size + 64);
        MemorySegment source = op == Opcode.WRITE ? local.segment() : remote.allocation.segment();
        MemorySegment target = op == Opcode.WRITE ? remote.allocation.segment() : local.segment();
        long sourceOffset = op == Opcode.WRITE ? localOffset : remoteOffset;
        long targetOffset = op == Opcode.WRITE ? remoteOffset : localOffset;
        Patterns.fill(source, sourceOffset, size, 42);
        target.fill((byte) 0x5A);

        PeerConnection conn = a.connect(segmentB(remote.descriptor));
        TestSlice slice = slice(op, local, localOffset, remote.descriptor, remoteOffset, size);
        conn.post(slice);
        slice.result().get(60, TimeUnit.SECONDS);

        assertEquals(Patterns.crc(source, sourceOffset, size), Patterns.crc(target, targetOffset, size),
                "bytes differ after " + op);
        assertTrue(Patterns.allEqual(target, 0, targetOffset, (byte) 0x5A), "bytes before the target range changed");
        assertTrue(Patterns.allEqual(target, targetOffset + size, target.byteSize() - targetOffset - size, (byte) 0x5A),
                "bytes after the target range changed");
        assertEquals(1, slice.completions());
        conn.close();
    }

    @Test
    void concurrentSlicesFromFourThreadsLandIntact() throws Exception {
        int threads = 4;
        long quarter = 3L << 20;
        long total = threads * quarter;
        Remote remote = remote(total, Permission.READ_WRITE);
        TestLocalMemory.Buffer source = local(total);
        TestLocalMemory.Buffer readBack = local(total);
        Patterns.fill(source.segment(), 0, total, 7);
        PeerConnection conn = a.connect(segmentB(remote.descriptor));

        // each thread writes its quarter in slices of mixed sizes (inline and queued), then reads it back
        ConcurrentLinkedQueue<TestSlice> posted = new ConcurrentLinkedQueue<>();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long base = t * quarter;
                done.add(pool.submit(() -> {
                    go.await();
                    List<TestSlice> writes = postInChunks(conn, Opcode.WRITE, source, remote.descriptor, base, quarter);
                    posted.addAll(writes);
                    for (TestSlice s : writes) {
                        s.result().get(60, TimeUnit.SECONDS);
                    }
                    List<TestSlice> reads = postInChunks(conn, Opcode.READ, readBack, remote.descriptor, base, quarter);
                    posted.addAll(reads);
                    for (TestSlice s : reads) {
                        s.result().get(60, TimeUnit.SECONDS);
                    }
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : done) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        long expected = Patterns.crc(source.segment(), 0, total);
        assertEquals(expected, Patterns.crc(remote.allocation.segment(), 0, total), "remote bytes after WRITEs");
        assertEquals(expected, Patterns.crc(readBack.segment(), 0, total), "local bytes after READs");
        assertTrue(posted.size() > 4 * 20, "expected many slices, got " + posted.size());
        for (TestSlice s : posted) {
            assertEquals(1, s.completions(), "a slice completed more than once");
        }
    }

    private static List<TestSlice> postInChunks(PeerConnection conn, Opcode op, TestLocalMemory.Buffer local,
                                                BufferDescriptor remote, long base, long length) {
        long[] sizes = {1, 777, 4096, 65_536, 65_537, 200_000, 333_333};
        List<TestSlice> slices = new ArrayList<>();
        ThreadLocalRandom random = ThreadLocalRandom.current();
        long at = 0;
        while (at < length) {
            long n = Math.min(sizes[random.nextInt(sizes.length)], length - at);
            TestSlice s = new TestSlice(op, local, base + at, remote, remote.address() + base + at, n,
                    System.nanoTime() + TIMEOUT_NANOS);
            conn.post(s);
            slices.add(s);
            at += n;
        }
        return slices;
    }

    // ------------------------------------------------------------------------------------------ refusals

    @Test
    void readOnlyRemoteRejectsWriteAndServesRead() throws Exception {
        long size = 100_000;
        Remote remote = remote(size, Permission.READ_ONLY);
        Patterns.fill(remote.allocation.segment(), 0, size, 3);
        long before = Patterns.crc(remote.allocation.segment(), 0, size);
        TestLocalMemory.Buffer local = local(size);
        Patterns.fill(local.segment(), 0, size, 4);
        PeerConnection conn = a.connect(segmentB(remote.descriptor));

        for (long n : new long[]{10, size}) { // inline and queued
            TestSlice write = slice(Opcode.WRITE, local, 0, remote.descriptor, 0, n);
            conn.post(write);
            assertEquals(ErrorCode.PERMISSION_DENIED, failure(write));
        }
        assertEquals(before, Patterns.crc(remote.allocation.segment(), 0, size), "READ_ONLY buffer was written");

        TestSlice read = slice(Opcode.READ, local, 0, remote.descriptor, 0, size);
        conn.post(read);
        read.result().get(30, TimeUnit.SECONDS);
        assertEquals(before, Patterns.crc(local.segment(), 0, size));
    }

    @Test
    void localOnlyRemoteIsRefused() throws Exception {
        Remote remote = remote(4096, Permission.LOCAL_ONLY);
        TestLocalMemory.Buffer local = local(4096);
        PeerConnection conn = a.connect(segmentB(remote.descriptor));
        TestSlice read = slice(Opcode.READ, local, 0, remote.descriptor, 0, 4096);
        conn.post(read);
        assertEquals(ErrorCode.PERMISSION_DENIED, failure(read));
        assertEquals(0, ((ShmPeerConnection) conn).mappedBufferCount(), "a LOCAL_ONLY buffer was mapped");
    }

    @Test
    void outOfBoundsSlicesAreRejectedAndGuardBytesStayIntact() throws Exception {
        long page = 4096;
        // register only the middle page of a three-page allocation: the outer pages are guards that exist in the file
        Allocation alloc = b.allocator().orElseThrow().allocate(3 * page, Location.CPU);
        alloc.segment().fill((byte) 0xAA);
        TestLocalMemory.Buffer middle = ctxB.memory().register(alloc.segment().asSlice(page, page),
                Permission.READ_WRITE, alloc.backing());
        Map<String, String> attrs = b.registerBuffer(middle).orElseThrow();
        assertEquals(Long.toString(page), attrs.get(ShmTransport.OFFSET));
        BufferDescriptor remote = middle.describe(ShmTransportProvider.ID, attrs);

        TestLocalMemory.Buffer local = local(2 * page);
        Patterns.fill(local.segment(), 0, 2 * page, 9);
        PeerConnection conn = a.connect(segmentB(remote));

        TestSlice pastEnd = slice(Opcode.WRITE, local, 0, remote, page - 10, 20);
        TestSlice beforeStart = new TestSlice(Opcode.WRITE, local, 0, remote, remote.address() - 1, 2,
                System.nanoTime() + TIMEOUT_NANOS);
        TestSlice tooLong = slice(Opcode.WRITE, local, 0, remote, 0, page + 1);
        TestSlice localOverrun = slice(Opcode.WRITE, local, page + 1, remote, 0, page);
        TestSlice zeroLength = slice(Opcode.WRITE, local, 0, remote, 0, 0);
        for (TestSlice s : List.of(pastEnd, beforeStart, tooLong, localOverrun)) {
            conn.post(s);
            assertEquals(ErrorCode.OUT_OF_BOUNDS, failure(s));
        }
        conn.post(zeroLength);
        assertEquals(ErrorCode.INVALID_ARGUMENT, failure(zeroLength));

        TestSlice exact = slice(Opcode.WRITE, local, 5, remote, 0, page);
        conn.post(exact);
        exact.result().get(30, TimeUnit.SECONDS);

        assertTrue(Patterns.allEqual(alloc.segment(), 0, page, (byte) 0xAA), "guard page before the buffer changed");
        assertTrue(Patterns.allEqual(alloc.segment(), 2 * page, page, (byte) 0xAA), "guard page after the buffer changed");
        assertEquals(Patterns.crc(local.segment(), 5, page), Patterns.crc(alloc.segment(), page, page));
    }

    @Test
    void passedDeadlineFailsWithTimeout() throws Exception {
        Remote remote = remote(1 << 20, Permission.READ_WRITE);
        TestLocalMemory.Buffer local = local(1 << 20);
        PeerConnection conn = a.connect(segmentB(remote.descriptor));
        for (long n : new long[]{100, 1 << 20}) {
            TestSlice late = new TestSlice(Opcode.READ, local, 0, remote.descriptor, remote.descriptor.address(), n,
                    System.nanoTime() - 1);
            conn.post(late);
            assertEquals(ErrorCode.TIMEOUT, failure(late));
        }
    }

    @Test
    void differentMachineIsRefusedNamingSegmentAndBothMachines() {
        SegmentDescriptor elsewhere = SegmentDescriptor.builder().name("far-segment").machineId("machine-2")
                .host("10.0.0.2").controlPort(0).transports(List.of(ShmTransportProvider.ID))
                .transportAttributes(Map.of()).buffers(List.of()).version(1).build();
        TransferException e = assertThrows(TransferException.class, () -> a.connect(elsewhere));
        assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, e.code());
        assertTrue(e.getMessage().contains("far-segment"), e.getMessage());
        assertTrue(e.getMessage().contains("machine-1"), e.getMessage());
        assertTrue(e.getMessage().contains("machine-2"), e.getMessage());
    }

    @Test
    void missingFileFailsPeerFailedNamingPathAndSegment() throws Exception {
        Remote remote = remote(8192, Permission.READ_WRITE);
        String path = remote.allocation.backing().get("path");
        remote.allocation.release().run();
        assertFalse(Files.exists(Path.of(path)));
        TestLocalMemory.Buffer local = local(8192);
        PeerConnection conn = a.connect(segmentB(remote.descriptor));
        TestSlice read = slice(Opcode.READ, local, 0, remote.descriptor, 0, 8192);
        conn.post(read);
        TransferException e = failureException(read);
        assertEquals(ErrorCode.PEER_FAILED, e.code());
        assertTrue(e.getMessage().contains(path), e.getMessage());
        assertTrue(e.getMessage().contains("'b'"), e.getMessage());
    }

    @Test
    void pathThatIsNotAnShmFileIsNeverMapped() throws Exception {
        TestLocalMemory.Buffer local = local(64);
        for (String path : List.of("/etc/passwd", "relative/tent4j-1-0123456789abcdef",
                "/dev/shm/../etc/tent4j-1-0123456789abcdef")) {
            BufferDescriptor forged = BufferDescriptor.builder().address(0x10000).length(64).location(Location.CPU)
                    .permission(Permission.READ_WRITE).transports(List.of(ShmTransportProvider.ID))
                    .attributes(Map.of(ShmTransportProvider.ID, Map.of("path", path, "size", "64", "offset", "0")))
                    .build();
            PeerConnection conn = a.connect(segmentB(forged));
            TestSlice write = slice(Opcode.WRITE, local, 0, forged, 0, 64);
            conn.post(write);
            TransferException e = failureException(write);
            assertEquals(ErrorCode.PROTOCOL, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains(path), e.getMessage());
        }
    }

    /** A descriptor of segment "b" naming a path b did not publish: refused before anything is opened or mapped. */
    private void assertSpoofRefused(String path, String expectedReason) throws Exception {
        TestLocalMemory.Buffer local = local(64);
        BufferDescriptor forged = BufferDescriptor.builder().address(0x10000).length(64).location(Location.CPU)
                .permission(Permission.READ_WRITE).transports(List.of(ShmTransportProvider.ID))
                .attributes(Map.of(ShmTransportProvider.ID, Map.of("path", path, "size", "64", "offset", "0")))
                .build();
        ShmPeerConnection conn = (ShmPeerConnection) a.connect(segmentB(forged));
        TestSlice write = slice(Opcode.WRITE, local, 0, forged, 0, 64);
        conn.post(write);
        TransferException e = failureException(write);
        assertEquals(ErrorCode.PROTOCOL, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains(path) && e.getMessage().contains(expectedReason), e.getMessage());
        assertTrue(e.getMessage().contains("'b'"), e.getMessage());
        assertEquals(0, conn.mappedBufferCount(), "a refused file was mapped");
        conn.close();
    }

    @Test
    void anotherEnginesLocalOnlyFileIsRefusedWhenSpoofedAsPublished() throws Exception {
        // engine "c" allocates a buffer it never publishes; "b"'s descriptor claims c's file as its own READ_WRITE one
        try (TestTransportContext ctxC = context("c", Map.of());
             ShmTransport c = (ShmTransport) provider.create(ctxC)) {
            Allocation secret = c.allocator().orElseThrow().allocate(64, Location.CPU);
            ctxC.memory().register(secret.segment(), Permission.LOCAL_ONLY, secret.backing());
            secret.segment().fill((byte) 0x11);
            assertSpoofRefused(secret.backing().get("path"), "segment 'b' did not create it");
            assertTrue(Patterns.allEqual(secret.segment(), 0, 64, (byte) 0x11), "the LOCAL_ONLY buffer was written");
        }
    }

    @Test
    void fileOutsideTheConfiguredDirectoryIsRefused(@TempDir Path elsewhere) throws Exception {
        // a real file, named exactly as b's allocator would, but not in a's shm directory
        Path outside = elsewhere.resolve("tent4j-1-" + ShmDirectory.segmentTag("b") + "-0123456789abcdef");
        Files.write(outside, new byte[64]);
        assertSpoofRefused(outside.toString(), "outside this engine's shm directory");
        assertTrue(Patterns.allEqual(MemorySegment.ofArray(Files.readAllBytes(outside)), 0, 64, (byte) 0),
                "the outside file was written");
    }

    @Test
    void dotDotTricksAreRefused() throws Exception {
        Remote real = remote(64, Permission.READ_WRITE);
        Path p = Path.of(real.allocation.backing().get("path"));
        String name = p.getFileName().toString();
        assertSpoofRefused(p.getParent() + "/../shm/" + name, "not a tent4j shm file");
        assertSpoofRefused(p.getParent() + "/./" + name, "not a tent4j shm file");
    }

    @Test
    void symlinkNamedLikeTheSegmentsFileIsRefused() throws Exception {
        // b's name and tag, in the right directory, but a link to another engine's file
        try (TestTransportContext ctxC = context("c", Map.of());
             ShmTransport c = (ShmTransport) provider.create(ctxC)) {
            Allocation target = c.allocator().orElseThrow().allocate(64, Location.CPU);
            target.segment().fill((byte) 0x22);
            Path link = Path.of(ShmTransportProvider.DEFAULT_DIR, "tent4j-" + ProcessHandle.current().pid() + "-"
                    + ShmDirectory.segmentTag("b") + "-" + java.util.HexFormat.of().toHexDigits(System.nanoTime()));
            Files.createSymbolicLink(link, Path.of(target.backing().get("path")));
            try {
                assertSpoofRefused(link.toString(), "not a regular file");
            } finally {
                Files.delete(link);
            }
            assertTrue(Patterns.allEqual(target.segment(), 0, 64, (byte) 0x22), "the link's target was written");
        }
    }

    @Test
    void fileOwnedByAnotherUserIsRefused() throws Exception {
        // only root can give a file away; as root this checks the uid test, elsewhere other users' 0600 files fail open
        assumeTrue(ShmDirectory.PROCESS_UID == 0, "chown needs root");
        Path foreign = Path.of(ShmTransportProvider.DEFAULT_DIR, "tent4j-" + ProcessHandle.current().pid() + "-"
                + ShmDirectory.segmentTag("b") + "-" + java.util.HexFormat.of().toHexDigits(System.nanoTime()));
        Files.write(foreign, new byte[64]);
        try {
            Files.setAttribute(foreign, "unix:uid", 65534);
            assertSpoofRefused(foreign.toString(), "owned by uid 65534");
        } finally {
            Files.delete(foreign);
        }
    }

    @Test
    void mismatchedSizeAttributeIsRejected() throws Exception {
        Remote remote = remote(8192, Permission.READ_WRITE);
        Map<String, String> attrs = new HashMap<>(remote.descriptor.attributes(ShmTransportProvider.ID));
        attrs.put("size", "4096");
        BufferDescriptor wrong = BufferDescriptor.builder().address(remote.descriptor.address()).length(8192)
                .location(Location.CPU).permission(Permission.READ_WRITE).transports(List.of(ShmTransportProvider.ID))
                .attributes(Map.of(ShmTransportProvider.ID, attrs)).build();
        TestLocalMemory.Buffer local = local(8192);
        PeerConnection conn = a.connect(segmentB(wrong));
        TestSlice read = slice(Opcode.READ, local, 0, wrong, 0, 8192);
        conn.post(read);
        assertEquals(ErrorCode.PROTOCOL, failure(read));
    }

    // ------------------------------------------------------------------------------------------ mappings

    @Test
    void mappingIsCachedAndDroppedWhenThePeerStopsPublishingTheBuffer() throws Exception {
        Remote first = remote(4096, Permission.READ_WRITE);
        Remote second = remote(4096, Permission.READ_WRITE);
        Patterns.fill(first.allocation.segment(), 0, 4096, 1);
        Patterns.fill(second.allocation.segment(), 0, 4096, 2);
        TestLocalMemory.Buffer local = local(4096);
        ShmPeerConnection conn = (ShmPeerConnection) a.connect(segmentB(first.descriptor, second.descriptor));

        for (int i = 0; i < 3; i++) {
            readAll(conn, local, first.descriptor);
        }
        assertEquals(1, conn.mappedBufferCount(), "repeated slices to one buffer must reuse its mapping");
        readAll(conn, local, second.descriptor);
        assertEquals(Patterns.crc(second.allocation.segment(), 0, 4096), Patterns.crc(local.segment(), 0, 4096));
        assertEquals(2, conn.mappedBufferCount());

        conn.descriptorChanged(segmentB(second.descriptor));
        assertEquals(1, conn.mappedBufferCount(), "the unpublished buffer must be unmapped");
        readAll(conn, local, second.descriptor);
        assertEquals(1, conn.mappedBufferCount(), "the buffer still published must stay mapped");

        conn.close();
        assertEquals(0, conn.mappedBufferCount());
        assertFalse(conn.isOpen());
        TestSlice afterClose = slice(Opcode.READ, local, 0, second.descriptor, 0, 4096);
        conn.post(afterClose);
        assertEquals(ErrorCode.PEER_FAILED, failure(afterClose));
    }

    @Test
    void bufferReplacedAtTheSameAddressIsRemapped() throws Exception {
        Remote old = remote(4096, Permission.READ_WRITE);
        Remote fresh = remote(4096, Permission.READ_WRITE);
        Patterns.fill(fresh.allocation.segment(), 0, 4096, 5);
        // the peer now publishes another file at the address it used before
        BufferDescriptor replaced = BufferDescriptor.builder().address(old.descriptor.address()).length(4096)
                .location(Location.CPU).permission(Permission.READ_WRITE).transports(List.of(ShmTransportProvider.ID))
                .attributes(Map.of(ShmTransportProvider.ID, fresh.descriptor.attributes(ShmTransportProvider.ID)))
                .build();
        TestLocalMemory.Buffer local = local(4096);
        ShmPeerConnection conn = (ShmPeerConnection) a.connect(segmentB(old.descriptor));
        readAll(conn, local, old.descriptor);
        conn.descriptorChanged(segmentB(replaced));
        readAll(conn, local, replaced);
        assertEquals(Patterns.crc(fresh.allocation.segment(), 0, 4096), Patterns.crc(local.segment(), 0, 4096));
        assertEquals(1, conn.mappedBufferCount());
    }

    // ------------------------------------------------------------------------------------------ queue and close

    @Test
    void closeFailsQueuedSlicesExactlyOnce() throws Exception {
        HeldWorkers held = new HeldWorkers();
        try (TestTransportContext base = context("c", Map.of())) {
            ShmTransport c = (ShmTransport) provider.create(new WorkersOverride(base, held));
            try {
                Remote remote = remote(1 << 20, Permission.READ_WRITE);
                TestLocalMemory.Buffer local = local(1 << 20);
                PeerConnection conn = c.connect(segmentB(remote.descriptor));
                List<TestSlice> queued = new ArrayList<>();
                for (int i = 0; i < 5; i++) {
                    TestSlice s = slice(Opcode.READ, local, 0, remote.descriptor, 0, 200_000);
                    conn.post(s);
                    queued.add(s);
                }
                assertTrue(queued.stream().noneMatch(s -> s.result().isDone()), "queued copies ran on the poster");
                assertFalse(held.tasks.isEmpty(), "no drain was scheduled");
                conn.close();
                for (TestSlice s : queued) {
                    assertEquals(ErrorCode.PEER_FAILED, failure(s));
                }
                held.runAll(); // the drain that was scheduled before close must not touch them again
                for (TestSlice s : queued) {
                    assertEquals(1, s.completions());
                }
                assertEquals(0, c.openConnectionCount());
            } finally {
                c.close();
            }
        }
    }

    @Test
    void deadlinePassingWhileQueuedFailsWithTimeout() throws Exception {
        HeldWorkers held = new HeldWorkers();
        ManualClock clock = new ManualClock();
        try (TestTransportContext base = context("c", Map.of())) {
            ShmTransport c = (ShmTransport) provider.create(new WorkersOverride(base.clock(clock), held));
            try {
                Remote remote = remote(1 << 20, Permission.READ_WRITE);
                TestLocalMemory.Buffer local = local(1 << 20);
                PeerConnection conn = c.connect(segmentB(remote.descriptor));
                long deadline = clock.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500);
                TestSlice s = new TestSlice(Opcode.READ, local, 0, remote.descriptor, remote.descriptor.address(),
                        1 << 20, deadline);
                conn.post(s);
                assertFalse(s.result().isDone());
                assertFalse(held.tasks.isEmpty(), "the copy was not queued for a worker");
                clock.advance(TimeUnit.MILLISECONDS.toNanos(500) + 1);
                held.runAll();
                TransferException e = failureException(s);
                assertEquals(ErrorCode.TIMEOUT, e.code());
                assertTrue(e.getMessage().endsWith("deadline passed while the copy was queued"), e.getMessage());
            } finally {
                c.close();
            }
        }
    }

    @Test
    void rejectedWorkersFailQueuedSlicesAsEngineClosed() throws Exception {
        try (TestTransportContext base = context("c", Map.of())) {
            Executor shutDown = command -> {
                throw new RejectedExecutionException("shut down");
            };
            ShmTransport c = (ShmTransport) provider.create(new WorkersOverride(base, shutDown));
            try {
                Remote remote = remote(1 << 20, Permission.READ_WRITE);
                TestLocalMemory.Buffer local = local(1 << 20);
                PeerConnection conn = c.connect(segmentB(remote.descriptor));
                TestSlice big = slice(Opcode.READ, local, 0, remote.descriptor, 0, 1 << 20);
                conn.post(big);
                assertEquals(ErrorCode.ENGINE_CLOSED, failure(big));
                TestSlice small = slice(Opcode.READ, local, 0, remote.descriptor, 0, 100);
                conn.post(small);
                small.result().get(10, TimeUnit.SECONDS); // inline copies need no worker
            } finally {
                c.close();
            }
        }
    }

    @Test
    void fullRingOverflowsToWorkersAndEverySliceLandsOnce() throws Exception {
        HeldWorkers held = new HeldWorkers();
        int count = ShmPeerConnection.QUEUE_CAPACITY + 50;
        long each = 64;
        try (TestTransportContext base = context("c", Map.of("copy_threshold", "0"))) {
            ShmTransport c = (ShmTransport) provider.create(new WorkersOverride(base, held));
            try {
                Remote remote = remote(count * each, Permission.READ_WRITE);
                TestLocalMemory.Buffer local = local(count * each);
                Patterns.fill(local.segment(), 0, count * each, 11);
                PeerConnection conn = c.connect(segmentB(remote.descriptor));
                List<TestSlice> slices = new ArrayList<>();
                for (int i = 0; i < count; i++) {
                    TestSlice s = slice(Opcode.WRITE, local, i * each, remote.descriptor, i * each, each);
                    conn.post(s);
                    slices.add(s);
                }
                assertTrue(slices.stream().noneMatch(s -> s.result().isDone()), "with threshold 0 nothing runs inline");
                held.runAll();
                for (TestSlice s : slices) {
                    s.result().get(10, TimeUnit.SECONDS);
                    assertEquals(1, s.completions());
                }
                assertEquals(Patterns.crc(local.segment(), 0, count * each),
                        Patterns.crc(remote.allocation.segment(), 0, count * each));
            } finally {
                c.close();
            }
        }
    }

    @Test
    void slicesRacingWithCloseEachFinishExactlyOnce() throws Exception {
        Remote remote = remote(4 << 20, Permission.READ_WRITE);
        TestLocalMemory.Buffer local = local(4 << 20);
        PeerConnection conn = a.connect(segmentB(remote.descriptor));
        ConcurrentLinkedQueue<TestSlice> posted = new ConcurrentLinkedQueue<>();
        CountDownLatch halfway = new CountDownLatch(2);
        ExecutorService posters = Executors.newFixedThreadPool(2);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                done.add(posters.submit(() -> {
                    // keep posting through close, and a while after it
                    int afterClose = 0;
                    for (int i = 0; afterClose < 50 && i < 1_000_000; i++) {
                        long n = (i % 3 == 0) ? 300_000 : 1000;
                        TestSlice s = slice(i % 2 == 0 ? Opcode.READ : Opcode.WRITE, local, 0, remote.descriptor,
                                (i * 4096L) % (3 << 20), n);
                        boolean closedBefore = !conn.isOpen();
                        conn.post(s);
                        posted.add(s);
                        if (closedBefore) {
                            afterClose++;
                        }
                        if (i == 200) {
                            halfway.countDown();
                        }
                    }
                }));
            }
            halfway.await(30, TimeUnit.SECONDS);
            conn.close();
            for (Future<?> f : done) {
                f.get(30, TimeUnit.SECONDS);
            }
        } finally {
            posters.shutdownNow();
        }
        int failed = 0;
        for (TestSlice s : posted) {
            try {
                s.result().get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                assertEquals(ErrorCode.PEER_FAILED, ((TransferException) e.getCause()).code(), e.getCause().getMessage());
                failed++;
            }
            assertEquals(1, s.completions());
        }
        assertTrue(failed >= 100, "slices posted after close must fail; failed " + failed);
    }

    @Test
    void inlinePathAllocatesNothingPerSlice() throws Exception {
        var threads = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        Remote remote = remote(1 << 16, Permission.READ_WRITE);
        TestLocalMemory.Buffer local = local(1 << 16);
        PeerConnection conn = a.connect(segmentB(remote.descriptor));
        int n = 20_000;
        for (int round = 0; round < 3; round++) { // the last round runs JIT-compiled
            TestSlice[] slices = new TestSlice[n];
            for (int i = 0; i < n; i++) {
                slices[i] = slice(i % 2 == 0 ? Opcode.READ : Opcode.WRITE, local, i % 1000, remote.descriptor,
                        (i * 7) % 1000, 4096);
            }
            long before = threads.getCurrentThreadAllocatedBytes();
            for (TestSlice s : slices) {
                conn.post(s);
            }
            long perSlice = (threads.getCurrentThreadAllocatedBytes() - before) / n;
            for (TestSlice s : slices) {
                assertTrue(s.result().isDone() && !s.result().isCompletedExceptionally());
            }
            if (round == 2) {
                // any object per slice is at least 16 bytes
                assertTrue(perSlice < 16, "inline post allocated " + perSlice + " bytes per slice");
            }
        }
    }

    // ------------------------------------------------------------------------------------------ registration, allocation

    @Test
    void registerBufferPublishesOnlyMemoryThisAllocatorMade() {
        TestLocalMemory.Buffer appMemory = ctxB.memory().register(arena.allocate(4096), Permission.READ_WRITE);
        assertEquals(Optional.empty(), b.registerBuffer(appMemory));

        Allocation fromA = a.allocator().orElseThrow().allocate(4096, Location.ANY);
        TestLocalMemory.Buffer foreign = ctxB.memory().register(fromA.segment(), Permission.READ_WRITE, fromA.backing());
        assertEquals(Optional.empty(), b.registerBuffer(foreign), "b must not publish a file a's allocator made");

        Allocation own = b.allocator().orElseThrow().allocate(4096, Location.cpu(0));
        TestLocalMemory.Buffer mine = ctxB.memory().register(own.segment(), Permission.READ_WRITE, own.backing());
        Map<String, String> attrs = b.registerBuffer(mine).orElseThrow();
        assertEquals(own.backing().get("path"), attrs.get("path"));
        assertEquals("4096", attrs.get("size"));
        assertEquals("0", attrs.get("offset"));
        assertTrue(own.backing().get("path").startsWith("/dev/shm/tent4j-" + ProcessHandle.current().pid() + "-"),
                own.backing().toString());
    }

    @Test
    void allocationIsZeroedMappedAndItsFileDeletedOnRelease() throws Exception {
        Allocation alloc = b.allocator().orElseThrow().allocate(10_000, Location.CPU);
        Path path = Path.of(alloc.backing().get("path"));
        assertEquals("10000", alloc.backing().get("size"));
        assertTrue(Files.isRegularFile(path));
        assertEquals(10_000, Files.size(path));
        assertTrue(Patterns.allEqual(alloc.segment(), 0, 10_000, (byte) 0));
        alloc.release().run();
        assertFalse(Files.exists(path), "file still there after release");
        alloc.release().run(); // a second release is harmless
    }

    @Test
    void transportCloseDeletesEveryFileItAllocated() throws Exception {
        List<Path> paths = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            paths.add(Path.of(b.allocator().orElseThrow().allocate(4096 + i, Location.CPU).backing().get("path")));
        }
        for (Path p : paths) {
            assertTrue(Files.exists(p));
        }
        b.close();
        for (Path p : paths) {
            assertFalse(Files.exists(p), p + " survived transport close");
        }
        TransferException e = assertThrows(TransferException.class,
                () -> b.allocator().orElseThrow().allocate(4096, Location.CPU));
        assertEquals(ErrorCode.ENGINE_CLOSED, e.code());
    }

    @Test
    void allocationLargerThanTheTmpfsFailsCleanlyWithTheCause() throws Exception {
        assumeTrue(LibC.isAvailable(), "needs posix_fallocate: " + LibC.unavailabilityCause());
        long before;
        try (var files = Files.list(Path.of(ShmTransportProvider.DEFAULT_DIR))) {
            before = files.count();
        }
        // tmpfs refuses a range beyond its size limit up front (before touching a page), so this is safe to try
        TransferException e = assertThrows(TransferException.class,
                () -> b.allocator().orElseThrow().allocate(1L << 44, Location.CPU));
        assertTrue(e.getMessage().contains("ENOSPC"), e.getMessage());
        try (var files = Files.list(Path.of(ShmTransportProvider.DEFAULT_DIR))) {
            assertEquals(before, files.count(), "a failed allocation left its file behind");
        }
    }

    @Test
    void allocatorRefusesDeviceLocationsAndBadSizes() {
        var allocator = b.allocator().orElseThrow();
        assertTrue(allocator.supports(Location.ANY));
        assertTrue(allocator.supports(Location.cpu(1)));
        assertFalse(allocator.supports(Location.parse("cuda:0")));
        assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(TransferException.class,
                () -> allocator.allocate(4096, Location.parse("cuda:0"))).code());
        assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(TransferException.class,
                () -> allocator.allocate(0, Location.CPU)).code());
    }

    // ------------------------------------------------------------------------------------------ helpers

    record Remote(Allocation allocation, TestLocalMemory.Buffer buffer, BufferDescriptor descriptor) {
    }

    static TestTransportContext context(String name, Map<String, String> options) {
        return new TestTransportContext(name, MACHINE, ShmTransportProvider.ID, new ShmTransportProvider().options(),
                options, Duration.ofSeconds(30));
    }

    private Remote remote(long size, Permission permission) {
        Allocation alloc = b.allocator().orElseThrow().allocate(size, Location.CPU);
        TestLocalMemory.Buffer buffer = ctxB.memory().register(alloc.segment(), permission, alloc.backing());
        Map<String, String> attrs = b.registerBuffer(buffer).orElseThrow();
        return new Remote(alloc, buffer, buffer.describe(ShmTransportProvider.ID, attrs));
    }

    private TestLocalMemory.Buffer local(long size) {
        return ctxA.memory().register(arena.allocate(Math.max(size, 1), 64), Permission.READ_WRITE);
    }

    static SegmentDescriptor segmentB(BufferDescriptor... buffers) {
        return SegmentDescriptor.builder().name("b").machineId(MACHINE).host("127.0.0.1").controlPort(0)
                .transports(List.of(ShmTransportProvider.ID)).transportAttributes(Map.of()).buffers(List.of(buffers))
                .version(1).build();
    }

    static TestSlice slice(Opcode op, TestLocalMemory.Buffer local, long localOffset, BufferDescriptor remote,
                           long remoteOffset, long length) {
        return new TestSlice(op, local, localOffset, remote, remote.address() + remoteOffset, length,
                System.nanoTime() + TIMEOUT_NANOS);
    }

    private static void readAll(PeerConnection conn, TestLocalMemory.Buffer local, BufferDescriptor remote)
            throws Exception {
        TestSlice s = slice(Opcode.READ, local, 0, remote, 0, remote.length());
        conn.post(s);
        s.result().get(30, TimeUnit.SECONDS);
    }

    static ErrorCode failure(TestSlice slice) throws Exception {
        return failureException(slice).code();
    }

    static TransferException failureException(TestSlice slice) throws Exception {
        CompletableFuture<Void> r = slice.result();
        ExecutionException e = assertThrows(ExecutionException.class, () -> r.get(30, TimeUnit.SECONDS));
        assertEquals(1, slice.completions());
        assertNotEquals(null, e.getCause());
        return (TransferException) e.getCause();
    }

    /** Workers that run nothing until told, so a test sees exactly what was queued. */
    static final class HeldWorkers implements Executor {
        final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();

        @Override
        public void execute(Runnable command) {
            tasks.add(command);
        }

        void runAll() {
            Runnable r;
            while ((r = tasks.poll()) != null) {
                r.run();
            }
        }
    }

    /** A test context with other workers. */
    record WorkersOverride(TestTransportContext base, Executor workers) implements TransportContext {
        @Override public String segmentName() { return base.segmentName(); }
        @Override public String host() { return base.host(); }
        @Override public String machineId() { return base.machineId(); }
        @Override public OptionValues options() { return base.options(); }
        @Override public LocalMemory localMemory() { return base.localMemory(); }
        @Override public ScheduledExecutorService scheduler() { return base.scheduler(); }
        @Override public ControlPlane controlPlane() { return base.controlPlane(); }
        @Override public Duration transferTimeout() { return base.transferTimeout(); }
        @Override public TimeSource clock() { return base.clock(); }
    }

    @Test
    void helpersDetectCorruption() {
        // guards against a checksum helper that always agrees
        MemorySegment x = arena.allocate(4096);
        MemorySegment y = arena.allocate(4096);
        Patterns.fill(x, 0, 4096, 1);
        Patterns.fill(y, 0, 4096, 1);
        assertEquals(Patterns.crc(x, 0, 4096), Patterns.crc(y, 0, 4096));
        assertEquals(Patterns.crcOfPattern(4096, 1), Patterns.crc(x, 0, 4096));
        y.set(JAVA_BYTE, 4000, (byte) (y.get(JAVA_BYTE, 4000) + 1));
        assertNotEquals(Patterns.crc(x, 0, 4096), Patterns.crc(y, 0, 4096));
    }
}
