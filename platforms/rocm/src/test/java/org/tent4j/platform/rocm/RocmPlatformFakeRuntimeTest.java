package org.tent4j.platform.rocm;

import org.tent4j.testkit.nativecode.CProgram;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
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

/** The ROCm platform end to end against a fake libamdhip64 (ROCm 6 numbering) built from C at test time. */
class RocmPlatformFakeRuntimeTest {
    @TempDir
    static Path buildDir;
    static Path library;
    static RocmPlatformProvider provider;

    RocmPlatform platform;

    @BeforeAll
    static void build() throws Exception {
        assumeTrue(CProgram.gccAvailable(), "no gcc to build the fake libamdhip64");
        String source;
        try (InputStream in = RocmPlatformFakeRuntimeTest.class.getResourceAsStream("fake-amdhip.c")) {
            source = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        library = CProgram.sharedLibrary(buildDir, "libfakeamdhip64", source, List.of());
        provider = new RocmPlatformProvider(List.of(library.toString()));
    }

    @BeforeEach
    void open() {
        assertTrue(provider.availability().isAvailable(), () -> provider.availability().reason());
        platform = (RocmPlatform) provider.create();
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
        byte[] b = new byte[(int) s.byteSize()];
        new Random(seed).nextBytes(b);
        MemorySegment.copy(MemorySegment.ofArray(b), 0, s, 0, b.length);
    }

    @Test
    void devicesComeFromNameTotalMemAndBusId() {
        assertEquals(List.of(DeviceInfo.of(0, "Fake ROCm Device 0", 64L << 30, "0000:10:00.0"),
                DeviceInfo.of(1, "Fake ROCm Device 1", 64L << 30, "0000:11:00.0")), platform.devices());
    }

    @Test
    void copiesClassifiesAndStreams() {
        try (Arena arena = Arena.ofConfined()) {
            for (long size : new long[] {1, 4095, 65_536, 1 << 20}) {
                MemorySegment src = arena.allocate(size, 64);
                MemorySegment back = arena.allocate(size, 64);
                fill(src, size);
                MemorySegment d = platform.allocate(1, size);
                platform.copy(d, src, size);
                platform.copy(back, d, size);
                assertEquals(crc(src), crc(back), "size " + size);
                assertEquals(PointerInfo.of(Location.device(MemoryKind.ROCM, 1), false), platform.classify(d.address()));
                platform.free(d);
            }
            MemorySegment pinned = platform.allocateHost(4096);
            assertEquals(PointerInfo.of(Location.CPU, true), platform.classify(pinned.address()));
            assertEquals(PointerInfo.of(Location.CPU, false), platform.classify(arena.allocate(8).address()));
            MemorySegment device = platform.allocate(0, 4096);
            fill(pinned, 3);
            MemorySegment back = arena.allocate(4096);
            try (DeviceStream s = platform.createStream(0)) {
                s.copyAsync(device, pinned, 4096);
                s.copyAsync(back, device, 4096);
                s.synchronize();
            }
            assertEquals(crc(pinned), crc(back));
            platform.freeHost(pinned);
            platform.free(device);
        }
        assertEquals(0, platform.liveAllocations());
    }

    @Test
    void ipcOfASubRangeUsesTheBlockBaseAndTheVersion6Flag() {
        MemorySegment block = platform.allocate(0, 1 << 20);
        try (Arena arena = Arena.ofConfined();
             RocmPlatform other = (RocmPlatform) new RocmPlatformProvider(List.of(library.toString())).create()) {
            MemorySegment data = arena.allocate(1 << 20);
            fill(data, 9);
            platform.copy(block, data, 1 << 20);
            MemorySegment sub = block.asSlice(8192, 4096);
            byte[] handle = platform.exportIpcHandle(sub);
            // another runtime instance never saw the allocation and finds its block with hipMemGetAddressRange
            assertArrayEquals(handle, other.exportIpcHandle(sub));
            assertEquals(8192, MemorySegment.ofArray(handle).get(
                    ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), HipRuntime.IPC_HANDLE_BYTES));
            MemorySegment mapped = platform.openIpcHandle(handle, 4096, 1);
            MemorySegment via = arena.allocate(4096);
            platform.copy(via, mapped, 4096);
            assertEquals(crc(data.asSlice(8192, 4096)), crc(via));
            platform.closeIpcMapping(mapped);
            assertThrows(TransferException.class, () -> platform.closeIpcMapping(mapped));
        }
        platform.free(block);
    }

    @Test
    void failuresNameTheCallAndTheHipError() {
        TransferException oom = assertThrows(TransferException.class, () -> platform.allocate(0, 1L << 40));
        assertEquals("hipMalloc(1099511627776 bytes on rocm:0) failed: 2 hipErrorOutOfMemory (out of memory)",
                oom.getMessage());
        TransferException badHandle = assertThrows(TransferException.class,
                () -> platform.openIpcHandle(new byte[RocmPlatform.IPC_HANDLE_BYTES], 64, 0));
        assertEquals(ErrorCode.INVALID_ARGUMENT, badHandle.code());
        assertTrue(badHandle.getMessage().contains("400 hipErrorInvalidHandle"), badHandle.getMessage());
        assertEquals("device rocm:5 does not exist (2 ROCm devices)",
                assertThrows(TransferException.class, () -> platform.createStream(5)).getMessage());
    }
}
