package org.tent4j.platform.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.platform.common.BlockIpcPlatform;
import org.tent4j.platform.common.NativeRuntime;
import org.tent4j.spi.NativeLibrary;

/**
 * The CUDA runtime ({@code libcudart}) functions this platform calls, bound through FFM.
 *
 * <p>Only plain-integer and pointer signatures are bound, plus the 64-byte {@code cudaIpcMemHandle_t} passed by
 * value. Struct layouts that changed between CUDA versions are avoided: {@code cudaDeviceProp} is read only at
 * {@code name} (offset 0) and {@code totalGlobalMem} (offset 288, unchanged since CUDA 10), and
 * {@code cudaPointerAttributes} only at its first four fields, which every version since CUDA 10 shares (CUDA 13
 * appended {@code reserved[8]}, so the buffer is sized for that). The layout test checks all of these offsets against
 * the installed headers.
 */
final class CudaRuntime extends NativeRuntime {
    static final int SUCCESS = 0;
    static final int ERROR_INVALID_VALUE = 1;
    static final int ERROR_MEMORY_ALLOCATION = 2;
    static final int ERROR_INITIALIZATION = 3;
    static final int ERROR_INVALID_DEVICE_POINTER = 17;
    static final int ERROR_INSUFFICIENT_DRIVER = 35;
    static final int ERROR_DEVICES_UNAVAILABLE = 46;
    static final int ERROR_NO_DEVICE = 100;
    static final int ERROR_INVALID_DEVICE = 101;
    static final int ERROR_INVALID_RESOURCE_HANDLE = 400;

    static final int MEMCPY_DEFAULT = 4;
    static final int STREAM_NON_BLOCKING = 1;
    static final int IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1;

    static final int MEMORY_TYPE_UNREGISTERED = 0;
    static final int MEMORY_TYPE_HOST = 1;
    static final int MEMORY_TYPE_DEVICE = 2;
    static final int MEMORY_TYPE_MANAGED = 3;

    static final int ATTR_UNIFIED_ADDRESSING = 41;
    static final int ATTR_COMPUTE_CAPABILITY_MAJOR = 75;
    static final int ATTR_COMPUTE_CAPABILITY_MINOR = 76;

    static final long POINTER_ATTRIBUTES_TYPE = 0;
    static final long POINTER_ATTRIBUTES_DEVICE = 4;
    static final long POINTER_ATTRIBUTES_DEVICE_POINTER = 8;
    static final long POINTER_ATTRIBUTES_HOST_POINTER = 16;
    /** At least sizeof(cudaPointerAttributes) of every version (24 before CUDA 13, 88 in CUDA 13). */
    static final long POINTER_ATTRIBUTES_BYTES = 256;

    static final long DEVICE_PROP_NAME = 0;
    static final long DEVICE_PROP_NAME_BYTES = 256;
    static final long DEVICE_PROP_TOTAL_GLOBAL_MEM = 288;
    /** Far above sizeof(cudaDeviceProp) of any version (1008 in CUDA 13), since the runtime writes all of it. */
    static final long DEVICE_PROP_BYTES = 8192;

