package org.tent4j.transport.nvmeof;

import java.io.RandomAccessFile;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.tent4j.api.BufferInfo;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredFile;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.SegmentInfo;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * File segments end to end through a real engine (te-runtime) and the nvmeof transport, once per I/O engine:
 * io_uring (O_DIRECT, bounce buffers) and FileChannel.
 */
class FileSegmentEngineTest {
    private static final long MIB = 1 << 20;

    @TempDir
    Path dir;

    static TransferEngine engine(String ioEngine, String name, String extra) {
        EngineConfig.Builder b = EngineConfig.builder()
                .set(EngineConfig.SEGMENT_NAME, name)
                .set(EngineConfig.METADATA_URI, "memory://files-" + name.split("-")[0])
                .set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set(EngineConfig.TRANSPORTS_ENABLED, "nvmeof")
                .set(EngineConfig.SLICE_SIZE, "1m")
                .set(EngineConfig.WORKERS, 2)
                .set("transports.nvmeof.engine", ioEngine);
        if (extra != null) {
            b.set("transports.nvmeof.peer_roots", extra);
        }
        return TransferEngine.create(b.build());
    }

    static void fill(MemorySegment m, long seed) {
        Random r = new Random(seed);
        byte[] chunk = new byte[8192];
        for (long off = 0; off < m.byteSize(); off += chunk.length) {
            r.nextBytes(chunk);
            int n = (int) Math.min(chunk.length, m.byteSize() - off);
            MemorySegment.copy(chunk, 0, m, java.lang.foreign.ValueLayout.JAVA_BYTE, off, n);
        }
    }

    static long crc(MemorySegment m) {
        CRC32C c = new CRC32C();
        c.update(m.asByteBuffer());
        return c.getValue();
    }

    private static TransferStatus write(TransferEngine e, MemorySegment local, SegmentHandle seg, long target) {
        return e.transfer(TransferRequest.write(local, seg, target));
    }

    private static TransferStatus read(TransferEngine e, MemorySegment local, SegmentHandle seg, long target) {
        return e.transfer(TransferRequest.read(local, seg, target));
    }

