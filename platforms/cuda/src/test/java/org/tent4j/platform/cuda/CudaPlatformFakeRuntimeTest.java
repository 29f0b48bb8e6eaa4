package org.tent4j.platform.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferException;
import org.tent4j.spi.platform.DeviceInfo;
import org.tent4j.spi.platform.DeviceStream;
import org.tent4j.spi.platform.PointerInfo;

/**
 * The CUDA platform end to end against a fake libcudart built from C at test time: every native call goes through the
 * real FFM bindings (including the by-value 64-byte IPC handle), and the fake rejects what real CUDA would.
 */
class CudaPlatformFakeRuntimeTest {
    @TempDir
    static Path buildDir;
    static Path library;

    CudaPlatform platform;

    @BeforeAll
    static void build() throws Exception {
        assumeTrue(FakeCudaRuntime.buildable(), "no gcc to build the fake libcudart");
        library = FakeCudaRuntime.library(buildDir);
    }

    @BeforeEach
    void open() {
        CudaPlatformProvider provider = FakeCudaRuntime.provider(library);
        assertTrue(provider.availability().isAvailable(), () -> provider.availability().reason());
        platform = (CudaPlatform) provider.create();
    }

    @AfterEach
    void close() {
        if (platform != null) {
            platform.close();
        }
    }

    static long crc(MemorySegment s) {
        CRC32C c = new CRC32C();
        c.update(s.asByteBuffer());
        return c.getValue();
    }

    static void fill(MemorySegment s, long seed) {
        Random r = new Random(seed);
        byte[] chunk = new byte[8192];
        for (long off = 0; off < s.byteSize(); off += chunk.length) {
            r.nextBytes(chunk);
            int n = (int) Math.min(chunk.length, s.byteSize() - off);
            MemorySegment.copy(MemorySegment.ofArray(chunk), 0, s, off, n);
        }
    }

    @Test
    void devicesComeFromPropertiesAndPciBusIds() {
        List<DeviceInfo> devices = platform.devices();
        assertEquals(List.of(DeviceInfo.of(0, "Fake CUDA Device 0", 16L << 30, "0000:10:00.0"),
                DeviceInfo.of(1, "Fake CUDA Device 1", 16L << 30, "0000:11:00.0")), devices);
        assertEquals(9, platform.attribute(CudaRuntime.ATTR_COMPUTE_CAPABILITY_MAJOR, 1));
    }

    @Test
    void hostToDeviceToHostKeepsEveryByteForEverySizeClass() {
        try (Arena arena = Arena.ofConfined()) {
            for (long size : new long[] {1, 7, 4095, 4096, 65_536, 65_537, 1 << 20, 4 << 20}) {
                MemorySegment src = arena.allocate(size, 64);
                MemorySegment back = arena.allocate(size, 64);
                fill(src, size);
                MemorySegment device = platform.allocate(1, size);
                platform.copy(device, src, size);
                platform.copy(back, device, size);
                assertEquals(crc(src), crc(back), "size " + size);
                platform.free(device);
            }
        }
        assertEquals(0, platform.liveAllocations());
    }

