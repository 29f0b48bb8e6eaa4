package org.tent4j.transport.nvmeof;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.Availability;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.NativeLibrary;
import org.tent4j.spi.Slice;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * GPUDirect Storage through libcufile: the driver is opened once, each file's descriptor is registered as a cuFile
 * handle on first use, GPU buffers are registered with {@code cuFileBufRegister}, and each slice is one blocking
 * {@code cuFileRead}/{@code cuFileWrite} on an engine worker (cuFile's synchronous calls do the DMA between the NVMe
 * device and GPU memory; without the nvidia-fs driver cuFile itself falls back to its compatibility mode).
 *
 * <p>Layouts from {@code cufile.h}: {@code CUfileError_t} is {@code {int err; int cu_err}} returned by value;
 * {@code CUfileDescr_t} is {@code {int type; union {int fd; void *handle}; const CUfileFSOps_t *fs_ops}} (24 bytes);
 * {@code CU_FILE_HANDLE_TYPE_OPAQUE_FD} is 1.
 */
final class CuFileIo {
    static final StructLayout ERROR = MemoryLayout.structLayout(JAVA_INT.withName("err"), JAVA_INT.withName("cu_err"));
    static final StructLayout DESCR = MemoryLayout.structLayout(JAVA_INT.withName("type"), MemoryLayout.paddingLayout(4),
            JAVA_LONG.withName("handle"), ADDRESS.withName("fs_ops"));
    static final int CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1;
    static final List<String> DEFAULT_LIBRARIES = List.of("libcufile.so.0", "libcufile.so",
            "/usr/local/cuda/lib64/libcufile.so.0", "/usr/local/cuda/targets/x86_64-linux/lib/libcufile.so.0");

    private final NativeLibrary lib;
    private final MethodHandle driverClose;
    private final MethodHandle handleRegister;
    private final MethodHandle handleDeregister;
    private final MethodHandle bufRegister;
    private final MethodHandle bufDeregister;
    private final MethodHandle read;
    private final MethodHandle write;
    private final Arena arena = Arena.ofShared();
    private final Map<OpenFile, MemorySegment> handles = new ConcurrentHashMap<>();
    private final AtomicInteger inflight = new AtomicInteger();
    private volatile boolean closed;

