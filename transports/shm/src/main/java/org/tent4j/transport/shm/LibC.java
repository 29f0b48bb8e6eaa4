package org.tent4j.transport.shm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The few libc calls that {@link java.nio.channels.FileChannel} does not offer: {@code posix_fallocate}, so a tmpfs
 * file's pages are reserved up front (a sparse file that runs out of tmpfs space later faults on first touch instead
 * of failing at allocation), {@code madvise} to populate a mapping's page tables ahead of its first copies, and
 * {@code flock}, so a live owner is visible to other processes by its lock (a
 * {@link java.nio.channels.FileLock} is an fcntl lock, which the JVM drops when any channel on the file closes).
 *
 * <p>Bound lazily and once; when native access is denied or a symbol is missing, {@link #isAvailable()} is false and
 * callers fall back to plain {@code FileChannel} behaviour.
 */
final class LibC {
    // Same values on every Linux ABI (x86-64, aarch64); O_NOFOLLOW and O_DIRECTORY differ, so they are not used.
    static final int O_RDWR = 0x2;
    static final int O_CREAT = 0x40;
    static final int O_EXCL = 0x80;
    static final int O_CLOEXEC = 0x80000;
    static final int LOCK_SH = 1;
    static final int LOCK_EX = 2;
    static final int LOCK_NB = 4;
    static final int EINTR = 4;
    static final int EWOULDBLOCK = 11;
    static final int EINVAL = 22;
    // Linux 5.14+; older kernels answer EINVAL
    static final int MADV_POPULATE_READ = 22;
    static final int MADV_POPULATE_WRITE = 23;

    private static final Binding BINDING = bind();

    private LibC() {
    }

    static boolean isAvailable() {
        return BINDING.error == null;
    }

    /** Why the calls are not bound, or {@code null}. */
    static Throwable unavailabilityCause() {
        return BINDING.error;
    }

    /** {@code open(path, flags, mode)}; throws naming the path and errno. */
    static int open(Path path, int flags, int mode) throws IOException {
        Binding b = binding();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(b.stateLayout);
            MemorySegment cPath = arena.allocateFrom(path.toString());
            for (;;) {
                int fd = (int) b.open.invokeExact(state, cPath, flags, mode);
                if (fd >= 0) {
                    return fd;
                }
                int errno = (int) b.errno.get(state, 0L);
                if (errno != EINTR) {
                    throw new IOException("open(" + path + ") failed: " + describe(errno));
                }
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("open(" + path + ") could not be called", t);
        }
    }

    /**
     * {@code flock(fd, op)}. Returns {@code false} only for {@code LOCK_NB} requests that would block; other failures
     * throw.
     */
    static boolean flock(int fd, int op, Path pathForErrors) throws IOException {
        Binding b = binding();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(b.stateLayout);
            for (;;) {
                int rc = (int) b.flock.invokeExact(state, fd, op);
                if (rc == 0) {
                    return true;
                }
                int errno = (int) b.errno.get(state, 0L);
                if (errno == EWOULDBLOCK && (op & LOCK_NB) != 0) {
                    return false;
                }
                if (errno != EINTR) {
                    throw new IOException("flock(" + pathForErrors + ", " + op + ") failed: " + describe(errno));
                }
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("flock could not be called", t);
        }
    }

    /** Reserves {@code [0, size)} of the file; throws naming the path and the error (ENOSPC when tmpfs is full). */
    static void fallocate(int fd, long size, Path pathForErrors) throws IOException {
        Binding b = binding();
        int rc;
        try {
            do {
                // posix_fallocate returns the error number instead of setting errno
                rc = (int) b.fallocate.invokeExact(fd, 0L, size);
            } while (rc == EINTR);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("posix_fallocate could not be called", t);
        }
        if (rc != 0) {
            throw new IOException("posix_fallocate(" + pathForErrors + ", " + size + " bytes) failed: " + describe(rc));
        }
    }

    /**
     * {@code madvise(range, advice)}; returns 0 or the errno (the caller decides what a refusal means). {@code range}
     * must start on a page boundary.
     */
    static int madvise(MemorySegment range, int advice) {
        Binding b = binding();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(b.stateLayout);
            for (;;) {
                int rc = (int) b.madvise.invokeExact(state, range, range.byteSize(), advice);
                if (rc == 0) {
                    return 0;
                }
                int errno = (int) b.errno.get(state, 0L);
                if (errno != EINTR) {
                    return errno;
                }
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("madvise could not be called", t);
        }
    }

    /** The kernel's base page size in bytes. */
    static long pageSize() {
        return binding().pageSize;
    }

    /** Closes {@code fd}, ignoring errors: it is only ever called on descriptors that are done with. */
    static void closeQuietly(int fd) {
        if (fd < 0 || !isAvailable()) {
            return;
        }
        try {
            int rc = (int) BINDING.close.invokeExact(fd);
            assert rc == 0 || rc == -1;
        } catch (Throwable ignored) {
            // nothing useful to do: the descriptor is gone either way on Linux
        }
    }

    static String describe(int errno) {
        String name = switch (errno) {
            case 1 -> "EPERM";
            case 2 -> "ENOENT";
            case 4 -> "EINTR";
            case 5 -> "EIO";
            case 9 -> "EBADF";
            case 11 -> "EWOULDBLOCK";
            case 12 -> "ENOMEM";
            case 13 -> "EACCES";
            case 14 -> "EFAULT";
            case 17 -> "EEXIST";
            case 21 -> "EISDIR";
            case 22 -> "EINVAL";
            case 24 -> "EMFILE";
            case 27 -> "EFBIG";
            case 28 -> "ENOSPC (no space left on device)";
            case 30 -> "EROFS";
            case 95 -> "EOPNOTSUPP";
            case 122 -> "EDQUOT";
            default -> "?";
        };
        return "errno " + errno + " (" + name + ")";
    }

    private static Binding binding() {
        if (BINDING.error != null) {
            throw new IllegalStateException("libc calls are unavailable: " + BINDING.error, BINDING.error);
        }
        return BINDING;
    }

    private static Binding bind() {
        try {
            Linker linker = Linker.nativeLinker();
            SymbolLookup libc = linker.defaultLookup();
            StructLayout stateLayout = Linker.Option.captureStateLayout();
            VarHandle errno = stateLayout.varHandle(MemoryLayout.PathElement.groupElement("errno"));
            Linker.Option captureErrno = Linker.Option.captureCallState("errno");
            MethodHandle open = linker.downcallHandle(find(libc, "open"),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
                    captureErrno, Linker.Option.firstVariadicArg(2));
            MethodHandle flock = linker.downcallHandle(find(libc, "flock"),
                    FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT), captureErrno);
            MethodHandle fallocate = linker.downcallHandle(find(libc, "posix_fallocate"),
                    FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG));
            MethodHandle close = linker.downcallHandle(find(libc, "close"),
                    FunctionDescriptor.of(JAVA_INT, JAVA_INT));
            MethodHandle madvise = linker.downcallHandle(find(libc, "madvise"),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT), captureErrno);
            MethodHandle getpagesize = linker.downcallHandle(find(libc, "getpagesize"), FunctionDescriptor.of(JAVA_INT));
            return new Binding(null, stateLayout, errno, open, flock, fallocate, close, madvise,
                    (int) getpagesize.invokeExact());
        } catch (Throwable t) {
            // IllegalCallerException when --enable-native-access does not cover this module, or a missing symbol
            return new Binding(t, null, null, null, null, null, null, null, 0);
        }
    }

    private static MemorySegment find(SymbolLookup lookup, String name) {
        return lookup.find(name).orElseThrow(() -> new UnsatisfiedLinkError("libc has no symbol '" + name + "'"));
    }

    private record Binding(Throwable error, StructLayout stateLayout, VarHandle errno, MethodHandle open,
                           MethodHandle flock, MethodHandle fallocate, MethodHandle close, MethodHandle madvise, int pageSize) {
    }
}
