package org.tent4j.transport.nvmeof;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.NativeLibrary;
import org.tent4j.testkit.nativecode.CProgram;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * cuFile (GDS) up to the hardware boundary: no libcufile here, so a fake one compiled at test time stands in. It
 * checks the {@code CUfileDescr_t} it is handed exactly as cufile.h lays it out (type, fd in the union, no fs_ops),
 * returns {@code CUfileError_t} by value, and moves bytes with pread/pwrite into what it is told is device memory
 * (host memory here). The real library's absence gives a precise cause.
 */
class CuFileIoTest {
    private static final String FAKE = """
            #include <stdint.h>
            #include <stddef.h>
            #include <unistd.h>
            #include <sys/types.h>
            #include <fcntl.h>
            #include <stdio.h>
            typedef struct { int err; int cu_err; } CUfileError_t;
            typedef struct { int type; union { int fd; void *handle; } handle; const void *fs_ops; } CUfileDescr_t;
            static int registered_fd = -1, bufs = 0;
            static CUfileError_t ok(void) { CUfileError_t e = {0, 0}; return e; }
            CUfileError_t cuFileDriverOpen(void) {
            #ifdef FAIL_OPEN
                CUfileError_t e = {5001, 0}; return e;
            #else
                return ok();
            #endif
            }
            CUfileError_t cuFileDriverClose_v2(void) { return ok(); }
            CUfileError_t cuFileHandleRegister(void **fh, CUfileDescr_t *d) {
                if (sizeof(CUfileDescr_t) != 24 || d->type != 1 || d->fs_ops != NULL || d->handle.fd < 0) {
                    CUfileError_t e = {5030, 0}; return e;
                }
                registered_fd = d->handle.fd;
                /* the real library aligns through its own buffers; the fake reopens the file without O_DIRECT */
                char path[64];
                snprintf(path, sizeof path, "/proc/self/fd/%d", d->handle.fd);
                int own = open(path, O_RDWR | O_CLOEXEC);
                *fh = (void *)(intptr_t)(0x10000 + own);
                return ok();
            }
            void cuFileHandleDeregister(void *fh) { close((int)((intptr_t)fh - 0x10000)); registered_fd = -1; }
            CUfileError_t cuFileBufRegister(const void *p, size_t n, int flags) { (void)p; (void)n; (void)flags; bufs++; return ok(); }
            CUfileError_t cuFileBufDeregister(const void *p) { (void)p; bufs--; return ok(); }
            ssize_t cuFileRead(void *fh, void *base, size_t size, off_t off, off_t boff) {
                return pread((int)((intptr_t)fh - 0x10000), (char *)base + boff, size, off);
            }
            ssize_t cuFileWrite(void *fh, const void *base, size_t size, off_t off, off_t boff) {
                return pwrite((int)((intptr_t)fh - 0x10000), (const char *)base + boff, size, off);
            }
            int fake_registered_fd(void) { return registered_fd; }
            int fake_buffers(void) { return bufs; }
            """;

    @TempDir
    static Path dir;
    private static Path fake;
    private static Path failing;

    @BeforeAll
    static void build() throws Exception {
        assumeTrue(CProgram.gccAvailable(), "gcc is not installed");
        fake = CProgram.sharedLibrary(dir.resolve("ok"), "libcufile", FAKE, List.of());
        failing = CProgram.sharedLibrary(dir.resolve("failing"), "libcufile", FAKE, List.of("-DFAIL_OPEN"));
    }

    @Test
    void missingLibraryGivesAPreciseCause() {
        Availability.UnavailableException e = assertThrows(Availability.UnavailableException.class,
                () -> CuFileIo.open(List.of("/nonexistent/libcufile.so.0", "libcufile-none.so.0")));
        assertEquals("libcufile (GPUDirect Storage) not found (searched: /nonexistent/libcufile.so.0, libcufile-none.so.0)", e.getMessage());
    }

