package org.tent4j.transport.nvmeof;

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
 * The libc calls the transport needs, bound through FFM: {@code open} (for {@code O_DIRECT}, which
 * {@link java.nio.channels.FileChannel} cannot ask for), {@code close}, {@code fstat}, {@code mmap}/{@code munmap} of
 * io_uring's rings, {@code eventfd}/{@code read}/{@code write} to wake a ring's thread, and {@code syscall} for
 * io_uring's three system calls, which glibc does not wrap (liburing's helpers are static inline, so there is nothing
 * to bind there). Constants that differ between ABIs are chosen by {@code os.arch} and checked against the installed
 * headers by {@code LinuxAbiTest}.
 */
final class LinuxIo {
    static final boolean AARCH64 = System.getProperty("os.arch", "").equals("aarch64");
    static final int O_RDONLY = 0;
    static final int O_RDWR = 2;
    static final int O_CLOEXEC = 0x80000;
    static final int O_DIRECT = AARCH64 ? 0x10000 : 0x4000;
    static final int EFD_CLOEXEC = 0x80000;
    static final int EFD_NONBLOCK = 0x800;
    static final int PROT_READ = 1;
    static final int PROT_WRITE = 2;
    static final int MAP_SHARED = 1;
    static final int MAP_POPULATE = 0x8000;
    /** io_uring's system call numbers are the same on every architecture since 5.1 (asm-generic). */
    static final long SYS_IO_URING_SETUP = 425;
    static final long SYS_IO_URING_ENTER = 426;
    static final int EINTR = 4;
    static final int EAGAIN = 11;
    static final int EBUSY = 16;
    static final int EINVAL = 22;

    /** {@code struct stat}: x86-64 and aarch64 (asm-generic) differ in where {@code st_nlink} is and how wide. */
    static final long STAT_SIZE = AARCH64 ? 128 : 144;
    static final long STAT_DEV = 0;
    static final long STAT_INO = 8;
    static final long STAT_NLINK = AARCH64 ? 20 : 16;
    static final long STAT_MODE = AARCH64 ? 16 : 24;
    static final long STAT_SIZE_FIELD = 48;

    private static final Binding B = bind();

    private LinuxIo() {
    }

    static boolean isAvailable() {
        return B.error == null;
    }

    static Throwable unavailabilityCause() {
        return B.error;
    }

    /** What {@code fstat} says of a descriptor (the fields the transport uses). */
    record Stat(long dev, long ino, long nlink, long size) {
    }

