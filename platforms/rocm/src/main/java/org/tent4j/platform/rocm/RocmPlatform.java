package org.tent4j.platform.rocm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentSkipListMap;
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
 * ROCm device memory through libamdhip64: the runtime calls under {@link BlockIpcPlatform}, which holds the
 * bookkeeping and checks it shares with CUDA. IPC handles are {@code hipIpcMemHandle_t} (64 bytes) plus the offset.
 * Pointer types and the IPC open flag changed numbering in ROCm 6, so both follow the runtime's major version.
 */
final class RocmPlatform extends BlockIpcPlatform {
    private static final Logger LOG = LoggerFactory.getLogger(RocmPlatform.class);
    private static final Names NAMES = new Names("rocm", "ROCm device", "hipMalloc", "hipFree", "hipHostFree",
            "hipIpcGetMemHandle", "hipIpcCloseMemHandle", "hipIpcMemHandle_t");

    static final int IPC_HANDLE_BYTES = HipRuntime.IPC_HANDLE_BYTES + Long.BYTES;

    private final HipRuntime hip;
    private final int runtimeMajor;

    RocmPlatform(HipRuntime hip, int deviceCount, int runtimeVersion) {
        // hipMemGetAddressRange finds any block, so each platform keeps only the blocks it made
        super(NAMES, MemoryKind.ROCM, deviceCount, HipRuntime.IPC_HANDLE_BYTES, new ConcurrentSkipListMap<>());
        this.hip = hip;
        this.runtimeMajor = HipRuntime.majorVersion(runtimeVersion);
    }