    @Test
    void driverOpenFailureNamesTheError() {
        Availability.UnavailableException e = assertThrows(Availability.UnavailableException.class,
                () -> CuFileIo.open(List.of(failing.toString())));
        assertEquals("cuFileDriverOpen failed: err 5001, cu_err 0", e.getMessage());
    }

    @Test
    void descriptorEncodingIsCufileH() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment d = a.allocate(CuFileIo.DESCR);
            d.fill((byte) 0x7f);
            CuFileIo.encodeDescriptor(d, 0x1234);
            assertEquals(24, d.byteSize());
            assertEquals(1, d.get(JAVA_INT, 0));
            assertEquals(0, d.get(JAVA_INT, 4));
            assertEquals(0x1234, d.get(JAVA_INT, 8));
            assertEquals(0, d.get(JAVA_INT, 12));
            assertEquals(0L, d.get(java.lang.foreign.ValueLayout.JAVA_LONG, 16));
        }
    }

    @Test
    void readsAndWritesThroughCufile() throws Throwable {
        CuFileIo gds = CuFileIo.open(List.of(fake.toString()));
        Path file = dir.resolve("gds.bin");
        Files.write(file, new byte[1 << 20]);
        OpenFile f = OpenFile.openNative(file, 1L << 60, 1 << 20, true, 1);
        TestLocalMemory memory = new TestLocalMemory();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment m = arena.allocate(1 << 16, 4096);
            for (int i = 0; i < m.byteSize(); i++) {
                m.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
            }
            TestLocalMemory.Buffer b = memory.register(m, Permission.READ_WRITE);
            gds.registerBuffer(b);
            assertEquals(1, (int) call(fake, "fake_buffers"));
            BufferDescriptor remote = BufferDescriptor.builder().address(f.base).length(f.length)
                    .location(Location.FILE).permission(Permission.READ_WRITE).transports(List.of("nvmeof"))
                    .attributes(Map.of()).build();
            TestSlice w = new TestSlice(Opcode.WRITE, b, 100, remote, f.base + 5000, 30000, Long.MAX_VALUE);
            assertTrue(f.acquire());
            gds.submit(w, f, Runnable::run);
            w.result().get();
            assertEquals(f.directFd, (int) call(fake, "fake_registered_fd"), "the O_DIRECT descriptor was registered");
            byte[] onDisk = Files.readAllBytes(file);
            for (int i = 0; i < 30000; i++) {
                assertEquals(m.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 100 + i), onDisk[5000 + i], "byte " + i);
            }
            TestSlice r = new TestSlice(Opcode.READ, b, 40000, remote, f.base + 5000, 20000, Long.MAX_VALUE);
            assertTrue(f.acquire());
            gds.submit(r, f, Runnable::run);
            r.result().get();
            assertEquals(m.asSlice(100, 20000).mismatch(m.asSlice(40000, 20000)), -1L);

            TestSlice past = new TestSlice(Opcode.READ, b, 0, remote, f.base + (1 << 20) - 10, 100, Long.MAX_VALUE);
            assertTrue(f.acquire());
            gds.submit(past, f, Runnable::run);
            ExecutionException e = assertThrows(ExecutionException.class, () -> past.result().get());
            TransferException t = assertInstanceOf(TransferException.class, e.getCause());
            assertEquals(ErrorCode.PEER_FAILED, t.code());
            assertTrue(t.getMessage().contains("gds.bin") && t.getMessage().contains("offset " + ((1 << 20) - 10))
                    && t.getMessage().contains("moved only 10 bytes"), t.getMessage());
            assertEquals(1, past.completions());
            gds.unregisterBuffer(b);
            assertEquals(0, (int) call(fake, "fake_buffers"));
        } finally {
            gds.forget(f);
            gds.close();
            f.close(1000);
        }
    }

    private static int call(Path lib, String fn) throws Throwable {
        MethodHandle h = NativeLibrary.open("fake", List.of(lib.toString())).bind(fn, FunctionDescriptor.of(JAVA_INT));
        return (int) h.invokeExact();
    }
}
