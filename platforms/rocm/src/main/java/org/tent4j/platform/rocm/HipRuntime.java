package org.tent4j.platform.rocm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.platform.common.NativeRuntime;
import org.tent4j.spi.NativeLibrary;

/**
 * The HIP runtime ({@code libamdhip64}) functions this platform calls, bound through FFM.
 *
 * <p>{@code hipDeviceProp_t} changed layout between ROCm 5 and 6 and is never read: name, memory size and PCI bus id
 * come from {@code hipDeviceGetName}, {@code hipDeviceTotalMem} and {@code hipDeviceGetPCIBusId}.
 * {@code hipPointerAttribute_t} keeps its offsets across 5 and 6, but the {@code hipMemoryType} values were
 * renumbered in ROCm 6 (CUDA's numbering), as was {@code hipIpcMemLazyEnablePeerAccess} (0 in 5.x, 1 in 6.x); both
 * are chosen from {@code hipRuntimeGetVersion}.
 */
final class HipRuntime extends NativeRuntime {
    static final int SUCCESS = 0;
    static final int ERROR_INVALID_VALUE = 1;
    static final int ERROR_OUT_OF_MEMORY = 2;
    static final int ERROR_NOT_INITIALIZED = 3;
    static final int ERROR_INVALID_DEVICE_POINTER = 17;
    static final int ERROR_INSUFFICIENT_DRIVER = 35;
    static final int ERROR_NO_DEVICE = 100;
    static final int ERROR_INVALID_DEVICE = 101;
    static final int ERROR_INVALID_HANDLE = 400;

    static final int MEMCPY_DEFAULT = 4;
    static final int STREAM_NON_BLOCKING = 1;
    static final int HOST_MALLOC_DEFAULT = 0;
    static final int IPC_MEM_LAZY_ENABLE_PEER_ACCESS_V5 = 0;
    static final int IPC_MEM_LAZY_ENABLE_PEER_ACCESS_V6 = 1;

    /** hipMemoryType in ROCm 5.x. */
    static final int V5_MEMORY_TYPE_HOST = 0;
    static final int V5_MEMORY_TYPE_DEVICE = 1;
    static final int V5_MEMORY_TYPE_ARRAY = 2;
    static final int V5_MEMORY_TYPE_UNIFIED = 3;
    /** hipMemoryType from ROCm 6.0 on. */
    static final int V6_MEMORY_TYPE_UNREGISTERED = 0;
    static final int V6_MEMORY_TYPE_HOST = 1;
    static final int V6_MEMORY_TYPE_DEVICE = 2;
    static final int V6_MEMORY_TYPE_MANAGED = 3;
    static final int V6_MEMORY_TYPE_ARRAY = 10;
    static final int V6_MEMORY_TYPE_UNIFIED = 11;

    static final long POINTER_ATTRIBUTES_TYPE = 0;
    static final long POINTER_ATTRIBUTES_DEVICE = 4;
    static final long POINTER_ATTRIBUTES_DEVICE_POINTER = 8;
    static final long POINTER_ATTRIBUTES_HOST_POINTER = 16;
    /** Above sizeof(hipPointerAttribute_t) (32 in ROCm 5 and 6). */
    static final long POINTER_ATTRIBUTES_BYTES = 128;

