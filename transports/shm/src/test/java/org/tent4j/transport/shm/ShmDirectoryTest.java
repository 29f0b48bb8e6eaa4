package org.tent4j.transport.shm;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.Location;
import org.tent4j.spi.MemoryAllocator.Allocation;
import org.tent4j.testkit.transport.TestTransportContext;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class ShmDirectoryTest {
    /** Above Linux's PID_MAX_LIMIT (4194304), so never a live process. */
    private static final long DEAD_PID = 9_999_999;

    @Test
    void recognisesOnlyAbsoluteNormalizedTent4jFileNames() {
        assertTrue(ShmDirectory.isShmFilePath(Path.of("/dev/shm/tent4j-123-00112233445566ff-0123456789abcdef")));
        assertFalse(ShmDirectory.isShmFilePath(Path.of("dev/shm/tent4j-123-00112233445566ff-0123456789abcdef")));
        assertFalse(ShmDirectory.isShmFilePath(Path.of("/dev/shm/../shm/tent4j-123-00112233445566ff-0123456789abcdef")));
        assertFalse(ShmDirectory.isShmFilePath(Path.of("/home/u/.bashrc")));
        assertFalse(ShmDirectory.isShmFilePath(Path.of("/dev/shm/tent4j-123-00112233445566ff-0123456789abcdef.x")));
        assertFalse(ShmDirectory.isShmFilePath(Path.of("/dev/shm/tent4j-probe-1-0123456789abcdef")));
        assertFalse(ShmDirectory.isShmFilePath(Path.of("/")));
    }

    @Test
    void refusesFilesOutsideTheDirectoryOrNamedForAnotherSegment() {
        ShmDirectory dir = new ShmDirectory(Path.of("/dev/shm"));
        String tagB = ShmDirectory.segmentTag("b");
        assertNull(dir.refusal(Path.of("/dev/shm/tent4j-1-" + tagB + "-0123456789abcdef"), "b"));
        assertTrue(dir.refusal(Path.of("/dev/shm/tent4j-1-" + tagB + "-0123456789abcdef"), "c")
                .contains("segment 'c' did not create it"));
        assertTrue(dir.refusal(Path.of("/tmp/tent4j-1-" + tagB + "-0123456789abcdef"), "b")
                .contains("outside this engine's shm directory /dev/shm"));
        assertTrue(dir.refusal(Path.of("/dev/shm/sub/tent4j-1-" + tagB + "-0123456789abcdef"), "b")
                .contains("outside"));
        assertTrue(dir.refusal(Path.of("/dev/shm/x/../tent4j-1-" + tagB + "-0123456789abcdef"), "b")
                .contains("not a tent4j shm file"));
        assertNotEquals(ShmDirectory.segmentTag("b"), ShmDirectory.segmentTag("c"));
    }

    @Test
    void sweepRemovesOnlyOldUnlockedFilesOfDeadProcesses(@TempDir Path dir) throws Exception {
        assumeTrue(LibC.isAvailable(), "flock needs native access: " + LibC.unavailabilityCause());
        FileTime old = FileTime.from(Instant.now().minus(Duration.ofMinutes(5)));
        Path stale = Files.createFile(dir.resolve("tent4j-" + DEAD_PID + "-00112233445566ff-00000000000000aa"));
        Files.setLastModifiedTime(stale, old);
        Path young = Files.createFile(dir.resolve("tent4j-" + DEAD_PID + "-00112233445566ff-00000000000000bb"));
        Path livePid = Files.createFile(dir.resolve("tent4j-" + ProcessHandle.current().pid() + "-00112233445566ff-00000000000000cc"));
        Files.setLastModifiedTime(livePid, old);
        Path locked = Files.createFile(dir.resolve("tent4j-" + DEAD_PID + "-00112233445566ff-00000000000000dd"));
        Files.setLastModifiedTime(locked, old);
        Path unrelated = Files.createFile(dir.resolve("tent4j-notes.txt"));
        Files.setLastModifiedTime(unrelated, old);

        // a live owner in another pid namespace: its pid means nothing here, but it holds the lock
        int fd = LibC.open(locked, LibC.O_RDWR | LibC.O_CLOEXEC, 0);
        try {
            assertTrue(LibC.flock(fd, LibC.LOCK_SH, locked));
            assertEquals(1, new ShmDirectory(dir).sweepStaleFiles());
        } finally {
            LibC.closeQuietly(fd);
        }
        assertFalse(Files.exists(stale), "stale file survived");
        assertTrue(Files.exists(young), "a file too young to judge was removed");
        assertTrue(Files.exists(livePid), "a live process's file was removed");
        assertTrue(Files.exists(locked), "a locked file was removed");
        assertTrue(Files.exists(unrelated), "a file not named by tent4j was removed");
    }

    @Test
    void liveAllocationHoldsItsLockSoAnotherProcessWouldNotSweepIt(@TempDir Path dir) throws Exception {
        assumeTrue(LibC.isAvailable(), "flock needs native access: " + LibC.unavailabilityCause());
        try (TestTransportContext ctx = new TestTransportContext("x", "m", "shm", new ShmTransportProvider().options(),
                Map.of("dir", dir.toString()), Duration.ofSeconds(5))) {
            var t = new ShmTransportProvider().create(ctx);
            Allocation alloc = t.allocator().orElseThrow().allocate(4096, Location.CPU);
            Path p = Path.of(alloc.backing().get("path"));
            int fd = LibC.open(p, LibC.O_RDWR | LibC.O_CLOEXEC, 0);
            try {
                assertFalse(LibC.flock(fd, LibC.LOCK_EX | LibC.LOCK_NB, p), "the owner holds no lock on its file");
                alloc.release().run();
                assertTrue(LibC.flock(fd, LibC.LOCK_EX | LibC.LOCK_NB, p), "release kept the lock");
            } finally {
                LibC.closeQuietly(fd);
            }
            t.close();
        }
    }

    @Test
    void creatingATransportSweepsItsDirectory(@TempDir Path dir) throws Exception {
        assumeTrue(LibC.isAvailable(), "flock needs native access: " + LibC.unavailabilityCause());
        Path stale = Files.createFile(dir.resolve("tent4j-" + DEAD_PID + "-00112233445566ff-0123456789abcdef"));
        Files.setLastModifiedTime(stale, FileTime.from(Instant.now().minus(Duration.ofHours(1))));
        try (TestTransportContext ctx = new TestTransportContext("x", "m", "shm", new ShmTransportProvider().options(),
                Map.of("dir", dir.toString()), Duration.ofSeconds(5))) {
            new ShmTransportProvider().create(ctx).close();
        }
        assertFalse(Files.exists(stale));
    }
}