    private static void ok(TransferStatus s) {
        assertEquals(TransferState.COMPLETED, s.state(), () -> s.toString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"io_uring", "filechannel"})
    void alignedAndUnalignedRangesKeepTheirBytes(String io) throws Exception {
        try (TransferEngine e = engine(io, "crc-" + io, null)) {
            RegisteredFile f = e.registerFile(dir.resolve("data.bin"), 16 * MIB, Permission.READ_WRITE);
            RegisteredMemory src = e.allocate(8 * MIB, Location.CPU, Permission.READ_WRITE);
            RegisteredMemory dst = e.allocate(8 * MIB, Location.CPU, Permission.READ_WRITE);
            SegmentHandle self = e.localSegment();
            // {memory offset, file offset, length}: aligned, unaligned in each coordinate, multi-slice, one byte
            long[][] cases = {
                    {0, 0, 4096}, {0, 8192, 3 * MIB}, {4096, 1 * MIB, 4 * MIB + 4096},
                    {1, 4096, 4096}, {0, 4097, 4096}, {0, 4096, 4095}, {7, 13, 1}, {123, 5 * MIB + 777, 2 * MIB + 12345},
                    {0, 16 * MIB - 100, 100}, {4096, 3 * MIB - 1, 1 * MIB + 2},
            };
            int i = 0;
            for (long[] c : cases) {
                MemorySegment s = src.segment().asSlice(c[0], c[2]);
                MemorySegment d = dst.segment().asSlice(c[0], c[2]);
                fill(s, ++i);
                d.fill((byte) 0);
                ok(write(e, s, self, f.address() + c[1]));
                ok(read(e, d, self, f.address() + c[1]));
                assertEquals(crc(s), crc(d), "case mem+" + c[0] + " file+" + c[1] + " len " + c[2] + " (" + io + ")");
            }
            // what landed in the file is what was written, read back without the engine
            MemorySegment last = src.segment().asSlice(cases[cases.length - 1][0], cases[cases.length - 1][2]);
            byte[] onDisk = new byte[(int) last.byteSize()];
            try (RandomAccessFile raf = new RandomAccessFile(f.path().toFile(), "r")) {
                raf.seek(cases[cases.length - 1][1]);
                raf.readFully(onDisk);
            }
            assertEquals(crc(last), crc(MemorySegment.ofArray(onDisk)));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"io_uring", "filechannel"})
    void sparseFileLargerThanOneGib(String io) throws Exception {
        try (TransferEngine e = engine(io, "big-" + io, null)) {
            long size = 3L << 30;
            RegisteredFile f = e.registerFile(dir.resolve("big.bin"), size, Permission.READ_WRITE);
            assertEquals(size, Files.size(f.path()));
            Process stat = new ProcessBuilder("stat", "-c", "%b", f.path().toString()).start();
            long blocks = Long.parseLong(new String(stat.getInputStream().readAllBytes()).strip());
            assertTrue(blocks < 1024, "file is sparse: " + blocks + " blocks");
            RegisteredMemory m = e.allocate(4 * MIB, Location.CPU, Permission.READ_WRITE);
            MemorySegment s = m.segment().asSlice(0, 2 * MIB);
            MemorySegment d = m.segment().asSlice(2 * MIB, 2 * MIB);
            fill(s, 42);
            long[] offsets = {(5L << 29) + 4096, size - 2 * MIB, (2L << 30) - MIB + 3};
            for (long off : offsets) {
                ok(write(e, s, e.localSegment(), f.address() + off));
                d.fill((byte) 1);
                ok(read(e, d, e.localSegment(), f.address() + off));
                assertEquals(crc(s), crc(d), "offset " + off);
            }
            d.fill((byte) 1);
            ok(read(e, d, e.localSegment(), f.address() + MIB)); // a hole reads as zeros
            assertEquals(crc(MemorySegment.ofArray(new byte[(int) (2 * MIB)])), crc(d));
            TransferStatus past = read(e, d, e.localSegment(), f.address() + size - MIB);
            assertEquals(TransferState.INVALID, past.state());
            assertEquals(ErrorCode.OUT_OF_BOUNDS, past.error());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"io_uring", "filechannel"})
    void concurrentReadersAndWriters(String io) throws Exception {
        int threads = 4;
        long region = 2 * MIB;
        try (TransferEngine e = engine(io, "conc-" + io, null);
             ExecutorService pool = Executors.newFixedThreadPool(threads * 2)) {
            RegisteredFile f = e.registerFile(dir.resolve("conc.bin"), threads * region * 2, Permission.READ_WRITE);
            RegisteredMemory m = e.allocate(threads * region * 3, Location.CPU, Permission.READ_WRITE);
            // the second half of the file holds fixed data the readers check while the writers work on the first half
            MemorySegment fixed = m.segment().asSlice(threads * region * 2, threads * region);
            fill(fixed, 7);
            ok(write(e, fixed, e.localSegment(), f.address() + threads * region));
            CyclicBarrier start = new CyclicBarrier(threads * 2);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int id = t;
                done.add(pool.submit(() -> {
                    MemorySegment s = m.segment().asSlice(id * region, region / 2 - 1024);
                    MemorySegment d = m.segment().asSlice(id * region + region / 2, region / 2 - 1024);
                    start.await();
                    for (int round = 0; round < 8; round++) {
                        fill(s, id * 100 + round);
                        long at = f.address() + id * region + (round % 2) * (region / 2) + (id % 2 == 0 ? 0 : 511);
                        ok(write(e, s, e.localSegment(), at));
                        ok(read(e, d, e.localSegment(), at));
                        assertEquals(crc(s), crc(d), "writer " + id + " round " + round);
                    }
                    return null;
                }));
                done.add(pool.submit(() -> {
                    RegisteredMemory mine = e.allocate(region, Location.CPU, Permission.READ_WRITE);
                    start.await();
                    for (int round = 0; round < 8; round++) {
                        long off = ((id + round) % threads) * region + (round % 3) * 333;
                        MemorySegment d = mine.segment().asSlice(0, region - 1000);
                        ok(read(e, d, e.localSegment(), f.address() + threads * region + off));
                        assertEquals(crc(fixed.asSlice(off, region - 1000)), crc(d), "reader " + id + " round " + round);
                    }
                    e.unregister(mine);
                    return null;
                }));
            }
            for (Future<?> d : done) {
                d.get();
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"io_uring", "filechannel"})
    void removedOrTruncatedFileFailsTheTransferWithTheCause(String io) throws Exception {
        try (TransferEngine e = engine(io, "gone-" + io, null)) {
            RegisteredFile removed = e.registerFile(dir.resolve("removed.bin"), 4 * MIB, Permission.READ_WRITE);
            RegisteredFile truncated = e.registerFile(dir.resolve("truncated.bin"), 4 * MIB, Permission.READ_WRITE);
            RegisteredMemory m = e.allocate(2 * MIB, Location.CPU, Permission.READ_WRITE);
            ok(write(e, m.segment(), e.localSegment(), removed.address()));
            ok(write(e, m.segment(), e.localSegment(), truncated.address()));

            Files.delete(removed.path());
            for (TransferStatus s : List.of(read(e, m.segment(), e.localSegment(), removed.address() + 4096),
                    write(e, m.segment(), e.localSegment(), removed.address()))) {
                assertEquals(TransferState.FAILED, s.state(), s::toString);
                assertTrue(s.message().contains(removed.path().toString()) && s.message().contains("removed"), s.message());
                assertTrue(s.message().contains("offset") && s.message().contains("length"), s.message());
            }

            try (RandomAccessFile raf = new RandomAccessFile(truncated.path().toFile(), "rw")) {
                raf.setLength(MIB);
            }
            TransferStatus beyond = read(e, m.segment(), e.localSegment(), truncated.address() + 2 * MIB);
            assertEquals(TransferState.FAILED, beyond.state(), beyond::toString);
            assertTrue(beyond.message().contains(truncated.path().toString()) && beyond.message().contains("truncated"), beyond.message());
            TransferStatus within = read(e, m.segment().asSlice(0, 4096), e.localSegment(), truncated.address());
            assertEquals(TransferState.FAILED, within.state(), within::toString);
            assertTrue(within.message().contains("truncated below its registered length"), within.message());
        }
    }