    static final int IPC_HANDLE_BYTES = 64;
    static final StructLayout IPC_MEM_HANDLE = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(IPC_HANDLE_BYTES, JAVA_BYTE).withName("reserved")).withName("hipIpcMemHandle_st");

    /** Every function bound from libamdhip64, by symbol; the symbol test resolves each one against the real library. */
    static final Map<String, FunctionDescriptor> FUNCTIONS = functions();

    private static Map<String, FunctionDescriptor> functions() {
        Map<String, FunctionDescriptor> f = new LinkedHashMap<>();
        f.put("hipRuntimeGetVersion", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("hipGetDeviceCount", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("hipDeviceGetName", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        f.put("hipDeviceTotalMem", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        f.put("hipDeviceGetPCIBusId", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        f.put("hipSetDevice", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
        f.put("hipGetDevice", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("hipMalloc", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        f.put("hipFree", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("hipHostMalloc", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
        f.put("hipHostFree", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("hipPointerGetAttributes", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        f.put("hipMemGetAddressRange", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        f.put("hipMemcpy", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT));
        f.put("hipStreamCreateWithFlags", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        f.put("hipMemcpyAsync", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS));
        f.put("hipStreamSynchronize", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("hipStreamDestroy", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("hipIpcGetMemHandle", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        f.put("hipIpcOpenMemHandle", FunctionDescriptor.of(JAVA_INT, ADDRESS, IPC_MEM_HANDLE, JAVA_INT));
        f.put("hipIpcCloseMemHandle", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        f.put("hipGetLastError", FunctionDescriptor.of(JAVA_INT));
        f.put("hipGetErrorName", FunctionDescriptor.of(ADDRESS, JAVA_INT));
        f.put("hipGetErrorString", FunctionDescriptor.of(ADDRESS, JAVA_INT));
        return Collections.unmodifiableMap(f);
    }

    private final MethodHandle runtimeGetVersion;
    private final MethodHandle getDeviceCount;
    private final MethodHandle deviceGetName;
    private final MethodHandle deviceTotalMem;
    private final MethodHandle deviceGetPciBusId;
    private final MethodHandle setDevice;
    private final MethodHandle getDevice;
    private final MethodHandle malloc;
    private final MethodHandle free;
    private final MethodHandle hostMalloc;
    private final MethodHandle hostFree;
    private final MethodHandle pointerGetAttributes;
    private final MethodHandle memGetAddressRange;
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

    private HipRuntime(NativeLibrary library) throws Availability.UnavailableException {
        super(library);
        runtimeGetVersion = bind("hipRuntimeGetVersion");
        getDeviceCount = bind("hipGetDeviceCount");
        deviceGetName = bind("hipDeviceGetName");
        deviceTotalMem = bind("hipDeviceTotalMem");
        deviceGetPciBusId = bind("hipDeviceGetPCIBusId");
        setDevice = bind("hipSetDevice");
        getDevice = bind("hipGetDevice");
        malloc = bind("hipMalloc");
        free = bind("hipFree");
        hostMalloc = bind("hipHostMalloc");
        hostFree = bind("hipHostFree");
        pointerGetAttributes = bind("hipPointerGetAttributes");
        memGetAddressRange = bind("hipMemGetAddressRange");
        memcpy = bind("hipMemcpy");
        streamCreateWithFlags = bind("hipStreamCreateWithFlags");
        memcpyAsync = bind("hipMemcpyAsync");
        streamSynchronize = bind("hipStreamSynchronize");
        streamDestroy = bind("hipStreamDestroy");
        ipcGetMemHandle = bind("hipIpcGetMemHandle");
        ipcOpenMemHandle = bind("hipIpcOpenMemHandle");
        ipcCloseMemHandle = bind("hipIpcCloseMemHandle");
        getLastError = bind("hipGetLastError");
        getErrorName = bind("hipGetErrorName");
        getErrorString = bind("hipGetErrorString");
    }

    private MethodHandle bind(String symbol) throws Availability.UnavailableException {
        return library.bind(symbol, FUNCTIONS.get(symbol));
    }

    static HipRuntime load(String what, List<String> candidates) throws Availability.UnavailableException {
        return new HipRuntime(NativeLibrary.open(what, candidates));
    }

    /** ROCm major version from a {@code hipRuntimeGetVersion} value ({@code major * 10_000_000 + minor * 100_000 + patch}). */
    static int majorVersion(int runtimeVersion) {
        return runtimeVersion / 10_000_000;
    }

    // ---- error reporting -------------------------------------------------------------------------------------

    /** {@code 100 hipErrorNoDevice (no ROCm-capable device is detected)}; ROCm 5 has no separate text. */
    @Override
    public String describe(int rc) {
        String name;
        String text;
        try {
            name = NativeLibrary.string((MemorySegment) getErrorName.invokeExact(rc));
            text = NativeLibrary.string((MemorySegment) getErrorString.invokeExact(rc));
        } catch (Throwable t) {
            return rc + " (hipGetErrorName failed: " + t + ")";
        }
        return text.isEmpty() || text.equals(name) ? rc + " " + name : rc + " " + name + " (" + text + ")";
    }

    @Override
    protected ErrorCode codeOf(int rc) {
        return errorCode(rc);
    }

    static ErrorCode errorCode(int rc) {
        return switch (rc) {
            case ERROR_INSUFFICIENT_DRIVER, ERROR_NO_DEVICE, ERROR_NOT_INITIALIZED -> ErrorCode.TRANSPORT_UNAVAILABLE;
            case ERROR_INVALID_VALUE, ERROR_INVALID_DEVICE, ERROR_INVALID_DEVICE_POINTER, ERROR_INVALID_HANDLE ->
                    ErrorCode.INVALID_ARGUMENT;
            default -> ErrorCode.INTERNAL;
        };
    }

    @Override
    public void clearLastError() {
        try {
            int ignored = (int) getLastError.invokeExact();
        } catch (Throwable t) {
            // only resets the thread's last-error slot
        }
    }

    // ---- bound functions: each returns the hipError_t -------------------------------------------------------

    int runtimeGetVersion(MemorySegment version) {
        try {
            return (int) runtimeGetVersion.invokeExact(version);
        } catch (Throwable t) {
            throw callFailed("hipRuntimeGetVersion", t);
        }
    }

    int getDeviceCount(MemorySegment count) {
        try {
            return (int) getDeviceCount.invokeExact(count);
        } catch (Throwable t) {
            throw callFailed("hipGetDeviceCount", t);
        }
    }

    int deviceGetName(MemorySegment name, int length, int device) {
        try {
            return (int) deviceGetName.invokeExact(name, length, device);
        } catch (Throwable t) {
            throw callFailed("hipDeviceGetName", t);
        }
    }

    int deviceTotalMem(MemorySegment bytes, int device) {
        try {
            return (int) deviceTotalMem.invokeExact(bytes, device);
        } catch (Throwable t) {
            throw callFailed("hipDeviceTotalMem", t);
        }
    }

    int deviceGetPciBusId(MemorySegment buffer, int length, int device) {
        try {
            return (int) deviceGetPciBusId.invokeExact(buffer, length, device);
        } catch (Throwable t) {
            throw callFailed("hipDeviceGetPCIBusId", t);
        }
    }

    int setDevice(int device) {
        try {
            return (int) setDevice.invokeExact(device);
        } catch (Throwable t) {
            throw callFailed("hipSetDevice", t);
        }
    }

    int getDevice(MemorySegment device) {
        try {
            return (int) getDevice.invokeExact(device);
        } catch (Throwable t) {
            throw callFailed("hipGetDevice", t);
        }
    }

    int malloc(MemorySegment pointerOut, long size) {
        try {
            return (int) malloc.invokeExact(pointerOut, size);
        } catch (Throwable t) {
            throw callFailed("hipMalloc", t);
        }
    }

    int free(MemorySegment pointer) {
        try {
            return (int) free.invokeExact(pointer);
        } catch (Throwable t) {
            throw callFailed("hipFree", t);
        }
    }

    int hostMalloc(MemorySegment pointerOut, long size, int flags) {
        try {
            return (int) hostMalloc.invokeExact(pointerOut, size, flags);
        } catch (Throwable t) {
            throw callFailed("hipHostMalloc", t);
        }
    }

    int hostFree(MemorySegment pointer) {
        try {
            return (int) hostFree.invokeExact(pointer);
        } catch (Throwable t) {
            throw callFailed("hipHostFree", t);
        }
    }

    int pointerGetAttributes(MemorySegment attributes, MemorySegment pointer) {
        try {
            return (int) pointerGetAttributes.invokeExact(attributes, pointer);
        } catch (Throwable t) {
            throw callFailed("hipPointerGetAttributes", t);
        }
    }

    int memGetAddressRange(MemorySegment baseOut, MemorySegment sizeOut, MemorySegment pointer) {
        try {
            return (int) memGetAddressRange.invokeExact(baseOut, sizeOut, pointer);
        } catch (Throwable t) {
            throw callFailed("hipMemGetAddressRange", t);
        }
    }

    int memcpy(MemorySegment dst, MemorySegment src, long count, int kind) {
        try {
            return (int) memcpy.invokeExact(dst, src, count, kind);
        } catch (Throwable t) {
            throw callFailed("hipMemcpy", t);
        }
    }

    int streamCreateWithFlags(MemorySegment streamOut, int flags) {
        try {
            return (int) streamCreateWithFlags.invokeExact(streamOut, flags);
        } catch (Throwable t) {
            throw callFailed("hipStreamCreateWithFlags", t);
        }
    }

    int memcpyAsync(MemorySegment dst, MemorySegment src, long count, int kind, MemorySegment stream) {
        try {
            return (int) memcpyAsync.invokeExact(dst, src, count, kind, stream);
        } catch (Throwable t) {
            throw callFailed("hipMemcpyAsync", t);
        }
    }

    int streamSynchronize(MemorySegment stream) {
        try {
            return (int) streamSynchronize.invokeExact(stream);
        } catch (Throwable t) {
            throw callFailed("hipStreamSynchronize", t);
        }
    }

    int streamDestroy(MemorySegment stream) {
        try {
            return (int) streamDestroy.invokeExact(stream);
        } catch (Throwable t) {
            throw callFailed("hipStreamDestroy", t);
        }
    }

    int ipcGetMemHandle(MemorySegment handleOut, MemorySegment devicePointer) {
        try {
            return (int) ipcGetMemHandle.invokeExact(handleOut, devicePointer);
        } catch (Throwable t) {
            throw callFailed("hipIpcGetMemHandle", t);
        }
    }

    /** {@code handle} is passed by value, as the C signature takes the struct itself. */
    int ipcOpenMemHandle(MemorySegment pointerOut, MemorySegment handle, int flags) {
        try {
            return (int) ipcOpenMemHandle.invokeExact(pointerOut, handle, flags);
        } catch (Throwable t) {
            throw callFailed("hipIpcOpenMemHandle", t);
        }
    }

    int ipcCloseMemHandle(MemorySegment pointer) {
        try {
            return (int) ipcCloseMemHandle.invokeExact(pointer);
        } catch (Throwable t) {
            throw callFailed("hipIpcCloseMemHandle", t);
        }
    }
}
