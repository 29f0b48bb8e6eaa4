package org.tent4j.transport.nvmeof;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.LocalFile;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Transport;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;
import org.tent4j.testkit.transport.TestTransportContext;
import org.tent4j.testkit.ManualClock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The transport without an engine: provider facts, options, and the exactly-once and close contracts. */
class NvmeofTransportTest {
    private static final long BASE = 1L << 60;

    @TempDir
    Path dir;

    private static TestTransportContext context(String segment, Map<String, String> options) {
        NvmeofTransportProvider p = new NvmeofTransportProvider();
        return new TestTransportContext(segment, "machine-1", p.id(), p.options(), options, Duration.ofSeconds(30));
    }

    private record File(Path path, long address, long length, Permission permission) implements LocalFile {
        @Override public int id() { return 1; }
    }

    @Test
    void providerSaysWhichEngineRunsHereAndWhyNotTheOthers() {
        NvmeofTransportProvider p = new NvmeofTransportProvider();
        assertTrue(p.availability().isAvailable(), "FileChannel I/O needs nothing");
        assertTrue(p.capabilities().supports(MemoryKind.CPU, MemoryKind.FILE));
        assertFalse(p.capabilities().supports(MemoryKind.CPU, MemoryKind.CPU));
        assertTrue(p.capabilities().sameHostOnly());
        String d = p.description();
        if (NvmeofTransportProvider.uringAvailability().isAvailable()) {
            assertTrue(d.contains("io_uring + O_DIRECT"), d);
        } else {
            assertTrue(d.contains("FileChannel (io_uring unavailable: "), d);
        }
        if (!NvmeofTransportProvider.gdsAvailability().isAvailable()) {
            assertTrue(d.contains("GDS unavailable: libcufile (GPUDirect Storage) not found (searched: libcufile.so.0"), d);
        }
    }

    @Test
    void aFailedRingSetupNamesTheCallAndErrno() {
        org.junit.jupiter.api.Assumptions.assumeTrue(LinuxIo.isAvailable());
        java.io.IOException e = assertThrows(java.io.IOException.class, () -> IoUring.open(0).close());
        assertTrue(e.getMessage().startsWith("io_uring_setup(0) failed: errno "), e.getMessage());
        if (NvmeofTransportProvider.uringAvailability().isAvailable()) {
            assertEquals("io_uring_setup(0) failed: errno 22 (EINVAL)", e.getMessage());
        }
    }