    private CuFileIo(NativeLibrary lib) throws Availability.UnavailableException {
        this.lib = lib;
        MethodHandle open = lib.bind("cuFileDriverOpen", FunctionDescriptor.of(ERROR));
        // CUDA 12.x headers map cuFileDriverClose to cuFileDriverClose_v2; older libraries have only the first
        this.driverClose = lib.has("cuFileDriverClose_v2") ? lib.bind("cuFileDriverClose_v2", FunctionDescriptor.of(ERROR))
                : lib.bind("cuFileDriverClose", FunctionDescriptor.of(ERROR));
        this.handleRegister = lib.bind("cuFileHandleRegister", FunctionDescriptor.of(ERROR, ADDRESS, ADDRESS));
        this.handleDeregister = lib.bind("cuFileHandleDeregister", FunctionDescriptor.ofVoid(ADDRESS));
        this.bufRegister = lib.bind("cuFileBufRegister", FunctionDescriptor.of(ERROR, ADDRESS, JAVA_LONG, JAVA_INT));
        this.bufDeregister = lib.bind("cuFileBufDeregister", FunctionDescriptor.of(ERROR, ADDRESS));
        this.read = lib.bind("cuFileRead", FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        this.write = lib.bind("cuFileWrite", FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        check(call(open), "cuFileDriverOpen");
    }

    /**
     * Loads libcufile from the first candidate that loads and opens the driver.
     *
     * @throws Availability.UnavailableException "libcufile.so.0 not found (searched: ...)", a missing symbol, or
     *                                           "cuFileDriverOpen failed: err N, cu_err M"
     */
    static CuFileIo open(List<String> candidates) throws Availability.UnavailableException {
        return new CuFileIo(NativeLibrary.open("libcufile (GPUDirect Storage)", candidates));
    }

    /** The library candidates: {@code -Dtent4j.cufile.library=...} first, then the defaults. */
    static List<String> candidates() {
        List<String> out = new ArrayList<>(NativeLibrary.fromProperty("tent4j.cufile.library"));
        out.addAll(DEFAULT_LIBRARIES);
        return out;
    }

    String library() {
        return lib.openedFrom();
    }

    /** Writes the {@code CUfileDescr_t} for an opaque file descriptor. */
    static void encodeDescriptor(MemorySegment descr, int fd) {
        descr.fill((byte) 0);
        descr.set(JAVA_INT, DESCR.byteOffset(MemoryLayout.PathElement.groupElement("type")), CU_FILE_HANDLE_TYPE_OPAQUE_FD);
        descr.set(JAVA_INT, DESCR.byteOffset(MemoryLayout.PathElement.groupElement("handle")), fd);
    }

    private MemorySegment call(MethodHandle h, Object... args) throws Availability.UnavailableException {
        try (Arena a = Arena.ofConfined()) {
            Object[] full = new Object[args.length + 1];
            full[0] = a;
            System.arraycopy(args, 0, full, 1, args.length);
            MemorySegment r = (MemorySegment) h.invokeWithArguments(full);
            return Arena.ofAuto().allocate(ERROR).copyFrom(r);
        } catch (Availability.UnavailableException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("libcufile call failed", t);
        }
    }

    private static void check(MemorySegment err, String what) throws Availability.UnavailableException {
        int code = err.get(JAVA_INT, 0);
        if (code != 0) {
            throw new Availability.UnavailableException(what + " failed: err " + code + ", cu_err " + err.get(JAVA_INT, 4));
        }
    }

    void registerBuffer(LocalBuffer b) {
        try {
            check(call(bufRegister, b.segment(), b.length(), 0), "cuFileBufRegister of " + b.length() + " bytes");
        } catch (Availability.UnavailableException e) {
            // An unregistered buffer still works (cuFile bounces through its own buffers); it is only slower.
            org.slf4j.LoggerFactory.getLogger(CuFileIo.class).warn("nvmeof/GDS: {}", e.getMessage());
        }
    }

    void unregisterBuffer(LocalBuffer b) {
        try {
            call(bufDeregister, b.segment());
        } catch (Availability.UnavailableException ignored) {
            // deregistering a buffer cuFile did not take is harmless
        }
    }

    private MemorySegment handle(OpenFile f) throws Availability.UnavailableException {
        MemorySegment h = handles.get(f);
        if (h != null) {
            return h;
        }
        synchronized (handles) {
            h = handles.get(f);
            if (h == null) {
                MemorySegment slot = arena.allocate(ADDRESS);
                MemorySegment descr = arena.allocate(DESCR);
                encodeDescriptor(descr, f.directFd >= 0 ? f.directFd : f.bufferedFd);
                check(call(handleRegister, slot, descr), "cuFileHandleRegister(" + f + ")");
                h = slot.get(ADDRESS, 0);
                handles.put(f, h);
            }
            return h;
        }
    }

    /** Runs one slice on an engine worker; the caller holds a reference on {@code f}. */
    void submit(Slice s, OpenFile f, Executor workers) {
        inflight.incrementAndGet();
        try {
            workers.execute(() -> run(s, f));
        } catch (RejectedExecutionException e) {
            finish(s, f, ErrorCode.ENGINE_CLOSED, "engine closed");
        }
    }

    private void run(Slice s, OpenFile f) {
        long fileOffset = s.remoteAddress() - f.base;
        if (closed) {
            finish(s, f, ErrorCode.ENGINE_CLOSED, "transport closed");
            return;
        }
        try {
            MemorySegment h = handle(f);
            MethodHandle op = s.opcode() == Opcode.READ ? read : write;
            long n = (long) op.invokeExact(h, s.localBuffer().segment(), s.length(), fileOffset, s.localOffset());
            if (n == s.length()) {
                finish(s, f, null, null);
            } else {
                finish(s, f, ErrorCode.PEER_FAILED, n < 0 ? "failed: cuFile returned " + n : "moved only " + n + " bytes");
            }
        } catch (Availability.UnavailableException e) {
            finish(s, f, ErrorCode.PEER_FAILED, "failed: " + e.getMessage());
        } catch (Throwable t) {
            finish(s, f, ErrorCode.INTERNAL, "failed: " + t);
        }
    }

    private void finish(Slice s, OpenFile f, ErrorCode code, String why) {
        long fileOffset = s.remoteAddress() - f.base;
        f.release();
        try {
            if (code == null) {
                s.complete();
            } else {
                s.fail(code, "nvmeof/GDS " + s.opcode() + " of file " + f + " [offset " + fileOffset + ", length " + s.length()
                        + "] " + why);
            }
        } finally {
            synchronized (inflight) {
                inflight.decrementAndGet();
                inflight.notifyAll();
            }
        }
    }

    /** Deregisters the cuFile handle of a file that is closing. */
    void forget(OpenFile f) {
        MemorySegment h = handles.remove(f);
        if (h != null) {
            try {
                handleDeregister.invokeExact(h);
            } catch (Throwable ignored) {
                // the descriptor closes right after; cuFile drops its state with it
            }
        }
    }

    void close() {
        closed = true;
        synchronized (inflight) {
            while (inflight.get() > 0) {
                try {
                    inflight.wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        for (OpenFile f : List.copyOf(handles.keySet())) {
            forget(f);
        }
        try {
            call(driverClose);
        } catch (Availability.UnavailableException | RuntimeException ignored) {
            // closing the driver at shutdown cannot fail usefully
        }
        arena.close();
    }
}