    static int open(Path path, int flags) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(B.stateLayout);
            MemorySegment cPath = arena.allocateFrom(path.toString());
            for (;;) {
                int fd = (int) B.open.invokeExact(state, cPath, flags, 0);
                if (fd >= 0) {
                    return fd;
                }
                int errno = errno(state);
                if (errno != EINTR) {
                    throw new IOException("open(" + path + ((flags & O_DIRECT) != 0 ? ", O_DIRECT" : "") + ") failed: " + describe(errno));
                }
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("open could not be called", t);
        }
    }

    static void close(int fd) {
        if (fd < 0) {
            return;
        }
        try {
            int rc = (int) B.close.invokeExact(fd);
            assert rc == 0 || rc == -1;
        } catch (Throwable ignored) {
            // the descriptor is released either way on Linux
        }
    }

    /** {@code fstat} into {@code buf} (at least {@link #STAT_SIZE} bytes); allocation-free, errno in {@code state}. */
    static int fstat(int fd, MemorySegment buf, MemorySegment state) {
        try {
            return (int) B.fstat.invokeExact(state, fd, buf);
        } catch (Throwable t) {
            throw new IllegalStateException("fstat could not be called", t);
        }
    }

    static Stat fstat(int fd, Path pathForErrors) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(STAT_SIZE, 8);
            MemorySegment state = arena.allocate(B.stateLayout);
            if (fstat(fd, buf, state) != 0) {
                throw new IOException("fstat(" + pathForErrors + ") failed: " + describe(errno(state)));
            }
            return new Stat(buf.get(JAVA_LONG, STAT_DEV), buf.get(JAVA_LONG, STAT_INO),
                    AARCH64 ? Integer.toUnsignedLong(buf.get(JAVA_INT, STAT_NLINK)) : buf.get(JAVA_LONG, STAT_NLINK),
                    buf.get(JAVA_LONG, STAT_SIZE_FIELD));
        }
    }

    static long nlink(MemorySegment statBuf) {
        return AARCH64 ? Integer.toUnsignedLong(statBuf.get(JAVA_INT, STAT_NLINK)) : statBuf.get(JAVA_LONG, STAT_NLINK);
    }

    static long size(MemorySegment statBuf) {
        return statBuf.get(JAVA_LONG, STAT_SIZE_FIELD);
    }

    /** {@code syscall(number, a, b, c, d, e, f)}: returns the raw result; errno in {@code state} when it is -1. */
    static long syscall(MemorySegment state, long number, long a, long b, long c, long d, long e, long f) {
        try {
            return (long) B.syscall.invokeExact(state, number, a, b, c, d, e, f);
        } catch (Throwable t) {
            throw new IllegalStateException("syscall could not be called", t);
        }
    }

    static MemorySegment mmap(long length, int prot, int flags, int fd, long offset) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(B.stateLayout);
            MemorySegment p = (MemorySegment) B.mmap.invokeExact(state, MemorySegment.NULL, length, prot, flags, fd, offset);
            if (p.address() == -1L) {
                throw new IOException("mmap of " + length + " bytes at offset 0x" + Long.toHexString(offset) + " failed: " + describe(errno(state)));
            }
            return p.reinterpret(length);
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("mmap could not be called", t);
        }
    }

    static void munmap(MemorySegment m) {
        if (m == null) {
            return;
        }
        try {
            int rc = (int) B.munmap.invokeExact(m, m.byteSize());
            assert rc == 0 || rc == -1;
        } catch (Throwable ignored) {
            // unmapping a ring we own cannot fail usefully
        }
    }

    static int eventfd() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(B.stateLayout);
            int fd = (int) B.eventfd.invokeExact(state, 0, EFD_CLOEXEC | EFD_NONBLOCK);
            if (fd < 0) {
                throw new IOException("eventfd failed: " + describe(errno(state)));
            }
            return fd;
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("eventfd could not be called", t);
        }
    }

    /** Adds one to an eventfd ({@code buf}: 8 bytes holding 1). */
    static void signal(int eventFd, MemorySegment buf) {
        try {
            long rc = (long) B.write.invokeExact(eventFd, buf, 8L);
            assert rc == 8 || rc == -1; // -1 only with EAGAIN: the counter is already huge, the reader wakes anyway
        } catch (Throwable t) {
            throw new IllegalStateException("write(eventfd) could not be called", t);
        }
    }

    /** Clears an eventfd's counter. */
    static void drain(int eventFd, MemorySegment buf) {
        try {
            long rc = (long) B.read.invokeExact(eventFd, buf, 8L);
            assert rc == 8 || rc == -1;
        } catch (Throwable t) {
            throw new IllegalStateException("read(eventfd) could not be called", t);
        }
    }

    static MemorySegment newCallState(Arena arena) {
        return arena.allocate(B.stateLayout);
    }

    static int errno(MemorySegment state) {
        return (int) B.errno.get(state, 0L);
    }

    static String describe(int errno) {
        String name = switch (errno) {
            case 1 -> "EPERM";
            case 2 -> "ENOENT";
            case 4 -> "EINTR";
            case 5 -> "EIO";
            case 9 -> "EBADF";
            case 11 -> "EAGAIN";
            case 12 -> "ENOMEM";
            case 13 -> "EACCES";
            case 14 -> "EFAULT";
            case 16 -> "EBUSY";
            case 21 -> "EISDIR";
            case 22 -> "EINVAL";
            case 24 -> "EMFILE";
            case 27 -> "EFBIG";
            case 28 -> "ENOSPC";
            case 30 -> "EROFS";
            case 38 -> "ENOSYS";
            case 95 -> "EOPNOTSUPP";
            case 122 -> "EDQUOT";
            default -> "?";
        };
        return "errno " + errno + " (" + name + ")";
    }

    private static Binding bind() {
        try {
            Linker linker = Linker.nativeLinker();
            SymbolLookup libc = linker.defaultLookup();
            StructLayout stateLayout = Linker.Option.captureStateLayout();
            VarHandle errno = stateLayout.varHandle(MemoryLayout.PathElement.groupElement("errno"));
            Linker.Option capture = Linker.Option.captureCallState("errno");
            MethodHandle open = linker.downcallHandle(find(libc, "open"),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), capture, Linker.Option.firstVariadicArg(2));
            MethodHandle close = linker.downcallHandle(find(libc, "close"), FunctionDescriptor.of(JAVA_INT, JAVA_INT));
            MethodHandle fstat = linker.downcallHandle(find(libc, "fstat"), FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS),
                    capture);
            MethodHandle syscall = linker.downcallHandle(find(libc, "syscall"),
                    FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
                    capture, Linker.Option.firstVariadicArg(1));
            MethodHandle mmap = linker.downcallHandle(find(libc, "mmap"),
                    FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG), capture);
            MethodHandle munmap = linker.downcallHandle(find(libc, "munmap"), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
            MethodHandle eventfd = linker.downcallHandle(find(libc, "eventfd"), FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT), capture);
            MethodHandle read = linker.downcallHandle(find(libc, "read"), FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
            MethodHandle write = linker.downcallHandle(find(libc, "write"), FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
            return new Binding(null, stateLayout, errno, open, close, fstat, syscall, mmap, munmap, eventfd, read, write);
        } catch (Throwable t) {
            // IllegalCallerException when native access is not enabled for this module, or a missing symbol
            return new Binding(t, null, null, null, null, null, null, null, null, null, null, null);
        }
    }

    private static MemorySegment find(SymbolLookup lookup, String name) {
        return lookup.find(name).orElseThrow(() -> new UnsatisfiedLinkError("libc has no symbol '" + name + "'"));
    }

    private record Binding(Throwable error, StructLayout stateLayout, VarHandle errno, MethodHandle open, MethodHandle close,
                           MethodHandle fstat, MethodHandle syscall, MethodHandle mmap, MethodHandle munmap,
                           MethodHandle eventfd, MethodHandle read, MethodHandle write) {
    }
}
