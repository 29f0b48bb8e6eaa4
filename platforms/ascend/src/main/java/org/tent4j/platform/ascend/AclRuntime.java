package org.tent4j.platform.ascend;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.platform.common.NativeRuntime;
import org.tent4j.spi.NativeLibrary;

/**
 * The AscendCL runtime ({@code libascendcl.so}) functions this platform calls, bound through FFM.
 *
 * <p>Signatures and constants follow CANN's {@code acl/acl_rt.h}, {@code acl/acl_base_rt.h} and
 * {@code acl/error_codes/rt_error_codes.h} (CANN 8.x, ACL 1.16/1.17). The IPC functions
 * ({@code aclrtIpcMemGetExportKey}, {@code aclrtIpcMemImportByKey}, {@code aclrtIpcMemClose}) and
 * {@code aclrtPointerGetAttributes} exist only in recent CANN releases, so they are bound optionally: without them
 * the platform still allocates and copies, and IPC export/import fail naming the missing symbol.
 */
final class AclRuntime extends NativeRuntime {
    static final int SUCCESS = 0;
    static final int ERROR_INVALID_PARAM = 100000;
    static final int ERROR_UNINITIALIZE = 100001;
    static final int ERROR_REPEAT_INITIALIZE = 100002;
    static final int ERROR_BAD_ALLOC = 200000;
    static final int ERROR_INVALID_DEVICE = 200002;
    static final int ERROR_RT_PARAM_INVALID = 107000;
    static final int ERROR_RT_INVALID_DEVICEID = 107001;
    static final int ERROR_RT_CONTEXT_NULL = 107002;
    static final int ERROR_RT_NO_DEVICE = 207004;
    static final int ERROR_RT_MEMORY_ALLOCATION = 207001;
    static final int ERROR_RT_DRV_INTERNAL_ERROR = 507899;

    /** aclrtMemcpyKind. */
    static final int MEMCPY_HOST_TO_HOST = 0;
    static final int MEMCPY_HOST_TO_DEVICE = 1;
    static final int MEMCPY_DEVICE_TO_HOST = 2;
    static final int MEMCPY_DEVICE_TO_DEVICE = 3;
    /** aclrtMemMallocPolicy ACL_MEM_MALLOC_HUGE_FIRST. */
    static final int MEM_MALLOC_HUGE_FIRST = 0;
    /** aclrtMemAttr ACL_HBM_MEM. */
    static final int MEM_ATTR_HBM = 1;
    static final long IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION = 0x1L;
    static final long IPC_MEM_IMPORT_FLAG_DEFAULT = 0x0L;
    static final long IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS = 0x1L;
    /** Length of an IPC key buffer, "fixed at 65" in the aclrtIpcMemGetExportKey documentation. */
    static final int IPC_KEY_BYTES = 65;

    /** aclrtPtrAttributes: {aclrtMemLocation location {uint32 id; aclrtMemLocationType type}; uint32 pageSize; uint32 rsv[4]}. */
    static final long PTR_ATTRIBUTES_LOCATION_ID = 0;
    static final long PTR_ATTRIBUTES_LOCATION_TYPE = 4;
    static final long PTR_ATTRIBUTES_BYTES = 64;
    static final int MEM_LOCATION_TYPE_HOST = 0;
    static final int MEM_LOCATION_TYPE_DEVICE = 1;
    static final int MEM_LOCATION_TYPE_UNREGISTERED = 2;
    static final int MEM_LOCATION_TYPE_MANAGED = 3;
    static final int MEM_LOCATION_TYPE_HOST_NUMA = 4;

    /** Functions the platform cannot work without. */
    static final Map<String, FunctionDescriptor> REQUIRED = required();
    /** Functions of recent CANN releases, used when present. */
    static final Map<String, FunctionDescriptor> OPTIONAL = optional();

