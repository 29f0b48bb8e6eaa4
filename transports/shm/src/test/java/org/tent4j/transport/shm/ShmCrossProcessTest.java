package org.tent4j.transport.shm;

import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.testkit.ChildJvm;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;
import org.tent4j.testkit.transport.TestTransportContext;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A second JVM owns the shm memory; this one maps it through the transport and reads and writes it. */
class ShmCrossProcessTest {

    @Test
    void readsAndWritesAnotherProcesssSharedMemory(@TempDir Path stderr) throws Exception {
        long size = (4L << 20) + 123; // odd size: the mapping must not round anything
        ChildJvm child = startChild(size, stderr.resolve("child.err"));
        ShmTransportProvider provider = new ShmTransportProvider();
        try (TestTransportContext ctx = ShmTransportTest.context("a", Map.of());
             Arena arena = Arena.ofShared()) {
            String ready = child.next(ChildJvm.DEFAULT_TIMEOUT);
            String[] f = ready.split(" ");
            assertEquals("READY", f[0], ready);
            Path path = Path.of(f[1]);
            assertTrue(Files.exists(path));
            assertEquals(Long.toString(size), f[2]);
            BufferDescriptor remote = BufferDescriptor.builder().address(Long.parseLong(f[4])).length(size)
                    .location(Location.CPU).permission(Permission.READ_WRITE)
                    .transports(List.of(ShmTransportProvider.ID))
                    .attributes(Map.of(ShmTransportProvider.ID, Map.of("path", f[1], "size", f[2], "offset", f[3])))
                    .build();
            SegmentDescriptor segment = SegmentDescriptor.builder().name("child").machineId(ShmTransportTest.MACHINE)
                    .host("127.0.0.1").controlPort(0).transports(List.of(ShmTransportProvider.ID))
                    .transportAttributes(Map.of()).buffers(List.of(remote)).version(1).build();

            ShmTransport transport = (ShmTransport) provider.create(ctx);
            try {
                PeerConnection conn = transport.connect(segment);
                TestLocalMemory.Buffer local = ctx.memory().register(arena.allocate(size + 16, 64),
                        Permission.READ_WRITE);

                // READ everything the child wrote, in 1 MiB slices (queued) plus the odd tail (inline)
                transferInSlices(conn, Opcode.READ, local, 3, remote, 0, size);
                assertEquals(Patterns.crcOfPattern(size, ShmChildProcess.PATTERN_SEED),
                        Patterns.crc(local.segment(), 3, size), "bytes read from the child differ from its pattern");

                // WRITE a new pattern into the child's memory past an untouched prefix; the child checks it
                long writeOffset = 1001;
                long writeLength = size - 3000;
                Patterns.fill(local.segment(), 5, writeLength, 77);
                transferInSlices(conn, Opcode.WRITE, local, 5, remote, writeOffset, writeLength);
                long crc = Patterns.crc(local.segment(), 5, writeLength);
                String verdict = child.ask("VERIFY " + writeOffset + " " + writeLength + " " + crc);
                assertEquals("VERIFIED", verdict, child::stderrTail);
                assertTrue(child.process().waitFor(60, TimeUnit.SECONDS), "child did not exit");
                assertEquals(0, child.process().exitValue(), child::stderrTail);
                assertFalse(Files.exists(path), "the child's shm file survived its transport close");

                // the child is gone and its file unlinked: our mapping still holds the pages, new mappings fail
                conn.descriptorChanged(SegmentDescriptor.builder().name("child").machineId(ShmTransportTest.MACHINE)
                        .host("127.0.0.1").controlPort(0).transports(List.of(ShmTransportProvider.ID))
                        .transportAttributes(Map.of()).buffers(List.of()).version(2).build());
                TestSlice after = ShmTransportTest.slice(Opcode.READ, local, 0, remote, 0, 64);
                conn.post(after);
                assertEquals(org.tent4j.api.ErrorCode.PEER_FAILED, ShmTransportTest.failure(after));
            } finally {
                transport.close();
            }
        } finally {
            child.terminate(); // SIGTERM first: the child's exit hook unlinks its file
        }
    }

    @Test
    void childKilledWithSigtermLeavesNoFile(@TempDir Path stderr) throws Exception {
        ChildJvm child = startChild(4096, stderr.resolve("child.err"));
        try {
            Path path = Path.of(child.next(ChildJvm.DEFAULT_TIMEOUT).split(" ")[1]);
            assertTrue(Files.exists(path));
            child.process().destroy(); // SIGTERM: the transport is never closed, only the JVM exit hook runs
            assertTrue(child.process().waitFor(30, TimeUnit.SECONDS), "child ignored SIGTERM");
            assertFalse(Files.exists(path), "the exit hook did not delete " + path);
        } finally {
            child.kill();
        }
    }

    private static ChildJvm startChild(long size, Path stderr) throws java.io.IOException {
        return ChildJvm.builder(ShmChildProcess.class).heap("96m").stderr(stderr)
                .args(ShmTransportProvider.DEFAULT_DIR, Long.toString(size)).start();
    }

    private static void transferInSlices(PeerConnection conn, Opcode op, TestLocalMemory.Buffer local,
                                         long localOffset, BufferDescriptor remote, long remoteOffset, long length)
            throws Exception {
        List<TestSlice> slices = new ArrayList<>();
        long chunk = 1L << 20;
        for (long at = 0; at < length; at += chunk) {
            long n = Math.min(chunk, length - at);
            TestSlice s = ShmTransportTest.slice(op, local, localOffset + at, remote, remoteOffset + at, n);
            conn.post(s);
            slices.add(s);
        }
        for (TestSlice s : slices) {
            s.result().get(60, TimeUnit.SECONDS);
            assertEquals(1, s.completions());
        }
    }
}