    @Test
    void badOptionsAreRejectedWithTheKeyNamed() {
        NvmeofTransportProvider p = new NvmeofTransportProvider();
        for (Map<String, String> bad : List.of(Map.of("engine", "spdk"), Map.of("alignment", "1000"), Map.of("rings", "0"),
                Map.of("bounce_size", "100"), Map.of("peer_roots", "relative/dir"), Map.of("queue_depth", "100000"))) {
            try (TestTransportContext c = context("opts", bad)) {
                ConfigException e = assertThrows(ConfigException.class, () -> p.create(c).close());
                assertTrue(e.getMessage().contains("transports.nvmeof." + bad.keySet().iterator().next()), e.getMessage());
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"io_uring", "filechannel"})
    void everySliceSettlesOnceAndCloseLeavesNoThreads(String engine) throws Exception {
        NvmeofTransportProvider p = new NvmeofTransportProvider();
        org.junit.jupiter.api.Assumptions.assumeTrue(!engine.equals("io_uring") || NvmeofTransportProvider.uringAvailability().isAvailable());
        TestTransportContext c = context("own", Map.of("engine", engine, "rings", "3", "queue_depth", "8"));
        NvmeofTransport t = (NvmeofTransport) p.create(c);
        List<Thread> threads = t.threads();
        assertEquals(3, threads.size());
        try (Arena arena = Arena.ofShared()) {
            Path path = dir.resolve("f.bin");
            java.nio.file.Files.write(path, new byte[8 << 20]);
            File f = new File(path, BASE, 8 << 20, Permission.READ_WRITE);
            Optional<Map<String, String>> attrs = t.registerFile(f);
            assertEquals(path.toString(), attrs.orElseThrow().get("path"));
            MemorySegment m = arena.allocate(8 << 20, 4096);
            TestLocalMemory.Buffer b = c.memory().register(m, Permission.READ_WRITE);
            assertTrue(t.registerBuffer(b).isPresent());
            BufferDescriptor fileBuffer = BufferDescriptor.builder().address(BASE).length(8 << 20)
                    .location(Location.FILE).permission(Permission.READ_WRITE).transports(List.of("nvmeof"))
                    .attributes(Map.of("nvmeof", attrs.get())).build();
            PeerConnection conn = t.connect(SegmentDescriptor.builder().name("own").machineId("machine-1")
                    .host("127.0.0.1").controlPort(1).transports(List.of("nvmeof")).transportAttributes(Map.of())
                    .buffers(List.of(fileBuffer)).version(1).build());
            assertEquals(3, conn.pathCount());
            List<PathSlice> slices = new ArrayList<>();
            for (int i = 0; i < 600; i++) {
                long len = 4096 + (i % 7) * 1000;
                PathSlice s = new PathSlice(new TestSlice(i % 2 == 0 ? Opcode.WRITE : Opcode.READ, b, (i * 8192L) % (4 << 20),
                        fileBuffer, BASE + (i * 12288L) % (4 << 20), len, Long.MAX_VALUE), i % 3);
                slices.add(s);
                conn.post(s);
            }
            TestSlice outside = new TestSlice(Opcode.READ, b, 0, fileBuffer, BASE + (16 << 20), 4096, Long.MAX_VALUE);
            conn.post(outside);
            TestSlice late = new TestSlice(Opcode.READ, b, 0, fileBuffer, BASE, 4096, System.nanoTime() - 1);
            conn.post(late);
            assertEquals(ErrorCode.TIMEOUT, ((TransferException) late.result().handle((v, e) -> e).get()).code());
            t.close(); // with slices still queued and in flight
            for (PathSlice s : slices) {
                assertTrue(s.slice.result().isDone(), "settled by close");
            }
            for (PathSlice s : slices) {
                s.slice.result().handle((v, e) -> {
                    if (e != null) {
                        ErrorCode code = ((TransferException) e).code();
                        assertEquals(ErrorCode.ENGINE_CLOSED, code, e.getMessage());
                    }
                    return null;
                }).get(1, TimeUnit.SECONDS);
                assertEquals(1, s.slice.completions());
            }
            assertEquals(ErrorCode.ADDRESS_NOT_REGISTERED, ((TransferException) outside.result().handle((v, e) -> e).get()).code());
            for (Thread th : threads) {
                th.join(5000);
                assertFalse(th.isAlive(), th.getName() + " outlived close()");
            }
            assertFalse(conn.isOpen());
        } finally {
            c.close();
        }
    }

    /** A {@link TestSlice} on a given path. */
    private record PathSlice(TestSlice slice, int path) implements org.tent4j.spi.Slice {
        @Override public Opcode opcode() { return slice.opcode(); }
        @Override public org.tent4j.spi.LocalBuffer localBuffer() { return slice.localBuffer(); }
        @Override public long localOffset() { return slice.localOffset(); }
        @Override public BufferDescriptor remoteBuffer() { return slice.remoteBuffer(); }
        @Override public long remoteAddress() { return slice.remoteAddress(); }
        @Override public long length() { return slice.length(); }
        @Override public long deadlineNanos() { return slice.deadlineNanos(); }
        @Override public void complete() { slice.complete(); }
        @Override public void fail(ErrorCode code, String message) { slice.fail(code, message); }
    }

    @Test
    void deadlineIsReadInTheEnginesClock() throws Exception {
        // the engine's clock runs an hour ahead of the system's, so the deadline has passed only in the engine's time
        long engineNow = System.nanoTime() + TimeUnit.HOURS.toNanos(1);
        ManualClock clock = new ManualClock(engineNow);
        try (TestTransportContext c = context("own", Map.of("engine", "filechannel", "rings", "1"));
             Arena arena = Arena.ofShared()) {
            Transport t = new NvmeofTransportProvider().create(c.clock(clock));
            try {
                Path path = dir.resolve("clock.bin");
                java.nio.file.Files.write(path, new byte[1 << 16]);
                Map<String, String> attrs = t.registerFile(new File(path, BASE, 1 << 16, Permission.READ_WRITE))
                        .orElseThrow();
                TestLocalMemory.Buffer b = c.memory().register(arena.allocate(1 << 16, 4096), Permission.READ_WRITE);
                BufferDescriptor fileBuffer = BufferDescriptor.builder().address(BASE).length(1 << 16)
                        .location(Location.FILE).permission(Permission.READ_WRITE).transports(List.of("nvmeof"))
                        .attributes(Map.of("nvmeof", attrs)).build();
                PeerConnection conn = t.connect(SegmentDescriptor.builder().name("own").machineId("machine-1")
                        .host("127.0.0.1").controlPort(1).transports(List.of("nvmeof")).transportAttributes(Map.of())
                        .buffers(List.of(fileBuffer)).version(1).build());
                TestSlice late = new TestSlice(Opcode.READ, b, 0, fileBuffer, BASE, 4096, engineNow - 1);
                conn.post(late);
                TransferException e = (TransferException) late.result().handle((v, x) -> x).get(20, TimeUnit.SECONDS);
                assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
                assertTrue(e.getMessage().endsWith("the deadline passed before it was posted"), e.getMessage());
            } finally {
                t.close();
            }
        }
    }

    @Test
    void peersOnAnotherMachineAreRefused() {
        try (TestTransportContext c = context("here", Map.of())) {
            Transport t = new NvmeofTransportProvider().create(c);
            TransferException e = assertThrows(TransferException.class, () -> t.connect(SegmentDescriptor.builder()
                    .name("there").machineId("machine-2").host("10.0.0.2").controlPort(1)
                    .transports(List.of("nvmeof")).transportAttributes(Map.of()).buffers(List.of()).version(1).build()));
            assertEquals(ErrorCode.PEER_UNREACHABLE, e.code());
            t.close();
        }
    }
}
