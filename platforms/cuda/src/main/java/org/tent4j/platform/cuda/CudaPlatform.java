package org.tent4j.platform.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferException;
import org.tent4j.platform.common.BlockIpcPlatform;
import org.tent4j.platform.common.NativeStream;
import org.tent4j.spi.platform.DeviceInfo;
import org.tent4j.spi.platform.PointerInfo;

/**
 * CUDA device memory through libcudart: the runtime calls under {@link BlockIpcPlatform}, which holds the
 * bookkeeping and checks it shares with ROCm. IPC handles are {@code cudaIpcMemHandle_t} (64 bytes) plus the offset.
 */
final class CudaPlatform extends BlockIpcPlatform {
    private static final Logger LOG = LoggerFactory.getLogger(CudaPlatform.class);
    private static final Names NAMES = new Names("cuda", "CUDA device", "cudaMalloc", "cudaFree", "cudaFreeHost",
            "cudaIpcGetMemHandle", "cudaIpcCloseMemHandle", "cudaIpcMemHandle_t");

    static final int IPC_HANDLE_BYTES = CudaRuntime.IPC_HANDLE_BYTES + Long.BYTES;

    private final CudaRuntime cuda;

    CudaPlatform(CudaRuntime cuda, int deviceCount) {
        super(NAMES, MemoryKind.CUDA, deviceCount, CudaRuntime.IPC_HANDLE_BYTES, cuda.deviceBlocks);
        this.cuda = cuda;
    }

