package org.tent4j.transport.efa;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

import org.slf4j.LoggerFactory;

/**
 * libfabric through java.lang.foreign, with no C shim. The few functions libfabric really exports ({@code fi_getinfo},
 * {@code fi_dupinfo}, {@code fi_freeinfo}, {@code fi_fabric}, {@code fi_strerror}, {@code fi_version}) are bound by
 * name; everything else in the API is a {@code static inline} call through an ops table, so it is bound here as an
 * address-taking downcall handle per C signature ({@link #OPS_CLOSE}, {@link #OPS_RMA}, ...) and called with a function
 * pointer read out of the object ({@link #slot}). Callers resolve those pointers once per object and cache them.
 */
final class LibFabric {
    static final String LIBRARY = "libfabric.so.1";

    private static final Linker LINKER = Linker.nativeLinker();

    // ---- ops-table signatures (first argument: the function pointer) ---------------------------------------------

    /** {@code int close(struct fid *)}. */
    static final MethodHandle OPS_CLOSE = ops(FunctionDescriptor.of(JAVA_INT, ADDRESS));
    /** {@code int bind(struct fid *, struct fid *, uint64_t flags)}. */
    static final MethodHandle OPS_BIND = ops(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG));
    /** {@code int control(struct fid *, int command, void *arg)}. */
    static final MethodHandle OPS_CONTROL = ops(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
    /** {@code int open(parent, attr_or_info, child **, void *context)}: fi_domain, fi_av_open, fi_cq_open, fi_endpoint. */
    static final MethodHandle OPS_OPEN = ops(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
    /** {@code int reg(fid, buf, len, access, offset, requested_key, flags, struct fid_mr **, context)}. */
    static final MethodHandle OPS_MR_REG = ops(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG,
            JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));
    /** {@code int getname(fid_t, void *addr, size_t *addrlen)}. */
    static final MethodHandle OPS_GETNAME = ops(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    /** {@code int insert(av, const void *addr, size_t count, fi_addr_t *, uint64_t flags, void *context)}. */
    static final MethodHandle OPS_AV_INSERT = ops(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG,
            ADDRESS, JAVA_LONG, ADDRESS));
    /** {@code ssize_t read|write(ep, buf, len, desc, fi_addr_t, uint64_t addr, uint64_t key, void *context)}. */
    static final MethodHandle OPS_RMA = ops(FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS,
            JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS));
    /** {@code ssize_t read(cq, void *buf, size_t count)} and {@code ssize_t readerr(cq, entry *, uint64_t flags)}. */
    static final MethodHandle OPS_CQ_READ = ops(FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG));
    /** {@code const char *strerror(cq, int prov_errno, const void *err_data, char *buf, size_t len)}. */
    static final MethodHandle OPS_CQ_STRERROR = ops(FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, ADDRESS,
            ADDRESS, JAVA_LONG));
    /** {@code ssize_t cancel(fid_t, void *context)}. */
    static final MethodHandle OPS_CANCEL = ops(FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS));

    private static MethodHandle ops(FunctionDescriptor fd) {
        return LINKER.downcallHandle(fd);
    }

    // ---- the loaded library --------------------------------------------------------------------------------------

    private final MethodHandle fiGetinfo;
    private final MethodHandle fiFreeinfo;
    private final MethodHandle fiDupinfo;
    private final MethodHandle fiFabric;
    private final MethodHandle fiStrerror;
    private final MethodHandle fiVersion;
    private final MethodHandle strdup;
    private final int libraryVersion;

    private LibFabric(SymbolLookup lib) {
        fiGetinfo = bind(lib, "fi_getinfo", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG,
                ADDRESS, ADDRESS));
        fiFreeinfo = bind(lib, "fi_freeinfo", FunctionDescriptor.ofVoid(ADDRESS));
        fiDupinfo = bind(lib, "fi_dupinfo", FunctionDescriptor.of(ADDRESS, ADDRESS));
        fiFabric = bind(lib, "fi_fabric", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        fiStrerror = bind(lib, "fi_strerror", FunctionDescriptor.of(ADDRESS, JAVA_INT));
        fiVersion = bind(lib, "fi_version", FunctionDescriptor.of(JAVA_INT));
        // fi_freeinfo free()s prov_name, so it must come from the C heap, not from an arena
        strdup = bind(LINKER.defaultLookup(), "strdup", FunctionDescriptor.of(ADDRESS, ADDRESS));
        try {
            libraryVersion = (int) fiVersion.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException("fi_version failed", t);
        }
    }

    private static MethodHandle bind(SymbolLookup lookup, String name, FunctionDescriptor fd) {
        MemorySegment sym = lookup.find(name).orElseThrow(() -> new UnsatisfiedLinkError(
                "it does not export " + name));
        return LINKER.downcallHandle(sym, fd);
    }

    /** Loads libfabric once per JVM; the result (or the failure) is kept. */
    static LibFabric load() throws LibraryMissingException {
        Holder.ensure();
        return Holder.INSTANCE;
    }

    private static final class Holder {
        static final LibFabric INSTANCE;
        static final LibraryMissingException FAILURE;

        static {
            LibFabric lib = null;
            LibraryMissingException failure = null;
            try {
                lib = open(LIBRARY);
            } catch (LibraryMissingException e) {
                failure = e;
            }
            INSTANCE = lib;
            FAILURE = failure;
        }

        static void ensure() throws LibraryMissingException {
            if (FAILURE != null) {
                throw FAILURE;
            }
        }
    }

    /** dlopens {@code library} (a soname) for the life of the JVM, keeping the JVM's signal handlers. */
    static LibFabric open(String library) throws LibraryMissingException {
        try {
            SignalHandlers.Restored<SymbolLookup> loaded = SignalHandlers.preserving(
                    () -> SymbolLookup.libraryLookup(library, Arena.global()));
            if (!loaded.signals().isEmpty()) {
                LoggerFactory.getLogger(LibFabric.class).info("loading {} replaced the JVM's handlers of signals {} "
                        + "(libpsm2's backtrace handlers); the JVM's handlers were put back", library,
                        loaded.signals());
            }
            return new LibFabric(loaded.value());
        } catch (IllegalArgumentException e) {
            throw new LibraryMissingException(library + " not found (install libfabric1, or the EFA installer's "
                    + "libfabric, and make it visible to dlopen): " + e.getMessage(), e);
        } catch (UnsatisfiedLinkError | IllegalStateException | IllegalCallerException e) {
            throw new LibraryMissingException(library + " cannot be used: " + e.getMessage(), e);
        }
    }

    /** Why libfabric could not be loaded. */
    static final class LibraryMissingException extends Exception {
        LibraryMissingException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    int libraryVersion() {
        return libraryVersion;
    }

    static String versionString(int v) {
        return (v >>> 16) + "." + (v & 0xffff);
    }

    // ---- exported functions --------------------------------------------------------------------------------------

    /**
     * {@code fi_getinfo}. The first call initialises every provider built into the library, and a provider library may
     * install signal handlers then as well, so the JVM's handlers are kept across it too (a few hundred nanoseconds
     * per signal; getinfo runs only when a transport is probed or created).
     */
    int getinfo(int version, MemorySegment node, MemorySegment service, long flags, MemorySegment hints,
                MemorySegment infoOut) {
        SignalHandlers.Restored<Integer> rc = SignalHandlers.preserving(() -> {
            try {
                return (int) fiGetinfo.invokeExact(version, node, service, flags, hints, infoOut);
            } catch (Throwable t) {
                throw rethrow(t);
            }
        });
        if (!rc.signals().isEmpty()) {
            LoggerFactory.getLogger(LibFabric.class).info("fi_getinfo replaced the JVM's handlers of signals {}; "
                    + "the JVM's handlers were put back", rc.signals());
        }
        return rc.value();
    }

    void freeinfo(MemorySegment info) {
        try {
            fiFreeinfo.invokeExact(info);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code fi_allocinfo()}: a zeroed fi_info with every attribute struct allocated, for hints. */
    MemorySegment allocinfo() {
        try {
            MemorySegment info = (MemorySegment) fiDupinfo.invokeExact(MemorySegment.NULL);
            if (info.address() == 0) {
                throw new OutOfMemoryError("fi_dupinfo(NULL) returned NULL");
            }
            return info.reinterpret(FiAbi.FI_INFO.byteSize());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    int fabric(MemorySegment fabricAttr, MemorySegment fabricOut, MemorySegment context) {
        try {
            return (int) fiFabric.invokeExact(fabricAttr, fabricOut, context);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code strdup(s)} on the C heap, for strings libfabric frees. */
    MemorySegment strdup(String s) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment copy = (MemorySegment) strdup.invokeExact(a.allocateFrom(s));
            if (copy.address() == 0) {
                throw new OutOfMemoryError("strdup returned NULL");
            }
            return copy;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code fi_strerror} of a libfabric error number (positive or negative). */
    String strerror(long errnum) {
        try {
            MemorySegment s = (MemorySegment) fiStrerror.invokeExact((int) Math.abs(errnum));
            return cString(s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** "fi_mr_reg returned -266 (Required key not available)". */
    String describe(String call, long rc) {
        return call + " returned " + rc + " (" + strerror(rc) + ")";
    }

    // ---- helpers for ops tables and C data -----------------------------------------------------------------------

    /**
     * The function pointer in slot {@code slotOffset} of the ops table that {@code object} points to at
     * {@code opsField}, after checking the table's leading {@code size} (libfabric's {@code FI_CHECK_OP}).
     */
    static MemorySegment slot(MemorySegment object, long opsField, long slotOffset, String what) {
        MemorySegment obj = object.reinterpret(opsField + ADDRESS.byteSize());
        MemorySegment ops = obj.get(ADDRESS, opsField);
        if (ops.address() == 0) {
            throw new UnsupportedOperationException(what + ": the provider has no ops table for it");
        }
        ops = ops.reinterpret(slotOffset + ADDRESS.byteSize());
        long size = ops.get(JAVA_LONG, 0);
        if (size < slotOffset + ADDRESS.byteSize()) {
            throw new UnsupportedOperationException(what + ": the provider's ops table is " + size
                    + " bytes and has no slot at offset " + slotOffset);
        }
        MemorySegment fn = ops.get(ADDRESS, slotOffset);
        if (fn.address() == 0) {
            throw new UnsupportedOperationException(what + " is not implemented by the provider");
        }
        return fn;
    }

    static String cString(MemorySegment p) {
        if (p.address() == 0) {
            return "";
        }
        return p.reinterpret(Integer.MAX_VALUE).getString(0);
    }

    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }
}