    static final int IPC_HANDLE_BYTES = 64;
    static final StructLayout IPC_MEM_HANDLE = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(IPC_HANDLE_BYTES, JAVA_BYTE).withName("reserved")).withName("cudaIpcMemHandle_st");

    /** Every function bound from libcudart, by symbol; the symbol test resolves each one against the real library. */
    static final Map<String, FunctionDescriptor> FUNCTIONS = functions();

    private static Map<String, FunctionDescriptor> functions() {
        Map<String, FunctionDescriptor> f = new LinkedHashMap<>();
        f.put("cudaRuntimeGetVersion", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("cudaDriverGetVersion", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("cudaGetDeviceCount", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("cudaDeviceGetAttribute", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        f.put("cudaDeviceGetPCIBusId", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        f.put("cudaGetDeviceProperties", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        f.put("cudaMemGetInfo", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        f.put("cudaSetDevice", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
        f.put("cudaGetDevice", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("cudaMalloc", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        f.put("cudaFree", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("cudaMallocHost", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        f.put("cudaFreeHost", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("cudaPointerGetAttributes", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        f.put("cudaMemcpy", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT));
        f.put("cudaStreamCreateWithFlags", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        f.put("cudaMemcpyAsync", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS));
        f.put("cudaStreamSynchronize", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("cudaStreamDestroy", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("cudaIpcGetMemHandle", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        f.put("cudaIpcOpenMemHandle", FunctionDescriptor.of(JAVA_INT, ADDRESS, IPC_MEM_HANDLE, JAVA_INT));
        f.put("cudaIpcCloseMemHandle", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("cudaGetLastError", FunctionDescriptor.of(JAVA_INT));
        f.put("cudaGetErrorName", FunctionDescriptor.of(ADDRESS, JAVA_INT));
        f.put("cudaGetErrorString", FunctionDescriptor.of(ADDRESS, JAVA_INT));
        return Collections.unmodifiableMap(f);
    }

    /** The one driver-API function used, to find the cudaMalloc block of memory this platform did not allocate. */
    static final String DRIVER_ADDRESS_RANGE = "cuMemGetAddressRange_v2";
    static final FunctionDescriptor DRIVER_ADDRESS_RANGE_DESCRIPTOR =
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG);
    static final List<String> DRIVER_LIBRARIES = List.of("libcuda.so.1", "libcuda.so");

    private final MethodHandle runtimeGetVersion;
    private final MethodHandle driverGetVersion;
    private final MethodHandle getDeviceCount;
    private final MethodHandle deviceGetAttribute;
    private final MethodHandle deviceGetPciBusId;
    private final MethodHandle getDeviceProperties;
    private final MethodHandle memGetInfo;
    private final MethodHandle setDevice;
    private final MethodHandle getDevice;
    private final MethodHandle malloc;
    private final MethodHandle free;
    private final MethodHandle mallocHost;
    private final MethodHandle freeHost;
    private final MethodHandle pointerGetAttributes;
    private final MethodHandle memcpy;
    private final MethodHandle streamCreateWithFlags;
    private final MethodHandle memcpyAsync;
    private final MethodHandle streamSynchronize;
    private final MethodHandle streamDestroy;
    private final MethodHandle ipcGetMemHandle;
    private final MethodHandle ipcOpenMemHandle;
    private final MethodHandle ipcCloseMemHandle;
    private final MethodHandle getLastError;
    private final MethodHandle getErrorName;
    private final MethodHandle getErrorString;
    private volatile MethodHandle driverAddressRange;
    private volatile boolean driverLookedUp;
    /**
     * cudaMalloc blocks made through tent4j in this process, base address → block, shared by every platform opened
     * on this runtime: CUDA memory belongs to the process, so one platform may export what another allocated.
     */
    final ConcurrentSkipListMap<Long, BlockIpcPlatform.Block> deviceBlocks = new ConcurrentSkipListMap<>();

    private CudaRuntime(NativeLibrary library) throws Availability.UnavailableException {
        super(library);
        runtimeGetVersion = bind("cudaRuntimeGetVersion");
        driverGetVersion = bind("cudaDriverGetVersion");
        getDeviceCount = bind("cudaGetDeviceCount");
        deviceGetAttribute = bind("cudaDeviceGetAttribute");
        deviceGetPciBusId = bind("cudaDeviceGetPCIBusId");
        getDeviceProperties = bind("cudaGetDeviceProperties");
        memGetInfo = bind("cudaMemGetInfo");
        setDevice = bind("cudaSetDevice");
        getDevice = bind("cudaGetDevice");
        malloc = bind("cudaMalloc");
        free = bind("cudaFree");
        mallocHost = bind("cudaMallocHost");
        freeHost = bind("cudaFreeHost");
        pointerGetAttributes = bind("cudaPointerGetAttributes");
        memcpy = bind("cudaMemcpy");
        streamCreateWithFlags = bind("cudaStreamCreateWithFlags");
        memcpyAsync = bind("cudaMemcpyAsync");
        streamSynchronize = bind("cudaStreamSynchronize");
        streamDestroy = bind("cudaStreamDestroy");
        ipcGetMemHandle = bind("cudaIpcGetMemHandle");
        ipcOpenMemHandle = bind("cudaIpcOpenMemHandle");
        ipcCloseMemHandle = bind("cudaIpcCloseMemHandle");
        getLastError = bind("cudaGetLastError");
        getErrorName = bind("cudaGetErrorName");
        getErrorString = bind("cudaGetErrorString");
    }

    private MethodHandle bind(String symbol) throws Availability.UnavailableException {
        return library.bind(symbol, FUNCTIONS.get(symbol));
    }

    /** Opens the first loadable candidate and binds every function. */
    static CudaRuntime load(String what, List<String> candidates) throws Availability.UnavailableException {
        return new CudaRuntime(NativeLibrary.open(what, candidates));
    }

    // ---- error reporting -------------------------------------------------------------------------------------

    /** {@code 35 cudaErrorInsufficientDriver (CUDA driver version is insufficient for CUDA runtime version)}. */
    @Override
    public String describe(int rc) {
        String name;
        String text;
        try {
            name = NativeLibrary.string((MemorySegment) getErrorName.invokeExact(rc));
            text = NativeLibrary.string((MemorySegment) getErrorString.invokeExact(rc));
        } catch (Throwable t) {
            return rc + " (cudaGetErrorName failed: " + t + ")";
        }
        return rc + " " + name + " (" + text + ")";
    }

    @Override
    protected ErrorCode codeOf(int rc) {
        return errorCode(rc);
    }

    static ErrorCode errorCode(int rc) {
        return switch (rc) {
            case ERROR_INSUFFICIENT_DRIVER, ERROR_NO_DEVICE, ERROR_INITIALIZATION, ERROR_DEVICES_UNAVAILABLE ->
                    ErrorCode.TRANSPORT_UNAVAILABLE;
            case ERROR_INVALID_VALUE, ERROR_INVALID_DEVICE, ERROR_INVALID_DEVICE_POINTER, ERROR_INVALID_RESOURCE_HANDLE ->
                    ErrorCode.INVALID_ARGUMENT;
            default -> ErrorCode.INTERNAL;
        };
    }

    @Override
    public void clearLastError() {
        try {
            int ignored = (int) getLastError.invokeExact();
        } catch (Throwable t) {
            // nothing to report: this only resets the thread's sticky-free error slot
        }
    }

    // ---- bound functions: each returns the cudaError_t ------------------------------------------------------

    int runtimeGetVersion(MemorySegment version) {
        try {
            return (int) runtimeGetVersion.invokeExact(version);
        } catch (Throwable t) {
            throw callFailed("cudaRuntimeGetVersion", t);
        }
    }

    int driverGetVersion(MemorySegment version) {
        try {
            return (int) driverGetVersion.invokeExact(version);
        } catch (Throwable t) {
            throw callFailed("cudaDriverGetVersion", t);
        }
    }

    int getDeviceCount(MemorySegment count) {
        try {
            return (int) getDeviceCount.invokeExact(count);
        } catch (Throwable t) {
            throw callFailed("cudaGetDeviceCount", t);
        }
    }

    int deviceGetAttribute(MemorySegment value, int attribute, int device) {
        try {
            return (int) deviceGetAttribute.invokeExact(value, attribute, device);
        } catch (Throwable t) {
            throw callFailed("cudaDeviceGetAttribute", t);
        }
    }

    int deviceGetPciBusId(MemorySegment buffer, int length, int device) {
        try {
            return (int) deviceGetPciBusId.invokeExact(buffer, length, device);
        } catch (Throwable t) {
            throw callFailed("cudaDeviceGetPCIBusId", t);
        }
    }

    int getDeviceProperties(MemorySegment properties, int device) {
        try {
            return (int) getDeviceProperties.invokeExact(properties, device);
        } catch (Throwable t) {
            throw callFailed("cudaGetDeviceProperties", t);
        }
    }

    int memGetInfo(MemorySegment free, MemorySegment total) {
        try {
            return (int) memGetInfo.invokeExact(free, total);
        } catch (Throwable t) {
            throw callFailed("cudaMemGetInfo", t);
        }
    }

    int setDevice(int device) {
        try {
            return (int) setDevice.invokeExact(device);
        } catch (Throwable t) {
            throw callFailed("cudaSetDevice", t);
        }
    }

    int getDevice(MemorySegment device) {
        try {
            return (int) getDevice.invokeExact(device);
        } catch (Throwable t) {
            throw callFailed("cudaGetDevice", t);
        }
    }

    int malloc(MemorySegment pointerOut, long size) {
        try {
            return (int) malloc.invokeExact(pointerOut, size);
        } catch (Throwable t) {
            throw callFailed("cudaMalloc", t);
        }
    }

    int free(MemorySegment pointer) {
        try {
            return (int) free.invokeExact(pointer);
        } catch (Throwable t) {
            throw callFailed("cudaFree", t);
        }
    }

    int mallocHost(MemorySegment pointerOut, long size) {
        try {
            return (int) mallocHost.invokeExact(pointerOut, size);
        } catch (Throwable t) {
            throw callFailed("cudaMallocHost", t);
        }
    }

    int freeHost(MemorySegment pointer) {
        try {
            return (int) freeHost.invokeExact(pointer);
        } catch (Throwable t) {
            throw callFailed("cudaFreeHost", t);
        }
    }

    int pointerGetAttributes(MemorySegment attributes, MemorySegment pointer) {
        try {
            return (int) pointerGetAttributes.invokeExact(attributes, pointer);
        } catch (Throwable t) {
            throw callFailed("cudaPointerGetAttributes", t);
        }
    }

    int memcpy(MemorySegment dst, MemorySegment src, long count, int kind) {
        try {
            return (int) memcpy.invokeExact(dst, src, count, kind);
        } catch (Throwable t) {
            throw callFailed("cudaMemcpy", t);
        }
    }

    int streamCreateWithFlags(MemorySegment streamOut, int flags) {
        try {
            return (int) streamCreateWithFlags.invokeExact(streamOut, flags);
        } catch (Throwable t) {
            throw callFailed("cudaStreamCreateWithFlags", t);
        }
    }

    int memcpyAsync(MemorySegment dst, MemorySegment src, long count, int kind, MemorySegment stream) {
        try {
            return (int) memcpyAsync.invokeExact(dst, src, count, kind, stream);
        } catch (Throwable t) {
            throw callFailed("cudaMemcpyAsync", t);
        }
    }

    int streamSynchronize(MemorySegment stream) {
        try {
            return (int) streamSynchronize.invokeExact(stream);
        } catch (Throwable t) {
            throw callFailed("cudaStreamSynchronize", t);
        }
    }

    int streamDestroy(MemorySegment stream) {
        try {
            return (int) streamDestroy.invokeExact(stream);
        } catch (Throwable t) {
            throw callFailed("cudaStreamDestroy", t);
        }
    }

    int ipcGetMemHandle(MemorySegment handleOut, MemorySegment devicePointer) {
        try {
            return (int) ipcGetMemHandle.invokeExact(handleOut, devicePointer);
        } catch (Throwable t) {
            throw callFailed("cudaIpcGetMemHandle", t);
        }
    }

    /** {@code handle} is passed by value, as the C signature takes the struct itself. */
    int ipcOpenMemHandle(MemorySegment pointerOut, MemorySegment handle, int flags) {
        try {
            return (int) ipcOpenMemHandle.invokeExact(pointerOut, handle, flags);
        } catch (Throwable t) {
            throw callFailed("cudaIpcOpenMemHandle", t);
        }
    }

    int ipcCloseMemHandle(MemorySegment pointer) {
        try {
            return (int) ipcCloseMemHandle.invokeExact(pointer);
        } catch (Throwable t) {
            throw callFailed("cudaIpcCloseMemHandle", t);
        }
    }

    /**
     * The base and size of the allocation holding {@code address} through the driver API, or {@code null} when
     * libcuda or the symbol is missing or the driver does not know the address. The runtime API has no equivalent.
     */
    long[] driverAddressRange(long address) {
        MethodHandle h = driverAddressRange();
        if (h == null) {
            return null;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment base = arena.allocate(JAVA_LONG);
            MemorySegment size = arena.allocate(JAVA_LONG);
            int rc = (int) h.invokeExact(base, size, address);
            if (rc != 0) {
                return null;
            }
            return new long[] {base.get(JAVA_LONG, 0), size.get(JAVA_LONG, 0)};
        } catch (Throwable t) {
            return null;
        }
    }

    private MethodHandle driverAddressRange() {
        if (!driverLookedUp) {
            synchronized (this) {
                if (!driverLookedUp) {
                    // a runtime library never exports driver functions; a test stand-in for both may
                    driverAddressRange = library.bindOptional(DRIVER_ADDRESS_RANGE, DRIVER_ADDRESS_RANGE_DESCRIPTOR)
                            .orElse(null);
                    if (driverAddressRange == null) {
                        try {
                            NativeLibrary driver = NativeLibrary.open("libcuda.so.1", DRIVER_LIBRARIES);
                            driverAddressRange = driver.bindOptional(DRIVER_ADDRESS_RANGE, DRIVER_ADDRESS_RANGE_DESCRIPTOR)
                                    .orElse(null);
                        } catch (Availability.UnavailableException e) {
                            driverAddressRange = null;
                        }
                    }
                    driverLookedUp = true;
                }
            }
        }
        return driverAddressRange;
    }
}