    @Override
    protected DeviceInfo probeDevice(int i) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment name = arena.allocate(256);
            MemorySegment total = arena.allocate(JAVA_LONG);
            hip.check(hip.deviceGetName(name, (int) name.byteSize(), i), "hipDeviceGetName(rocm:" + i + ")");
            hip.check(hip.deviceTotalMem(total, i), "hipDeviceTotalMem(rocm:" + i + ")");
            MemorySegment pci = arena.allocate(64);
            int rc = hip.deviceGetPciBusId(pci, (int) pci.byteSize(), i);
            String busId = "";
            if (rc == HipRuntime.SUCCESS) {
                busId = pci.getString(0);
            } else {
                LOG.debug("hipDeviceGetPCIBusId(rocm:{}) failed: {}", i, hip.describe(rc));
                hip.clearLastError();
            }
            return DeviceInfo.of(i, name.getString(0), total.get(JAVA_LONG, 0), busId);
        }
    }

    @Override
    protected long deviceMalloc(int device, long size) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = hip.malloc(out, size);
            if (rc != HipRuntime.SUCCESS) {
                throw hip.error(rc, "hipMalloc(" + size + " bytes on rocm:" + device + ")");
            }
            return out.get(ADDRESS, 0).address();
        }
    }

    @Override
    protected void deviceFree(long address) {
        hip.check(hip.free(MemorySegment.ofAddress(address)), "hipFree(0x" + Long.toHexString(address) + ")");
    }

    @Override
    protected long hostMalloc(long size) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = hip.hostMalloc(out, size, HipRuntime.HOST_MALLOC_DEFAULT);
            if (rc != HipRuntime.SUCCESS) {
                throw hip.error(rc, "hipHostMalloc(" + size + " bytes)");
            }
            return out.get(ADDRESS, 0).address();
        }
    }

    @Override
    protected void hostFree(long address) {
        hip.check(hip.hostFree(MemorySegment.ofAddress(address)), "hipHostFree(0x" + Long.toHexString(address) + ")");
    }

    @Override
    protected PointerInfo pointerInfo(long address) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attributes = arena.allocate(HipRuntime.POINTER_ATTRIBUTES_BYTES, 8);
            int rc = hip.pointerGetAttributes(attributes, MemorySegment.ofAddress(address));
            if (rc == HipRuntime.ERROR_INVALID_VALUE) {
                // ROCm 5 (and some 6.x) report memory HIP never saw (plain malloc) this way, not as "unregistered"
                hip.clearLastError();
                return PointerInfo.of(Location.CPU, false);
            }
            if (rc != HipRuntime.SUCCESS) {
                throw hip.error(rc, "hipPointerGetAttributes(0x" + Long.toHexString(address) + ")");
            }
            int type = attributes.get(JAVA_INT, HipRuntime.POINTER_ATTRIBUTES_TYPE);
            int device = attributes.get(JAVA_INT, HipRuntime.POINTER_ATTRIBUTES_DEVICE);
            PointerInfo info = runtimeMajor >= 6 ? classifyV6(type, device) : classifyV5(type, device);
            if (info == null) {
                throw new TransferException(ErrorCode.INTERNAL, "hipPointerGetAttributes(0x" + Long.toHexString(address)
                        + ") returned unknown memory type " + type + " (ROCm " + runtimeMajor + ")");
            }
            return info;
        }
    }

    static PointerInfo classifyV5(int type, int device) {
        return switch (type) {
            case HipRuntime.V5_MEMORY_TYPE_HOST -> PointerInfo.of(Location.CPU, true);
            case HipRuntime.V5_MEMORY_TYPE_DEVICE, HipRuntime.V5_MEMORY_TYPE_ARRAY, HipRuntime.V5_MEMORY_TYPE_UNIFIED ->
                    PointerInfo.of(Location.device(MemoryKind.ROCM, device), false);
            default -> null;
        };
    }

    static PointerInfo classifyV6(int type, int device) {
        return switch (type) {
            case HipRuntime.V6_MEMORY_TYPE_UNREGISTERED -> PointerInfo.of(Location.CPU, false);
            case HipRuntime.V6_MEMORY_TYPE_HOST -> PointerInfo.of(Location.CPU, true);
            case HipRuntime.V6_MEMORY_TYPE_DEVICE, HipRuntime.V6_MEMORY_TYPE_MANAGED, HipRuntime.V6_MEMORY_TYPE_ARRAY,
                 HipRuntime.V6_MEMORY_TYPE_UNIFIED -> PointerInfo.of(Location.device(MemoryKind.ROCM, device), false);
            default -> null;
        };
    }

    @Override
    protected void memcpy(MemorySegment dst, MemorySegment src, long length) {
        int rc = hip.memcpy(dst, src, length, HipRuntime.MEMCPY_DEFAULT);
        if (rc != HipRuntime.SUCCESS) {
            throw hip.error(rc, "hipMemcpy(dst=0x" + Long.toHexString(dst.address()) + ", src=0x"
                    + Long.toHexString(src.address()) + ", " + length + " bytes)");
        }
    }

    @Override
    protected NativeStream newStream(int device, Consumer<NativeStream> forget) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = hip.streamCreateWithFlags(out, HipRuntime.STREAM_NON_BLOCKING);
            if (rc != HipRuntime.SUCCESS) {
                throw hip.error(rc, "hipStreamCreateWithFlags(rocm:" + device + ", hipStreamNonBlocking)");
            }
            return new RocmStream(hip, MemorySegment.ofAddress(out.get(ADDRESS, 0).address()), device, forget);
        }
    }

    /** Through {@code hipMemGetAddressRange}. */
    @Override
    protected long foreignBlockBase(long address, long length, int device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment base = arena.allocate(ADDRESS);
            MemorySegment size = arena.allocate(JAVA_LONG);
            int rc = hip.memGetAddressRange(base, size, MemorySegment.ofAddress(address));
            if (rc != HipRuntime.SUCCESS) {
                throw hip.error(rc, "hipMemGetAddressRange(0x" + Long.toHexString(address) + ")");
            }
            long b = base.get(ADDRESS, 0).address();
            if (address - b > size.get(JAVA_LONG, 0) - length) {
                throw new TransferException(ErrorCode.INVALID_ARGUMENT, "hipIpcGetMemHandle(0x" + Long.toHexString(address)
                        + ", " + length + " bytes) refused: range runs past its hipMalloc block [0x" + Long.toHexString(b)
                        + ", +" + size.get(JAVA_LONG, 0) + ")");
            }
            return b;
        }
    }

    @Override
    protected void ipcGetMemHandle(long base, int device, MemorySegment handle) {
        int rc = hip.ipcGetMemHandle(handle, MemorySegment.ofAddress(base));
        if (rc != HipRuntime.SUCCESS) {
            throw hip.error(rc, "hipIpcGetMemHandle(0x" + Long.toHexString(base) + " on rocm:" + device + ")");
        }
    }

    @Override
    protected long ipcOpenMemHandle(MemorySegment handle, int device, long size, long offset) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = hip.ipcOpenMemHandle(out, handle, runtimeMajor >= 6
                    ? HipRuntime.IPC_MEM_LAZY_ENABLE_PEER_ACCESS_V6 : HipRuntime.IPC_MEM_LAZY_ENABLE_PEER_ACCESS_V5);
            if (rc != HipRuntime.SUCCESS) {
                throw hip.error(rc, "hipIpcOpenMemHandle(on rocm:" + device + ", " + size + " bytes at offset "
                        + offset + ")");
            }
            return out.get(ADDRESS, 0).address();
        }
    }

    @Override
    protected void ipcCloseMemHandle(long base) {
        hip.check(hip.ipcCloseMemHandle(MemorySegment.ofAddress(base)),
                "hipIpcCloseMemHandle(0x" + Long.toHexString(base) + ")");
    }

    @Override
    protected int currentDeviceOrUnknown() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            return hip.getDevice(out) == HipRuntime.SUCCESS ? out.get(JAVA_INT, 0) : -1;
        }
    }

    @Override
    protected void selectDevice(int device) {
        hip.check(hip.setDevice(device), "hipSetDevice(" + device + ")");
    }

    @Override
    protected void selectDeviceQuietly(int device) {
        if (hip.setDevice(device) != HipRuntime.SUCCESS) {
            hip.clearLastError();
        }
    }
}