    @Test
    void segmentHoldsMemoryAndFilesAndRegistrationChecksItsInput() throws Exception {
        try (TransferEngine e = engine("auto", "mixed-x", null)) {
            RegisteredMemory m = e.allocate(MIB, Location.CPU, Permission.READ_WRITE);
            Path existing = dir.resolve("existing.bin");
            Files.write(existing, new byte[12345]);
            RegisteredFile a = e.registerFile(existing, 0, Permission.READ_ONLY);
            RegisteredFile b = e.registerFile(dir.resolve("new.bin"), MIB, Permission.READ_WRITE);
            assertEquals(12345, a.length());
            assertTrue(a.address() >= 1L << 60 && b.address() > a.address() + a.length());
            SegmentInfo info = e.segmentInfo(e.localSegment());
            List<MemoryKind> kinds = info.buffers().stream().map(x -> x.location().kind()).toList();
            assertTrue(kinds.contains(MemoryKind.CPU) && kinds.stream().filter(k -> k == MemoryKind.FILE).count() == 2, kinds::toString);
            BufferInfo fa = info.buffers().stream().filter(x -> x.address() == a.address()).findFirst().orElseThrow();
            assertEquals(List.of("nvmeof"), fa.transports());

            TransferStatus denied = write(e, m.segment().asSlice(0, 100), e.localSegment(), a.address());
            assertEquals(ErrorCode.PERMISSION_DENIED, denied.error(), denied::toString);
            ok(read(e, m.segment().asSlice(0, 12345), e.localSegment(), a.address()));

            assertThrows(TransferException.class, () -> e.registerFile(existing, 0, Permission.READ_ONLY));
            assertThrows(TransferException.class, () -> e.registerFile(dir.resolve("x"), MIB, Permission.LOCAL_ONLY));
            assertThrows(TransferException.class, () -> e.registerFile(dir, 0, Permission.READ_ONLY));
            TransferException missing = assertThrows(TransferException.class, () -> e.registerFile(dir.resolve("missing"), 0, Permission.READ_ONLY));
            assertTrue(missing.getMessage().contains("missing"), missing.getMessage());

            // a file registered after the loopback connection opened is reachable at once
            RegisteredFile later = e.registerFile(dir.resolve("later.bin"), MIB, Permission.READ_WRITE);
            ok(write(e, m.segment().asSlice(0, 4096), e.localSegment(), later.address() + 8192));
            e.unregisterFile(later);

            e.unregisterFile(b);
            TransferStatus gone = read(e, m.segment().asSlice(0, 100), e.localSegment(), b.address());
            assertEquals(ErrorCode.ADDRESS_NOT_REGISTERED, gone.error(), gone::toString);
            assertTrue(Files.exists(b.path()), "unregistering keeps the file");
        }
    }