    @Test
    void classifyTellsDevicePinnedAndPlainHostMemoryApart() {
        MemorySegment device = platform.allocate(1, 4096);
        MemorySegment pinned = platform.allocateHost(4096);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment plain = arena.allocate(64);
            assertEquals(PointerInfo.of(Location.device(MemoryKind.CUDA, 1), false), platform.classify(device.address() + 100));
            assertEquals(PointerInfo.of(Location.CPU, true), platform.classify(pinned.address()));
            assertEquals(PointerInfo.of(Location.CPU, false), platform.classify(plain.address()));
        }
        // pinned host memory is ordinary memory to Java
        pinned.set(ValueLayout.JAVA_LONG, 8, 0x1234_5678_9abc_def0L);
        assertEquals(0x1234_5678_9abc_def0L, pinned.get(ValueLayout.JAVA_LONG, 8));
        platform.freeHost(pinned);
        platform.free(device);
    }

    @Test
    void streamCopiesLandAfterSynchronize() {
        try (Arena arena = Arena.ofConfined(); DeviceStream stream = platform.createStream(0)) {
            MemorySegment src = arena.allocate(1 << 20);
            MemorySegment back = arena.allocate(1 << 20);
            fill(src, 42);
            MemorySegment device = platform.allocate(0, 1 << 20);
            stream.copyAsync(device, src, src.byteSize());
            stream.copyAsync(back, device, src.byteSize());
            stream.synchronize();
            assertEquals(crc(src), crc(back));
            platform.free(device);
        }
    }

    @Test
    void ipcHandleOfASubRangeMapsThatSubRange() {
        MemorySegment block = platform.allocate(0, 1 << 20);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(1 << 20);
            fill(data, 7);
            platform.copy(block, data, data.byteSize());
            MemorySegment sub = block.asSlice(12_288, 65_536);
            byte[] handle = platform.exportIpcHandle(sub);
            assertEquals(CudaPlatform.IPC_HANDLE_BYTES, handle.length);

            MemorySegment mapped = platform.openIpcHandle(handle, sub.byteSize(), 1);
            assertNotEquals(sub.address(), mapped.address(), "the fake maps the block at a second address");
            MemorySegment viaMapping = arena.allocate(sub.byteSize());
            platform.copy(viaMapping, mapped, sub.byteSize());
            assertEquals(crc(data.asSlice(12_288, 65_536)), crc(viaMapping));

            // a second open of the same block shares the one native mapping
            MemorySegment again = platform.openIpcHandle(platform.exportIpcHandle(block.asSlice(0, 4096)), 4096, 1);
            assertEquals(mapped.address() - 12_288, again.address());
            assertEquals(1, FakeCudaRuntime.openMappings(library));
            assertEquals(1, platform.liveIpcMappings());

            // writes through the mapping land in the exporter's memory
            MemorySegment ones = arena.allocate(4096).fill((byte) 1);
            platform.copy(again, ones, 4096);
            MemorySegment check = arena.allocate(4096);
            platform.copy(check, block.asSlice(0, 4096), 4096);
            assertArrayEquals(ones.toArray(ValueLayout.JAVA_BYTE), check.toArray(ValueLayout.JAVA_BYTE));

            platform.closeIpcMapping(mapped);
            assertEquals(1, FakeCudaRuntime.openMappings(library));
            platform.closeIpcMapping(again);
            assertEquals(0, FakeCudaRuntime.openMappings(library));
            TransferException twice = assertThrows(TransferException.class, () -> platform.closeIpcMapping(again));
            assertEquals(ErrorCode.INVALID_ARGUMENT, twice.code());
        }
        platform.free(block);
    }

    @Test
    void ipcAcrossTwoJvmsReadsAndWritesTheExportedSubRange() throws Exception {
        long offset = 8192;
        long size = 1 << 20;
        MemorySegment block = platform.allocate(0, 4 << 20);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(4 << 20, 64);
            fill(data, 5);
            platform.copy(block, data, data.byteSize());
            byte[] handle = platform.exportIpcHandle(block.asSlice(offset, size));
            String out = CudaIpcPeer.run(library.toString(), handle, size, 1, crc(data.asSlice(offset, size)), 11);
            long written = Long.parseLong(out.substring(out.indexOf("written=") + 8).strip());
            MemorySegment back = arena.allocate(size, 64);
            platform.copy(back, block.asSlice(offset, size), size);
            assertEquals(written, crc(back));
            MemorySegment before = arena.allocate(offset);
            platform.copy(before, block.asSlice(0, offset), offset);
            assertEquals(crc(data.asSlice(0, offset)), crc(before), "bytes before the exported range are untouched");
        } finally {
            platform.free(block);
        }
    }

    @Test
    void failuresNameTheCallAndTheCudaError() {
        TransferException oom = assertThrows(TransferException.class, () -> platform.allocate(0, 1L << 40));
        assertEquals("cudaMalloc(1099511627776 bytes on cuda:0) failed: 2 cudaErrorMemoryAllocation (out of memory)",
                oom.getMessage());
        assertEquals(ErrorCode.INTERNAL, oom.code());

        TransferException badDevice = assertThrows(TransferException.class, () -> platform.allocate(2, 4096));
        assertEquals("device cuda:2 does not exist (2 CUDA devices)", badDevice.getMessage());
        assertEquals(ErrorCode.INVALID_ARGUMENT, badDevice.code());

        byte[] garbage = new byte[CudaPlatform.IPC_HANDLE_BYTES];
        TransferException badHandle = assertThrows(TransferException.class, () -> platform.openIpcHandle(garbage, 4096, 0));
        assertEquals("cudaIpcOpenMemHandle(on cuda:0, 4096 bytes at offset 0) failed: 400 cudaErrorInvalidResourceHandle"
                + " (invalid resource handle)", badHandle.getMessage());
        assertEquals(ErrorCode.INVALID_ARGUMENT, badHandle.code());

        MemorySegment device = platform.allocate(0, 4096);
        platform.free(device);
        TransferException doubleFree = assertThrows(TransferException.class, () -> platform.free(device));
        assertTrue(doubleFree.getMessage().contains("not allocated by this cuda platform, or freed already"));

        try (Arena arena = Arena.ofConfined()) {
            TransferException tooLong = assertThrows(TransferException.class,
                    () -> platform.copy(arena.allocate(16), arena.allocate(32), 32));
            assertEquals(ErrorCode.OUT_OF_BOUNDS, tooLong.code());
            TransferException heap = assertThrows(TransferException.class,
                    () -> platform.copy(arena.allocate(16), MemorySegment.ofArray(new byte[16]), 16));
            assertEquals(ErrorCode.INVALID_ARGUMENT, heap.code());
        }
    }

    @Test
    void platformsOfOneRuntimeShareBlocksAndOthersAskTheDriver() {
        MemorySegment block = platform.allocate(1, 1 << 20);
        try (CudaPlatform sameRuntime = (CudaPlatform) FakeCudaRuntime.provider(library).create();
             CudaPlatform otherRuntime = (CudaPlatform) new CudaPlatformProvider(List.of(library.toString())).create()) {
            MemorySegment sub = block.asSlice(4096, 8192);
            byte[] viaRegistry = sameRuntime.exportIpcHandle(sub);
            // a runtime that never saw the allocation finds its block through cuMemGetAddressRange_v2
            byte[] viaDriver = otherRuntime.exportIpcHandle(sub);
            assertArrayEquals(viaRegistry, viaDriver);
            assertEquals(4096, MemorySegment.ofArray(viaDriver).get(
                    ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), CudaRuntime.IPC_HANDLE_BYTES));
        }
        platform.free(block);
    }

    @Test
    void theCallersCurrentDeviceIsPutBack() {
        CudaRuntime cuda = FakeCudaRuntime.provider(library).probe().runtime();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment current = arena.allocate(ValueLayout.JAVA_INT);
            assertEquals(0, cuda.setDevice(1));
            MemorySegment block = platform.allocate(0, 4096);
            platform.createStream(0).close();
            MemorySegment mapped = platform.openIpcHandle(platform.exportIpcHandle(block), 4096, 0);
            platform.closeIpcMapping(mapped);
            assertEquals(0, cuda.getDevice(current));
            assertEquals(1, current.get(ValueLayout.JAVA_INT, 0));
            platform.free(block);
        }
    }

    @Test
    void hostMemoryCannotBeExported() {
        try (Arena arena = Arena.ofConfined()) {
            TransferException e = assertThrows(TransferException.class, () -> platform.exportIpcHandle(arena.allocate(64)));
            assertTrue(e.getMessage().contains("memory is cpu:0, not CUDA device memory"), e.getMessage());
        }
    }

    @Test
    void closeReleasesWhatIsLeftAndRefusesFurtherUse() {
        platform.allocate(0, 4096);
        platform.allocateHost(4096);
        platform.createStream(1);
        platform.close();
        assertEquals(0, platform.liveAllocations());
        TransferException e = assertThrows(TransferException.class, () -> platform.allocate(0, 1));
        assertEquals(ErrorCode.ENGINE_CLOSED, e.code());
        platform = null;
    }
}