    private static Map<String, FunctionDescriptor> required() {
        Map<String, FunctionDescriptor> f = new LinkedHashMap<>();
        f.put("aclInit", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("aclrtGetDeviceCount", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("aclrtSetDevice", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
        f.put("aclrtGetMemInfo", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
        f.put("aclrtGetSocName", FunctionDescriptor.of(ADDRESS));
        f.put("aclrtMalloc", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
        f.put("aclrtFree", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("aclrtMallocHost", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        f.put("aclrtFreeHost", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("aclrtMemcpy", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_INT));
        f.put("aclrtCreateStream", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("aclrtMemcpyAsync", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS));
        f.put("aclrtSynchronizeStream", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("aclrtDestroyStream", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("aclGetRecentErrMsg", FunctionDescriptor.of(ADDRESS));
        return Collections.unmodifiableMap(f);
    }

    private static Map<String, FunctionDescriptor> optional() {
        Map<String, FunctionDescriptor> f = new LinkedHashMap<>();
        f.put("aclrtIpcMemGetExportKey", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG));
        f.put("aclrtIpcMemImportByKey", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG));
        f.put("aclrtIpcMemClose", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("aclrtPointerGetAttributes", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        return Collections.unmodifiableMap(f);
    }

    private static final Map<Integer, String> ERROR_NAMES = Map.ofEntries(
            Map.entry(100000, "ACL_ERROR_INVALID_PARAM"), Map.entry(100001, "ACL_ERROR_UNINITIALIZE"),
            Map.entry(100002, "ACL_ERROR_REPEAT_INITIALIZE"), Map.entry(100003, "ACL_ERROR_INVALID_FILE"),
            Map.entry(200000, "ACL_ERROR_BAD_ALLOC"), Map.entry(200001, "ACL_ERROR_API_NOT_SUPPORT"),
            Map.entry(200002, "ACL_ERROR_INVALID_DEVICE"), Map.entry(200003, "ACL_ERROR_MEMORY_ADDRESS_UNALIGNED"),
            Map.entry(200004, "ACL_ERROR_RESOURCE_NOT_MATCH"), Map.entry(200005, "ACL_ERROR_INVALID_RESOURCE_HANDLE"),
            Map.entry(200006, "ACL_ERROR_FEATURE_UNSUPPORTED"), Map.entry(300000, "ACL_ERROR_STORAGE_OVER_LIMIT"),
            Map.entry(500000, "ACL_ERROR_INTERNAL_ERROR"), Map.entry(500001, "ACL_ERROR_FAILURE"),
            Map.entry(500002, "ACL_ERROR_GE_FAILURE"), Map.entry(500003, "ACL_ERROR_RT_FAILURE"),
            Map.entry(500004, "ACL_ERROR_DRV_FAILURE"),
            Map.entry(107000, "ACL_ERROR_RT_PARAM_INVALID"), Map.entry(107001, "ACL_ERROR_RT_INVALID_DEVICEID"),
            Map.entry(107002, "ACL_ERROR_RT_CONTEXT_NULL"), Map.entry(107003, "ACL_ERROR_RT_STREAM_CONTEXT"),
            Map.entry(107008, "ACL_ERROR_RT_ADDR_UNALIGNED"), Map.entry(107016, "ACL_ERROR_RT_INVALID_MEMORY_TYPE"),
            Map.entry(107017, "ACL_ERROR_RT_INVALID_HANDLE"), Map.entry(107019, "ACL_ERROR_RT_WAIT_TIMEOUT"),
            Map.entry(207000, "ACL_ERROR_RT_FEATURE_NOT_SUPPORT"), Map.entry(207001, "ACL_ERROR_RT_MEMORY_ALLOCATION"),
            Map.entry(207002, "ACL_ERROR_RT_MEMORY_FREE"), Map.entry(207004, "ACL_ERROR_RT_NO_DEVICE"),
            Map.entry(207006, "ACL_ERROR_RT_NO_PERMISSION"), Map.entry(207018, "ACL_ERROR_RT_DEVICE_OOM"),
            Map.entry(507000, "ACL_ERROR_RT_INTERNAL_ERROR"), Map.entry(507022, "ACL_ERROR_RT_IPC_ERROR"),
            Map.entry(507033, "ACL_ERROR_RT_DEV_SETUP_ERROR"), Map.entry(507046, "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT"),
            Map.entry(507899, "ACL_ERROR_RT_DRV_INTERNAL_ERROR"));

    private final MethodHandle init;
    private final MethodHandle getDeviceCount;
    private final MethodHandle setDevice;
    private final MethodHandle getMemInfo;
    private final MethodHandle getSocName;
    private final MethodHandle malloc;
    private final MethodHandle free;
    private final MethodHandle mallocHost;
    private final MethodHandle freeHost;
    private final MethodHandle memcpy;
    private final MethodHandle createStream;
    private final MethodHandle memcpyAsync;
    private final MethodHandle synchronizeStream;
    private final MethodHandle destroyStream;
    private final MethodHandle getRecentErrMsg;
    private final MethodHandle ipcMemGetExportKey;
    private final MethodHandle ipcMemImportByKey;
    private final MethodHandle ipcMemClose;
    private final MethodHandle pointerGetAttributes;
    /**
     * Device blocks made through tent4j in this process, base address → block, shared by every platform opened on
     * this runtime: aclrtMemcpy needs to know device memory from host memory, whichever platform allocated it.
     */
    final ConcurrentSkipListMap<Long, Block> deviceBlocks = new ConcurrentSkipListMap<>();

    /** A device block and the IPC keys exported for it, which must be closed before it is freed. */
    record Block(long size, int device, List<String> exportedKeys) {
    }

    /** ACL binds a device to each host thread; remember the last one set on this thread to skip repeats. */
    private final ThreadLocal<int[]> threadDevice = ThreadLocal.withInitial(() -> new int[] {-1});

    private AclRuntime(NativeLibrary library) throws Availability.UnavailableException {
        super(library);
        init = bind("aclInit");
        getDeviceCount = bind("aclrtGetDeviceCount");
        setDevice = bind("aclrtSetDevice");
        getMemInfo = bind("aclrtGetMemInfo");
        getSocName = bind("aclrtGetSocName");
        malloc = bind("aclrtMalloc");
        free = bind("aclrtFree");
        mallocHost = bind("aclrtMallocHost");
        freeHost = bind("aclrtFreeHost");
        memcpy = bind("aclrtMemcpy");
        createStream = bind("aclrtCreateStream");
        memcpyAsync = bind("aclrtMemcpyAsync");
        synchronizeStream = bind("aclrtSynchronizeStream");
        destroyStream = bind("aclrtDestroyStream");
        getRecentErrMsg = bind("aclGetRecentErrMsg");
        ipcMemGetExportKey = optional("aclrtIpcMemGetExportKey");
        ipcMemImportByKey = optional("aclrtIpcMemImportByKey");
        ipcMemClose = optional("aclrtIpcMemClose");
        pointerGetAttributes = optional("aclrtPointerGetAttributes");
    }

    private MethodHandle bind(String symbol) throws Availability.UnavailableException {
        return library.bind(symbol, REQUIRED.get(symbol));
    }

    private MethodHandle optional(String symbol) {
        return library.bindOptional(symbol, OPTIONAL.get(symbol)).orElse(null);
    }

    static AclRuntime load(String what, List<String> candidates) throws Availability.UnavailableException {
        return new AclRuntime(NativeLibrary.open(what, candidates));
    }

    boolean hasIpc() {
        return ipcMemGetExportKey != null && ipcMemImportByKey != null && ipcMemClose != null;
    }

    boolean hasPointerAttributes() {
        return pointerGetAttributes != null;
    }

    // ---- error reporting -------------------------------------------------------------------------------------

    static String errorName(int rc) {
        return ERROR_NAMES.getOrDefault(rc, "ACL error");
    }

    /** {@code 107001 ACL_ERROR_RT_INVALID_DEVICEID (<aclGetRecentErrMsg text>)}. */
    @Override
    public String describe(int rc) {
        String recent;
        try {
            recent = NativeLibrary.string((MemorySegment) getRecentErrMsg.invokeExact()).strip();
        } catch (Throwable t) {
            recent = "";
        }
        return rc + " " + errorName(rc) + (recent.isEmpty() ? "" : " (" + recent + ")");
    }

    @Override
    protected ErrorCode codeOf(int rc) {
        return errorCode(rc);
    }

    static ErrorCode errorCode(int rc) {
        return switch (rc) {
            case ERROR_RT_NO_DEVICE, ERROR_UNINITIALIZE -> ErrorCode.TRANSPORT_UNAVAILABLE;
            case ERROR_INVALID_PARAM, ERROR_INVALID_DEVICE, ERROR_RT_PARAM_INVALID, ERROR_RT_INVALID_DEVICEID ->
                    ErrorCode.INVALID_ARGUMENT;
            default -> ErrorCode.INTERNAL;
        };
    }

    /** Binds {@code device} to the calling thread unless it already is. */
    void useDevice(int device) {
        int[] current = threadDevice.get();
        if (current[0] != device) {
            check(setDevice(device), "aclrtSetDevice(" + device + ")");
            current[0] = device;
        }
    }

    // ---- bound functions: each returns the aclError ---------------------------------------------------------

    int init(MemorySegment configPath) {
        try {
            return (int) init.invokeExact(configPath);
        } catch (Throwable t) {
            throw callFailed("aclInit", t);
        }
    }

    int getDeviceCount(MemorySegment count) {
        try {
            return (int) getDeviceCount.invokeExact(count);
        } catch (Throwable t) {
            throw callFailed("aclrtGetDeviceCount", t);
        }
    }

    int setDevice(int device) {
        try {
            return (int) setDevice.invokeExact(device);
        } catch (Throwable t) {
            throw callFailed("aclrtSetDevice", t);
        }
    }

    int getMemInfo(int attribute, MemorySegment free, MemorySegment total) {
        try {
            return (int) getMemInfo.invokeExact(attribute, free, total);
        } catch (Throwable t) {
            throw callFailed("aclrtGetMemInfo", t);
        }
    }

    String socName() {
        try {
            return NativeLibrary.string((MemorySegment) getSocName.invokeExact());
        } catch (Throwable t) {
            throw callFailed("aclrtGetSocName", t);
        }
    }

    int malloc(MemorySegment pointerOut, long size, int policy) {
        try {
            return (int) malloc.invokeExact(pointerOut, size, policy);
        } catch (Throwable t) {
            throw callFailed("aclrtMalloc", t);
        }
    }

    int free(MemorySegment pointer) {
        try {
            return (int) free.invokeExact(pointer);
        } catch (Throwable t) {
            throw callFailed("aclrtFree", t);
        }
    }

    int mallocHost(MemorySegment pointerOut, long size) {
        try {
            return (int) mallocHost.invokeExact(pointerOut, size);
        } catch (Throwable t) {
            throw callFailed("aclrtMallocHost", t);
        }
    }

    int freeHost(MemorySegment pointer) {
        try {
            return (int) freeHost.invokeExact(pointer);
        } catch (Throwable t) {
            throw callFailed("aclrtFreeHost", t);
        }
    }

    int memcpy(MemorySegment dst, long destMax, MemorySegment src, long count, int kind) {
        try {
            return (int) memcpy.invokeExact(dst, destMax, src, count, kind);
        } catch (Throwable t) {
            throw callFailed("aclrtMemcpy", t);
        }
    }

    int createStream(MemorySegment streamOut) {
        try {
            return (int) createStream.invokeExact(streamOut);
        } catch (Throwable t) {
            throw callFailed("aclrtCreateStream", t);
        }
    }

    int memcpyAsync(MemorySegment dst, long destMax, MemorySegment src, long count, int kind, MemorySegment stream) {
        try {
            return (int) memcpyAsync.invokeExact(dst, destMax, src, count, kind, stream);
        } catch (Throwable t) {
            throw callFailed("aclrtMemcpyAsync", t);
        }
    }

    int synchronizeStream(MemorySegment stream) {
        try {
            return (int) synchronizeStream.invokeExact(stream);
        } catch (Throwable t) {
            throw callFailed("aclrtSynchronizeStream", t);
        }
    }

    int destroyStream(MemorySegment stream) {
        try {
            return (int) destroyStream.invokeExact(stream);
        } catch (Throwable t) {
            throw callFailed("aclrtDestroyStream", t);
        }
    }

    private MethodHandle require(MethodHandle h, String symbol) {
        if (h == null) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, library.openedFrom() + " has no " + symbol
                    + " (Ascend IPC needs a CANN release that provides it)");
        }
        return h;
    }

    int ipcMemGetExportKey(MemorySegment devicePointer, long size, MemorySegment key, long keyLength, long flags) {
        MethodHandle h = require(ipcMemGetExportKey, "aclrtIpcMemGetExportKey");
        try {
            return (int) h.invokeExact(devicePointer, size, key, keyLength, flags);
        } catch (Throwable t) {
            throw callFailed("aclrtIpcMemGetExportKey", t);
        }
    }

    int ipcMemImportByKey(MemorySegment pointerOut, MemorySegment key, long flags) {
        MethodHandle h = require(ipcMemImportByKey, "aclrtIpcMemImportByKey");
        try {
            return (int) h.invokeExact(pointerOut, key, flags);
        } catch (Throwable t) {
            throw callFailed("aclrtIpcMemImportByKey", t);
        }
    }

    int ipcMemClose(MemorySegment key) {
        MethodHandle h = require(ipcMemClose, "aclrtIpcMemClose");
        try {
            return (int) h.invokeExact(key);
        } catch (Throwable t) {
            throw callFailed("aclrtIpcMemClose", t);
        }
    }

    int pointerGetAttributes(MemorySegment pointer, MemorySegment attributes) {
        MethodHandle h = require(pointerGetAttributes, "aclrtPointerGetAttributes");
        try {
            return (int) h.invokeExact(pointer, attributes);
        } catch (Throwable t) {
            throw callFailed("aclrtPointerGetAttributes", t);
        }
    }
}
