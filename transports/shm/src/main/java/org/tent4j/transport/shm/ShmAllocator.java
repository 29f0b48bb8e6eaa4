package org.tent4j.transport.shm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MemoryAllocator;

/**
 * Allocates host memory that other processes on this machine can map: one file per allocation in the shm directory,
 * mapped {@code READ_WRITE} into a shared arena. The file name (its path) is what peers need, so it is the
 * allocation's backing: {@code {"path": ..., "size": ...}}.
 *
 * <p>Files are deleted when the allocation is released, when the transport closes, and at JVM exit; files of
 * processes that died without any of these are removed by {@link ShmDirectory#sweepStaleFiles()}.
 *
 * <p>Files are created mode {@code 0600}: only processes of the same user can map them.
 */
final class ShmAllocator implements MemoryAllocator {
    private static final Logger LOG = LoggerFactory.getLogger(ShmAllocator.class);

    static final String PATH = "path";
    static final String SIZE = "size";

    private final ShmDirectory directory;
    private final Prefaulter prefaulter;
    private final String segmentName;
    private final Map<String, ShmFile> files = new ConcurrentHashMap<>();
    private volatile boolean closed;

    ShmAllocator(ShmDirectory directory, Prefaulter prefaulter, String segmentName) {
        this.directory = directory;
        this.prefaulter = prefaulter;
        this.segmentName = segmentName;
    }

    @Override
    public boolean supports(Location location) {
        return location.isAny() || location.kind() == MemoryKind.CPU;
    }

    @Override
    public Allocation allocate(long size, Location location) {
        if (!supports(location)) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "shm allocates host memory only; cannot allocate "
                    + size + " bytes at " + location);
        }
        if (size <= 0) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "shm allocation size must be > 0, got " + size);
        }
        if (closed) {
            throw new TransferException(ErrorCode.ENGINE_CLOSED, "shm transport is closed; cannot allocate " + size
                    + " bytes");
        }
        ShmFile file = ShmFile.create(directory.newFilePath(segmentName), size, prefaulter);
        files.put(file.path.toString(), file);
        if (closed) { // closeAll ran between the check above and the put
            file.release();
            throw new TransferException(ErrorCode.ENGINE_CLOSED, "shm transport closed while allocating " + size
                    + " bytes");
        }
        LOG.debug("allocated {} bytes at {} ({})", size, file.path, location);
        return Allocation.builder(file.segment, () -> release(file))
                .backing(Map.of(PATH, file.path.toString(), SIZE, Long.toString(size))).build();
    }

    /** The live file this allocator made at {@code path}, or {@code null}. */
    ShmFile find(String path) {
        return path == null ? null : files.get(path);
    }

    private void release(ShmFile file) {
        files.remove(file.path.toString(), file);
        file.release();
    }

    /** Releases every allocation still live; later {@link #allocate} calls fail. */
    void closeAll() {
        closed = true;
        List<ShmFile> live = new ArrayList<>(files.values());
        for (ShmFile f : live) {
            release(f);
        }
        if (!live.isEmpty()) {
            LOG.debug("released {} shm allocation(s) still live at close", live.size());
        }
    }

    /** One allocation: the file, its mapping, and (when libc is bound) the descriptor holding our shared flock. */
    static final class ShmFile {
        final Path path;
        final long size;
        final MemorySegment segment;
        private final Arena arena;
        private final int lockFd;
        // the owner writes its own pages too (a tcp target receiving into them, the store node's own copies)
        private final Prefaulter.Prefault prefault;
        private final AtomicBoolean released = new AtomicBoolean();

        private ShmFile(Path path, long size, MemorySegment segment, Arena arena, int lockFd, Prefaulter prefaulter) {
            this.path = path;
            this.size = size;
            this.segment = segment;
            this.arena = arena;
            this.lockFd = lockFd;
            this.prefault = prefaulter.start(segment, true, path.toString());
        }

        static ShmFile create(Path path, long size, Prefaulter prefaulter) {
            int fd = -1;
            boolean created = false;
            Arena arena = null;
            try {
                if (LibC.isAvailable()) {
                    // O_EXCL refuses an existing name and any symlink planted at it
                    fd = LibC.open(path, LibC.O_RDWR | LibC.O_CREAT | LibC.O_EXCL | LibC.O_CLOEXEC, 0600);
                    created = true;
                    LibC.flock(fd, LibC.LOCK_SH, path);
                    LibC.fallocate(fd, size, path);
                } else {
                    Files.createFile(path, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                    created = true;
                    long usable = Files.getFileStore(path).getUsableSpace();
                    if (usable < size) {
                        throw new IOException("only " + usable + " bytes are free in " + path.getParent());
                    }
                }
                JvmExitCleanup.track(path);
                arena = Arena.ofShared();
                MemorySegment segment;
                try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                    // extends the file to size when fallocate was not available
                    segment = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
                }
                return new ShmFile(path, size, segment, arena, fd, prefaulter);
            } catch (IOException | RuntimeException e) {
                if (arena != null) {
                    arena.close();
                }
                if (created) {
                    deleteQuietly(path);
                    JvmExitCleanup.untrack(path);
                }
                LibC.closeQuietly(fd);
                throw new TransferException(ErrorCode.INTERNAL, "cannot allocate " + size + " bytes of shared memory at "
                        + path + ": " + e.getMessage(), e);
            }
        }

        void release() {
            if (!released.compareAndSet(false, true)) {
                return;
            }
            prefault.stop();
            try {
                arena.close();
            } catch (IllegalStateException e) {
                // only if something acquired the arena (e.g. an NIO call on a buffer view); the mapping then lives
                // until exit, but the name must still go
                LOG.warn("could not unmap shm file {}: {}", path, e.toString());
            }
            deleteQuietly(path);
            JvmExitCleanup.untrack(path);
            LibC.closeQuietly(lockFd);
            LOG.debug("released shm file {}", path);
        }

        boolean isReleased() {
            return released.get();
        }

        private static void deleteQuietly(Path path) {
            try {
                Files.deleteIfExists(path);
            } catch (IOException e) {
                LOG.warn("could not delete shm file {}: {}", path, e.toString());
            }
        }
    }

    /** Deletes this JVM's live shm files when it exits, so an engine that was never closed leaves nothing behind. */
    static final class JvmExitCleanup {
        private static final Set<Path> LIVE = ConcurrentHashMap.newKeySet();

        static {
            Thread hook = Thread.ofPlatform().name("tent4j-shm-cleanup").unstarted(() -> {
                for (Path p : LIVE) {
                    try {
                        // unlink only: mappings stay valid in this and other processes, the name is what leaks
                        Files.deleteIfExists(p);
                    } catch (IOException | RuntimeException ignored) {
                        // best effort at exit; the stale-file sweep catches what is left
                    }
                }
            });
            Runtime.getRuntime().addShutdownHook(hook);
        }

        private JvmExitCleanup() {
        }

        static void track(Path p) {
            LIVE.add(p);
        }

        static void untrack(Path p) {
            LIVE.remove(p);
        }
    }
}