    @Override
    protected DeviceInfo probeDevice(int i) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment props = arena.allocate(CudaRuntime.DEVICE_PROP_BYTES, 8);
            cuda.check(cuda.getDeviceProperties(props, i), "cudaGetDeviceProperties(cuda:" + i + ")");
            String name = props.asSlice(CudaRuntime.DEVICE_PROP_NAME, CudaRuntime.DEVICE_PROP_NAME_BYTES).getString(0);
            long total = props.get(JAVA_LONG, CudaRuntime.DEVICE_PROP_TOTAL_GLOBAL_MEM);
            MemorySegment pci = arena.allocate(64);
            int rc = cuda.deviceGetPciBusId(pci, (int) pci.byteSize(), i);
            String busId = "";
            if (rc == CudaRuntime.SUCCESS) {
                busId = pci.getString(0);
            } else {
                LOG.debug("cudaDeviceGetPCIBusId(cuda:{}) failed: {}", i, cuda.describe(rc));
                cuda.clearLastError();
            }
            return DeviceInfo.of(i, name, total, busId);
        }
    }

    /** A device attribute ({@code cudaDeviceAttr}), e.g. compute capability. */
    int attribute(int attribute, int device) {
        checkDevice(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = arena.allocate(JAVA_INT);
            cuda.check(cuda.deviceGetAttribute(value, attribute, device),
                    "cudaDeviceGetAttribute(attribute " + attribute + ", cuda:" + device + ")");
            return value.get(JAVA_INT, 0);
        }
    }

    @Override
    protected long deviceMalloc(int device, long size) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = cuda.malloc(out, size);
            if (rc != CudaRuntime.SUCCESS) {
                throw cuda.error(rc, "cudaMalloc(" + size + " bytes on cuda:" + device + ")");
            }
            return out.get(ADDRESS, 0).address();
        }
    }

    @Override
    protected void deviceFree(long address) {
        cuda.check(cuda.free(MemorySegment.ofAddress(address)), "cudaFree(0x" + Long.toHexString(address) + ")");
    }

    @Override
    protected long hostMalloc(long size) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = cuda.mallocHost(out, size);
            if (rc != CudaRuntime.SUCCESS) {
                throw cuda.error(rc, "cudaMallocHost(" + size + " bytes)");
            }
            return out.get(ADDRESS, 0).address();
        }
    }

    @Override
    protected void hostFree(long address) {
        cuda.check(cuda.freeHost(MemorySegment.ofAddress(address)), "cudaFreeHost(0x" + Long.toHexString(address) + ")");
    }

    @Override
    protected PointerInfo pointerInfo(long address) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attributes = arena.allocate(CudaRuntime.POINTER_ATTRIBUTES_BYTES, 8);
            int rc = cuda.pointerGetAttributes(attributes, MemorySegment.ofAddress(address));
            if (rc == CudaRuntime.ERROR_INVALID_VALUE) {
                // CUDA before 11.0 reports memory it never saw (plain malloc) this way instead of "unregistered"
                cuda.clearLastError();
                return PointerInfo.of(Location.CPU, false);
            }
            if (rc != CudaRuntime.SUCCESS) {
                throw cuda.error(rc, "cudaPointerGetAttributes(0x" + Long.toHexString(address) + ")");
            }
            int type = attributes.get(JAVA_INT, CudaRuntime.POINTER_ATTRIBUTES_TYPE);
            int device = attributes.get(JAVA_INT, CudaRuntime.POINTER_ATTRIBUTES_DEVICE);
            return switch (type) {
                case CudaRuntime.MEMORY_TYPE_UNREGISTERED -> PointerInfo.of(Location.CPU, false);
                case CudaRuntime.MEMORY_TYPE_HOST -> PointerInfo.of(Location.CPU, true);
                case CudaRuntime.MEMORY_TYPE_DEVICE, CudaRuntime.MEMORY_TYPE_MANAGED ->
                        PointerInfo.of(Location.device(MemoryKind.CUDA, device), false);
                default -> throw new TransferException(ErrorCode.INTERNAL, "cudaPointerGetAttributes(0x"
                        + Long.toHexString(address) + ") returned unknown memory type " + type);
            };
        }
    }

    @Override
    protected void memcpy(MemorySegment dst, MemorySegment src, long length) {
        int rc = cuda.memcpy(dst, src, length, CudaRuntime.MEMCPY_DEFAULT);
        if (rc != CudaRuntime.SUCCESS) {
            throw cuda.error(rc, "cudaMemcpy(dst=0x" + Long.toHexString(dst.address()) + ", src=0x"
                    + Long.toHexString(src.address()) + ", " + length + " bytes)");
        }
    }

    @Override
    protected NativeStream newStream(int device, Consumer<NativeStream> forget) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = cuda.streamCreateWithFlags(out, CudaRuntime.STREAM_NON_BLOCKING);
            if (rc != CudaRuntime.SUCCESS) {
                throw cuda.error(rc, "cudaStreamCreateWithFlags(cuda:" + device + ", cudaStreamNonBlocking)");
            }
            return new CudaStream(cuda, MemorySegment.ofAddress(out.get(ADDRESS, 0).address()), device, forget);
        }
    }

    /** Through the driver's {@code cuMemGetAddressRange}, which the runtime API lacks, on {@code device}. */
    @Override
    protected long foreignBlockBase(long address, long length, int device) {
        int previous = switchTo(device);
        long[] range;
        try {
            range = cuda.driverAddressRange(address);
        } finally {
            restore(previous, device);
        }
        if (range == null || address - range[0] > range[1] - length) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "cudaIpcGetMemHandle(0x"
                    + Long.toHexString(address) + ", " + length + " bytes) refused: the memory was not allocated by"
                    + " this platform and its cudaMalloc block cannot be found (" + CudaRuntime.DRIVER_ADDRESS_RANGE
                    + " from libcuda.so.1 " + (range == null ? "unavailable or failed" : "reports a smaller block") + ")");
        }
        return range[0];
    }

    @Override
    protected void ipcGetMemHandle(long base, int device, MemorySegment handle) {
        int rc = cuda.ipcGetMemHandle(handle, MemorySegment.ofAddress(base));
        if (rc != CudaRuntime.SUCCESS) {
            throw cuda.error(rc, "cudaIpcGetMemHandle(0x" + Long.toHexString(base) + " on cuda:" + device + ")");
        }
    }

    @Override
    protected long ipcOpenMemHandle(MemorySegment handle, int device, long size, long offset) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = cuda.ipcOpenMemHandle(out, handle, CudaRuntime.IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
            if (rc != CudaRuntime.SUCCESS) {
                throw cuda.error(rc, "cudaIpcOpenMemHandle(on cuda:" + device + ", " + size + " bytes at offset "
                        + offset + ")");
            }
            return out.get(ADDRESS, 0).address();
        }
    }

    @Override
    protected void ipcCloseMemHandle(long base) {
        cuda.check(cuda.ipcCloseMemHandle(MemorySegment.ofAddress(base)),
                "cudaIpcCloseMemHandle(0x" + Long.toHexString(base) + ")");
    }

    @Override
    protected int currentDeviceOrUnknown() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            return cuda.getDevice(out) == CudaRuntime.SUCCESS ? out.get(JAVA_INT, 0) : -1;
        }
    }

    @Override
    protected void selectDevice(int device) {
        cuda.check(cuda.setDevice(device), "cudaSetDevice(" + device + ")");
    }

    @Override
    protected void selectDeviceQuietly(int device) {
        if (cuda.setDevice(device) != CudaRuntime.SUCCESS) {
            cuda.clearLastError();
        }
    }
}
