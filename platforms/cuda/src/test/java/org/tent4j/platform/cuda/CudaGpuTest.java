package org.tent4j.platform.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.spi.Availability;
import org.tent4j.spi.platform.DeviceInfo;
import org.tent4j.spi.platform.DeviceStream;
import org.tent4j.spi.platform.PointerInfo;

/**
 * The CUDA platform on a real GPU. Skipped, with the availability cause as the reason, where no device is present;
 * {@code scripts/gpu/run-gpu-tests.sh} runs it on a GPU machine.
 */
class CudaGpuTest {
    static final long[] SIZE_CLASSES = {1, 7, 4095, 4096, 65_536, 65_537, 1 << 20, 4 << 20, 64 << 20, 256 << 20};

    static CudaPlatform platform;

    @BeforeAll
    static void open() {
        Availability a = new CudaPlatformProvider().availability();
        assumeTrue(a.isAvailable(), () -> "no CUDA device: " + a.reason());
        platform = (CudaPlatform) new CudaPlatformProvider().create();
    }

    @AfterAll
    static void close() {
        if (platform != null) {
            platform.close();
        }
    }

    @Test
    void devicesHaveNamesMemoryAndBusIds() {
        List<DeviceInfo> devices = platform.devices();
        assertFalse(devices.isEmpty());
        for (DeviceInfo d : devices) {
            assertFalse(d.name().isBlank(), d.toString());
            assertTrue(d.totalMemory() > (1L << 30), d.toString());
            assertTrue(d.pciBusId().matches("[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\\.[0-9A-Fa-f]"), d.toString());
            assertEquals(1, platform.attribute(CudaRuntime.ATTR_UNIFIED_ADDRESSING, d.ordinal()));
        }
    }

    @Test
    void everySizeClassSurvivesHostDeviceHostFromPageableAndPinnedMemory() {
        try (Arena arena = Arena.ofConfined()) {
            for (long size : SIZE_CLASSES) {
                MemorySegment src = arena.allocate(size, 64);
                CudaPlatformFakeRuntimeTest.fill(src, size);
                MemorySegment device = platform.allocate(0, size);
                MemorySegment pinned = platform.allocateHost(size);
                platform.copy(device, src, size);
                platform.copy(pinned, device, size);
                assertEquals(CudaPlatformFakeRuntimeTest.crc(src), CudaPlatformFakeRuntimeTest.crc(pinned), "size " + size);
                platform.freeHost(pinned);
                platform.free(device);
            }
        }
    }

    @Test
    void deviceToDeviceAcrossGpus() {
        int n = platform.devices().size();
        assumeTrue(n >= 2, "one GPU only");
        try (Arena arena = Arena.ofConfined()) {
            long size = 64 << 20;
            MemorySegment src = arena.allocate(size, 64);
            MemorySegment back = arena.allocate(size, 64);
            CudaPlatformFakeRuntimeTest.fill(src, 99);
            MemorySegment a = platform.allocate(0, size);
            MemorySegment b = platform.allocate(n - 1, size);
            platform.copy(a, src, size);
            platform.copy(b, a, size);
            platform.copy(back, b, size);
            assertEquals(CudaPlatformFakeRuntimeTest.crc(src), CudaPlatformFakeRuntimeTest.crc(back));
            platform.free(a);
            platform.free(b);
        }
    }

    @Test
    void classifyReportsDevicePinnedAndPageable() {
        MemorySegment device = platform.allocate(0, 1 << 20);
        MemorySegment pinned = platform.allocateHost(1 << 20);
        try (Arena arena = Arena.ofConfined()) {
            assertEquals(PointerInfo.of(Location.device(MemoryKind.CUDA, 0), false), platform.classify(device.address() + 4096));
            assertEquals(PointerInfo.of(Location.CPU, true), platform.classify(pinned.address()));
            assertEquals(PointerInfo.of(Location.CPU, false), platform.classify(arena.allocate(64).address()));
        } finally {
            platform.freeHost(pinned);
            platform.free(device);
        }
    }

    @Test
    void streamsOnSeveralThreadsCopyConcurrently() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<Boolean>> results = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                long seed = t;
                results.add(pool.submit(() -> {
                    long size = 16 << 20;
                    try (Arena arena = Arena.ofConfined(); DeviceStream stream = platform.createStream(0)) {
                        MemorySegment src = platform.allocateHost(size);
                        MemorySegment back = platform.allocateHost(size);
                        MemorySegment device = platform.allocate(0, size);
                        CudaPlatformFakeRuntimeTest.fill(src, seed);
                        for (int i = 0; i < 8; i++) {
                            stream.copyAsync(device, src, size);
                            stream.copyAsync(back, device, size);
                        }
                        stream.synchronize();
                        boolean same = CudaPlatformFakeRuntimeTest.crc(src) == CudaPlatformFakeRuntimeTest.crc(back);
                        platform.free(device);
                        platform.freeHost(src);
                        platform.freeHost(back);
                        return same;
                    }
                }));
            }
            for (Future<Boolean> f : results) {
                assertTrue(f.get(120, TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void ipcAcrossTwoJvmsReadsAndWritesTheExportedSubRange() throws Exception {
        long blockSize = 64 << 20;
        long offset = 1 << 20;
        long size = 8 << 20;
        MemorySegment block = platform.allocate(0, blockSize);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(blockSize, 64);
            CudaPlatformFakeRuntimeTest.fill(data, 1234);
            platform.copy(block, data, blockSize);
            byte[] handle = platform.exportIpcHandle(block.asSlice(offset, size));
            int peerDevice = platform.devices().size() - 1;
            String out = CudaIpcPeer.run("default", handle, size, peerDevice, CudaPlatformFakeRuntimeTest.crc(data.asSlice(offset, size)), 77);
            long written = Long.parseLong(out.substring(out.indexOf("written=") + 8).strip());
            MemorySegment back = arena.allocate(size, 64);
            platform.copy(back, block.asSlice(offset, size), size);
            assertEquals(written, CudaPlatformFakeRuntimeTest.crc(back));
            // bytes around the sub-range are untouched
            MemorySegment before = arena.allocate(offset, 64);
            platform.copy(before, block.asSlice(0, offset), offset);
            assertEquals(CudaPlatformFakeRuntimeTest.crc(data.asSlice(0, offset)), CudaPlatformFakeRuntimeTest.crc(before));
        } finally {
            platform.free(block);
        }
    }
}
