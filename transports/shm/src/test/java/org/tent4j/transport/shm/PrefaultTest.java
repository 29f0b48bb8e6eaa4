package org.tent4j.transport.shm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.MemoryAllocator.Allocation;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;
import org.tent4j.testkit.transport.TestTransportContext;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Fresh mappings have their page tables populated in the background, within a budget. Observed the way the kernel
 * sees it: the resident size of each mapping in {@code /proc/self/smaps}, which counts only pages this process has in
 * its page tables (a peer's pages exist in the shm file either way).
 */
class PrefaultTest {
    private static final long MIB = 1L << 20;

    private final java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared();
    private TestTransportContext ctxA;
    private TestTransportContext ctxB;
    private ShmTransport a;
    private ShmTransport b;

    private void start(String limitA, String limitB) {
        ShmTransportProvider provider = new ShmTransportProvider();
        ctxA = ShmTransportTest.context("a", Map.of("prefault_limit", limitA));
        ctxB = ShmTransportTest.context("b", Map.of("prefault_limit", limitB));
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

    @Test
    void aPeersBufferIsPopulatedAfterItsFirstSliceReadWriteAndReadOnlyAlike() throws Exception {
        assumeTrue(populateSupported(), "this kernel has no MADV_POPULATE_WRITE (Linux 5.14+)");
        start("4g", "0");
        BufferDescriptor writable = remote(64 * MIB, Permission.READ_WRITE);
        BufferDescriptor readOnly = remote(32 * MIB, Permission.READ_ONLY);
        ShmPeerConnection conn = (ShmPeerConnection) a.connect(ShmTransportTest.segmentB(writable, readOnly));
        TestLocalMemory.Buffer local = ctxA.memory().register(arena.allocate(4096, 64), Permission.READ_WRITE);

        readFirstPage(conn, local, writable);
        readFirstPage(conn, local, readOnly);
        a.prefaulter().idle().get(30, TimeUnit.SECONDS);

        assertEquals(96 * MIB, a.prefaulter().populatedBytes());
        List<long[]> mapped = conn.mappedRanges();
        assertEquals(2, mapped.size());
        for (long[] range : mapped) {
            assertEquals(range[1], residentBytes(range[0]), "resident bytes of the mapping at 0x"
                    + Long.toHexString(range[0]) + " after its first 4 KiB read");
        }
        conn.close();
        assertEquals(0, a.prefaulter().populatedBytes(), "unmapping gives the budget back");
    }

    @Test
    void theBudgetCapsWhatIsPopulatedAndComesBackWhenAMappingGoes() throws Exception {
        assumeTrue(populateSupported(), "this kernel has no MADV_POPULATE_WRITE (Linux 5.14+)");
        start("32m", "0");
        BufferDescriptor first = remote(64 * MIB, Permission.READ_WRITE);
        TestLocalMemory.Buffer local = ctxA.memory().register(arena.allocate(4096, 64), Permission.READ_WRITE);
        ShmPeerConnection conn = (ShmPeerConnection) a.connect(ShmTransportTest.segmentB(first));
        readFirstPage(conn, local, first);
        a.prefaulter().idle().get(30, TimeUnit.SECONDS);
        assertEquals(32 * MIB, a.prefaulter().populatedBytes());
        long resident = residentBytes(conn.mappedRanges().get(0)[0]);
        assertTrue(resident >= 32 * MIB && resident < 33 * MIB, "resident bytes of a 64 MiB mapping with a 32 MiB "
                + "budget: " + resident);
        conn.close();
        assertEquals(0, a.prefaulter().populatedBytes());

        ShmPeerConnection again = (ShmPeerConnection) a.connect(ShmTransportTest.segmentB(first));
        readFirstPage(again, local, first);
        a.prefaulter().idle().get(30, TimeUnit.SECONDS);
        assertEquals(32 * MIB, a.prefaulter().populatedBytes(), "the budget given back serves the next mapping");
        again.close();
    }

    @Test
    void theOwnersAllocationIsPopulatedUntilReleased() throws Exception {
        assumeTrue(populateSupported(), "this kernel has no MADV_POPULATE_WRITE (Linux 5.14+)");
        start("0", "4g");
        Allocation alloc = b.allocator().orElseThrow().allocate(48 * MIB, Location.CPU);
        b.prefaulter().idle().get(30, TimeUnit.SECONDS);
        assertEquals(48 * MIB, b.prefaulter().populatedBytes());
        assertEquals(48 * MIB, residentBytes(alloc.segment().address()));
        alloc.release().run();
        assertEquals(0, b.prefaulter().populatedBytes());
        assertEquals(0, a.prefaulter().populatedBytes(), "prefault_limit=0 populates nothing");
    }

    private BufferDescriptor remote(long size, Permission permission) {
        Allocation alloc = b.allocator().orElseThrow().allocate(size, Location.CPU);
        TestLocalMemory.Buffer buffer = ctxB.memory().register(alloc.segment(), permission, alloc.backing());
        return buffer.describe(ShmTransportProvider.ID, b.registerBuffer(buffer).orElseThrow());
    }

    private static void readFirstPage(ShmPeerConnection conn, TestLocalMemory.Buffer local, BufferDescriptor remote)
            throws Exception {
        TestSlice s = ShmTransportTest.slice(Opcode.READ, local, 0, remote, 0, 4096);
        conn.post(s);
        s.result().get(30, TimeUnit.SECONDS);
    }

    /** Whether madvise knows MADV_POPULATE_WRITE here (Linux 5.14+): asked on a small fresh mapping. */
    private static boolean populateSupported() {
        try (java.lang.foreign.Arena probe = java.lang.foreign.Arena.ofConfined()) {
            java.lang.foreign.MemorySegment page = probe.allocate(2 * LibC.pageSize(), LibC.pageSize());
            return LibC.madvise(page.asSlice(0, LibC.pageSize()), LibC.MADV_POPULATE_WRITE) == 0;
        }
    }

    /** The Rss of the mapping that starts at {@code address}, from /proc/self/smaps. */
    private static long residentBytes(long address) throws IOException {
        String start = Long.toHexString(address) + "-";
        List<String> lines = Files.readAllLines(Path.of("/proc/self/smaps"));
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).startsWith(start)) {
                for (int j = i + 1; j < lines.size(); j++) {
                    String line = lines.get(j);
                    if (line.startsWith("Rss:")) {
                        return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                    }
                }
            }
        }
        throw new AssertionError("no mapping starts at 0x" + Long.toHexString(address) + " in /proc/self/smaps");
    }
}