    @Test
    void aSameHostPeerWithoutPeerRootsReadsTheFileOverTcpInstead() throws Exception {
        try (TransferEngine owner = TransferEngine.create(withTcp("tcp-owner"));
             TransferEngine reader = TransferEngine.create(withTcp("tcp-reader"))) {
            byte[] content = new byte[(int) (2 * MIB)];
            new Random(17).nextBytes(content);
            Files.write(dir.resolve("served.bin"), content);
            RegisteredFile f = owner.registerFile(dir.resolve("served.bin"), 0, Permission.READ_ONLY);
            RegisteredMemory m = reader.allocate(MIB, Location.CPU, Permission.READ_WRITE);
            SegmentHandle seg = reader.openSegment("tcp-owner");
            for (int round = 0; round < 2; round++) { // the second finds nvmeof's connection refused already
                m.segment().fill((byte) 0);
                ok(read(reader, m.segment(), seg, f.address() + round * MIB));
                assertEquals(crc(MemorySegment.ofArray(content).asSlice(round * MIB, MIB)), crc(m.segment()),
                        "bytes of round " + round);
            }
        }
    }

    /** nvmeof (without peer_roots) and tcp. */
    private static EngineConfig withTcp(String name) {
        return EngineConfig.builder().set(EngineConfig.SEGMENT_NAME, name)
                .set(EngineConfig.METADATA_URI, "memory://files-tcp").set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set(EngineConfig.TRANSPORTS_ENABLED, "nvmeof,tcp").set(EngineConfig.WORKERS, 2).build();
    }

    @Test
    void samehostPeerReadsAFileOnlyUnderItsPeerRoots() throws Exception {
        try (TransferEngine owner = engine("auto", "peer-owner", null);
             TransferEngine refused = engine("auto", "peer-refused", null);
             TransferEngine allowed = engine("auto", "peer-allowed", dir.toString())) {
            byte[] content = new byte[(int) (4 * MIB)];
            new Random(99).nextBytes(content);
            Files.write(dir.resolve("shared.bin"), content);
            RegisteredFile f = owner.registerFile(dir.resolve("shared.bin"), 0, Permission.READ_ONLY);
            MemorySegment expected = MemorySegment.ofArray(content).asSlice(4096, MIB);
            RegisteredMemory d1 = refused.allocate(MIB, Location.CPU, Permission.READ_WRITE);
            TransferStatus no = read(refused, d1.segment(), refused.openSegment("peer-owner"), f.address() + 4096);
            assertEquals(TransferState.FAILED, no.state(), no::toString);
            assertTrue(no.message().contains("peer_roots"), no.message());

            RegisteredMemory d2 = allowed.allocate(MIB, Location.CPU, Permission.READ_WRITE);
            SegmentHandle seg = allowed.openSegment("peer-owner");
            ok(read(allowed, d2.segment(), seg, f.address() + 4096));
            assertEquals(crc(expected), crc(d2.segment()));
            TransferStatus w = write(allowed, d2.segment(), seg, f.address());
            assertEquals(ErrorCode.PERMISSION_DENIED, w.error(), w::toString);
            CompletableFuture<TransferStatus> cf = allowed.submit(TransferRequest.read(d2.segment(), seg, f.address() + 4 * MIB - 10));
            assertEquals(ErrorCode.OUT_OF_BOUNDS, cf.get().error());

            // a file replaced at the same path is not the file the owner registered: a peer opening it now refuses.
            // The owner still holds the old file open, so its inode cannot be reused for the new one.
            Files.delete(f.path());
            Files.write(f.path(), content);
            try (TransferEngine late = engine("auto", "peer-late", dir.toString())) {
                RegisteredMemory d3 = late.allocate(MIB, Location.CPU, Permission.READ_WRITE);
                TransferStatus replaced = read(late, d3.segment(), late.openSegment("peer-owner"), f.address());
                assertEquals(TransferState.FAILED, replaced.state(), replaced::toString);
                assertTrue(replaced.message().contains("replaced?") && replaced.message().contains(f.path().toString()),
                        replaced.message());
            }
        }
    }
}
