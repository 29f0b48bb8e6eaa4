package org.tent4j.transport.rdma;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * libibverbs through the FFM API: downcall handles for the exported functions, and address-taking handles for the
 * {@code static inline} verbs that call through a context's function tables ({@code ibv_post_send},
 * {@code ibv_poll_cq}, {@code ibv_query_port}). Loaded at most once per JVM, on first use; a JVM without the library
 * gets the load failure from {@link #load()} and nothing else is touched.
 *
 * <p>Functions that report failure as {@code NULL} plus {@code errno} are bound with
 * {@code Linker.Option.captureCallState("errno")}, so the errno read is the one the call set, not one a JVM thread
 * set afterwards. Functions that return an errno value ({@code ibv_modify_qp}, {@code ibv_query_port}, post_send)
 * are bound plainly.
 */
final class VerbsLibrary {
    static final String LIBRARY = "libibverbs.so.1";

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(PathElement.groupElement("errno"));
    private static final Linker.Option ERRNO_OPTION = Linker.Option.captureCallState("errno");

    private static final Object INSTANCE = tryLoad(LIBRARY);

    private final MethodHandle getDeviceList;
    private final MethodHandle freeDeviceList;
    private final MethodHandle getDeviceName;
    private final MethodHandle openDevice;
    private final MethodHandle closeDevice;
    private final MethodHandle queryDevice;
    private final MethodHandle queryPortCompat;
    private final MethodHandle queryGid;
    private final MethodHandle queryGidEx; // _ibv_query_gid_ex, rdma-core >= 31; null when absent
    private final MethodHandle allocPd;
    private final MethodHandle deallocPd;
    private final MethodHandle regMr;
    private final MethodHandle deregMr;
    private final MethodHandle createCq;
    private final MethodHandle destroyCq;
    private final MethodHandle createQp;
    private final MethodHandle modifyQp;
    private final MethodHandle destroyQp;

    // calls through function pointers read from the context's tables; the first argument is the function address
    private final MethodHandle queryPortOp;
    private final MethodHandle pollCqOp;
    private final MethodHandle postSendOp;

    private VerbsLibrary(SymbolLookup lib) {
        getDeviceList = bind(lib, "ibv_get_device_list", FunctionDescriptor.of(ADDRESS, ADDRESS), ERRNO_OPTION);
        freeDeviceList = bind(lib, "ibv_free_device_list", FunctionDescriptor.ofVoid(ADDRESS));
        getDeviceName = bind(lib, "ibv_get_device_name", FunctionDescriptor.of(ADDRESS, ADDRESS));
        openDevice = bind(lib, "ibv_open_device", FunctionDescriptor.of(ADDRESS, ADDRESS), ERRNO_OPTION);
        closeDevice = bind(lib, "ibv_close_device", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        queryDevice = bind(lib, "ibv_query_device", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        queryPortCompat = bind(lib, "ibv_query_port", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS));
        queryGid = bind(lib, "ibv_query_gid", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, JAVA_INT, ADDRESS));
        queryGidEx = lib.find("_ibv_query_gid_ex").map(a -> LINKER.downcallHandle(a, FunctionDescriptor.of(JAVA_INT,
                ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG))).orElse(null);
        allocPd = bind(lib, "ibv_alloc_pd", FunctionDescriptor.of(ADDRESS, ADDRESS), ERRNO_OPTION);
        deallocPd = bind(lib, "ibv_dealloc_pd", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        // the exported ibv_reg_mr; verbs.h's macro only diverts to ibv_reg_mr_iova2 for IBV_ACCESS_OPTIONAL_RANGE
        // flags, which this transport does not use
        regMr = bind(lib, "ibv_reg_mr", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT),
                ERRNO_OPTION);
        deregMr = bind(lib, "ibv_dereg_mr", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        createCq = bind(lib, "ibv_create_cq", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS,
                JAVA_INT), ERRNO_OPTION);
        destroyCq = bind(lib, "ibv_destroy_cq", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        createQp = bind(lib, "ibv_create_qp", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS), ERRNO_OPTION);
        modifyQp = bind(lib, "ibv_modify_qp", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
        destroyQp = bind(lib, "ibv_destroy_qp", FunctionDescriptor.of(JAVA_INT, ADDRESS));

        queryPortOp = LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS, JAVA_LONG));
        // the data path: short, non-blocking provider calls, so no thread-state transition
        pollCqOp = LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS),
                Linker.Option.critical(false));
        postSendOp = LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS),
                Linker.Option.critical(false));
    }

    /**
     * The library, loaded on first call.
     *
     * @throws VerbsException "libibverbs.so.1 not found" when the dynamic loader cannot open it, or naming the
     *                        missing symbol of an incompatible build
     */
    static VerbsLibrary load() {
        if (INSTANCE instanceof VerbsLibrary lib) {
            return lib;
        }
        throw (VerbsException) INSTANCE;
    }

    /** The bound library, or the {@link VerbsException} saying why {@code library} cannot be used. */
    static Object tryLoad(String library) {
        SymbolLookup lookup;
        try {
            lookup = SymbolLookup.libraryLookup(library, Arena.global());
        } catch (IllegalArgumentException e) {
            return new VerbsException(library + " not found", 0);
        }
        try {
            return new VerbsLibrary(lookup);
        } catch (VerbsException e) {
            return e;
        }
    }

    // ---- devices ---------------------------------------------------------------------------------------------------

    /**
     * {@code ibv_get_device_list}.
     *
     * @param array the {@code struct ibv_device **} (NULL when the call failed), to pass to {@link #freeDeviceList}
     * @param count number of devices
     * @param errno errno the call set when it returned NULL
     */
    record DeviceList(MemorySegment array, int count, int errno) {
        boolean failed() {
            return array.equals(MemorySegment.NULL);
        }

        MemorySegment device(int i) {
            return array.getAtIndex(ADDRESS, i);
        }
    }

    DeviceList getDeviceList() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            MemorySegment num = arena.allocate(JAVA_INT);
            MemorySegment list = (MemorySegment) getDeviceList.invokeExact(state, num);
            int errno = (int) ERRNO.get(state, 0L);
            if (list.equals(MemorySegment.NULL)) {
                return new DeviceList(MemorySegment.NULL, 0, errno);
            }
            int count = num.get(JAVA_INT, 0);
            return new DeviceList(list.reinterpret(ADDRESS.byteSize() * (count + 1L)), count, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    void freeDeviceList(DeviceList list) {
        if (list.failed()) {
            return;
        }
        try {
            freeDeviceList.invokeExact(list.array());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    String deviceName(MemorySegment device) {
        try {
            MemorySegment name = (MemorySegment) getDeviceName.invokeExact(device);
            return name.equals(MemorySegment.NULL) ? "?" : name.reinterpret(Long.MAX_VALUE).getString(0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Returns the {@code struct ibv_context *}, sized to its layout. */
    MemorySegment openDevice(MemorySegment device, String name) {
        return checkedPointer(openDevice, "ibv_open_device(" + name + ")", device)
                .reinterpret(Verbs.IBV_CONTEXT.byteSize());
    }

    void closeDevice(MemorySegment context) {
        try {
            int rc = (int) closeDevice.invokeExact(context);
            check(rc, "ibv_close_device");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    void queryDevice(MemorySegment context, MemorySegment attr, String name) {
        try {
            int rc = (int) queryDevice.invokeExact(context, attr);
            check(rc, "ibv_query_device(" + name + ")");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * verbs.h's {@code ___ibv_query_port}: through {@code verbs_context.query_port} with the full attribute size when
     * the provider has it, else the exported compat {@code ibv_query_port} on a zeroed buffer.
     */
    void queryPort(MemorySegment context, int port, MemorySegment attr, String name) {
        try {
            MemorySegment ctx = context.reinterpret(Verbs.IBV_CONTEXT.byteSize());
            int rc;
            MemorySegment op = queryPortOp(ctx);
            if (op != null) {
                rc = (int) queryPortOp.invokeExact(op, ctx, (byte) port, attr, Verbs.IBV_PORT_ATTR.byteSize());
            } else {
                attr.fill((byte) 0);
                rc = (int) queryPortCompat.invokeExact(ctx, (byte) port, attr);
            }
            check(rc, "ibv_query_port(" + name + ", port " + port + ")");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code verbs_get_ctx_op(ctx, query_port)}, or null. */
    private static MemorySegment queryPortOp(MemorySegment ctx) {
        if (ctx.get(JAVA_LONG, Verbs.CONTEXT_ABI_COMPAT) != Verbs.VERBS_ABI_IS_EXTENDED) {
            return null;
        }
        MemorySegment vctx = MemorySegment.ofAddress(ctx.address() - Verbs.VERBS_CONTEXT_CONTEXT)
                .reinterpret(Verbs.VERBS_CONTEXT.byteSize());
        long sz = vctx.get(JAVA_LONG, Verbs.VERBS_CONTEXT_SZ);
        MemorySegment op = vctx.get(ADDRESS, Verbs.VERBS_CONTEXT_QUERY_PORT);
        return sz < Verbs.VERBS_CONTEXT_SIZE_FROM_QUERY_PORT || op.equals(MemorySegment.NULL) ? null : op;
    }

    /** {@code ibv_query_gid}: 16 bytes into {@code gid}. */
    void queryGid(MemorySegment context, int port, int index, MemorySegment gid, String name) {
        try {
            int rc = (int) queryGid.invokeExact(context, (byte) port, index, gid);
            check(rc, "ibv_query_gid(" + name + ", port " + port + ", index " + index + ")");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    boolean hasQueryGidEx() {
        return queryGidEx != null;
    }

    /**
     * {@code ibv_query_gid_ex}: fills an {@code ibv_gid_entry}; returns 0 or the errno ({@code ENODATA} for an empty
     * table slot).
     */
    int queryGidEx(MemorySegment context, int port, int index, MemorySegment entry) {
        try {
            return (int) queryGidEx.invokeExact(context, port, index, entry, 0, Verbs.IBV_GID_ENTRY.byteSize());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- protection domain, memory regions -----------------------------------------------------------------------

    MemorySegment allocPd(MemorySegment context, String name) {
        return checkedPointer(allocPd, "ibv_alloc_pd(" + name + ")", context).reinterpret(Verbs.IBV_PD.byteSize());
    }

    void deallocPd(MemorySegment pd) {
        try {
            check((int) deallocPd.invokeExact(pd), "ibv_dealloc_pd");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ibv_reg_mr}; returns the {@code struct ibv_mr *} sized to its layout. */
    MemorySegment regMr(MemorySegment pd, long address, long length, int access, String what) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            MemorySegment mr = (MemorySegment) regMr.invokeExact(state, pd, MemorySegment.ofAddress(address), length,
                    access);
            if (mr.equals(MemorySegment.NULL)) {
                int errno = (int) ERRNO.get(state, 0L);
                throw new VerbsException("ibv_reg_mr(" + what + ") failed: " + describeErrno(errno), errno);
            }
            return mr.reinterpret(Verbs.IBV_MR.byteSize());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    void deregMr(MemorySegment mr) {
        try {
            check((int) deregMr.invokeExact(mr), "ibv_dereg_mr");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- completion queues, queue pairs --------------------------------------------------------------------------

    MemorySegment createCq(MemorySegment context, int entries, String name) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            MemorySegment cq = (MemorySegment) createCq.invokeExact(state, context, entries, MemorySegment.NULL,
                    MemorySegment.NULL, 0);
            if (cq.equals(MemorySegment.NULL)) {
                int errno = (int) ERRNO.get(state, 0L);
                throw new VerbsException("ibv_create_cq(" + name + ", " + entries + " entries) failed: "
                        + describeErrno(errno), errno);
            }
            return cq.reinterpret(Verbs.IBV_CQ.byteSize());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    void destroyCq(MemorySegment cq) {
        try {
            check((int) destroyCq.invokeExact(cq), "ibv_destroy_cq");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    MemorySegment createQp(MemorySegment pd, MemorySegment initAttr, String name) {
        return checkedPointer(createQp, "ibv_create_qp(" + name + ")", pd, initAttr)
                .reinterpret(Verbs.IBV_QP.byteSize());
    }

    /** {@code ibv_modify_qp}; returns 0 or the errno value. */
    int modifyQp(MemorySegment qp, MemorySegment attr, int mask) {
        try {
            return (int) modifyQp.invokeExact(qp, attr, mask);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    void destroyQp(MemorySegment qp) {
        try {
            check((int) destroyQp.invokeExact(qp), "ibv_destroy_qp");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- data path: the static inline verbs ------------------------------------------------------------------------

    /** {@code cq->context->ops.poll_cq}, read once per CQ. */
    static MemorySegment pollCqFunction(MemorySegment cq) {
        MemorySegment ctx = cq.get(ADDRESS, Verbs.CQ_CONTEXT).reinterpret(Verbs.IBV_CONTEXT.byteSize());
        return ctx.get(ADDRESS, Verbs.CONTEXT_OPS_POLL_CQ);
    }

    /** {@code qp->context->ops.post_send}, read once per QP. */
    static MemorySegment postSendFunction(MemorySegment qp) {
        MemorySegment ctx = qp.get(ADDRESS, Verbs.QP_CONTEXT).reinterpret(Verbs.IBV_CONTEXT.byteSize());
        return ctx.get(ADDRESS, Verbs.CONTEXT_OPS_POST_SEND);
    }

    /** {@code ibv_poll_cq}: number of completions written to {@code wc}, or negative on error. Allocation-free. */
    int pollCq(MemorySegment function, MemorySegment cq, int entries, MemorySegment wc) {
        try {
            return (int) pollCqOp.invokeExact(function, cq, entries, wc);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ibv_post_send}: 0 or an errno value. Allocation-free. */
    int postSend(MemorySegment function, MemorySegment qp, MemorySegment wr, MemorySegment badWr) {
        try {
            return (int) postSendOp.invokeExact(function, qp, wr, badWr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- errno -----------------------------------------------------------------------------------------------------

    /** "errno 38 (Function not implemented)". */
    String describeErrno(int errno) {
        return Errno.describe(errno);
    }

    private void check(int rc, String call) {
        if (rc != 0) {
            // these verbs return the errno value itself (or -1 with errno set by older providers)
            int errno = rc > 0 ? rc : -rc;
            throw new VerbsException(call + " failed: " + describeErrno(errno), errno);
        }
    }

    private MemorySegment checkedPointer(MethodHandle handle, String call, MemorySegment... args) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            MemorySegment result = switch (args.length) {
                case 1 -> (MemorySegment) handle.invokeExact(state, args[0]);
                case 2 -> (MemorySegment) handle.invokeExact(state, args[0], args[1]);
                default -> throw new IllegalArgumentException("arity " + args.length);
            };
            if (result.equals(MemorySegment.NULL)) {
                int errno = (int) ERRNO.get(state, 0L);
                throw new VerbsException(call + " failed: " + describeErrno(errno), errno);
            }
            return result;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static MethodHandle bind(SymbolLookup lib, String symbol, FunctionDescriptor fd, Linker.Option... options) {
        MemorySegment address = lib.find(symbol).orElseThrow(() -> new VerbsException(LIBRARY
                + " has no symbol " + symbol + " (rdma-core too old?)", 0));
        return LINKER.downcallHandle(address, fd, options);
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(t);
    }
}
