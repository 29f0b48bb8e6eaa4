package org.tent4j.transport.nvlink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.platform.DevicePlatform;
import org.tent4j.spi.platform.DevicePlatformProvider;
import org.tent4j.testkit.transport.TestSlice;

/**
 * What nvlink must do with any CUDA platform: run against the fake libcudart here, and against a real GPU by
 * {@link NvlinkCudaGpuTest}. Every check compares CRC-32C of the bytes that arrived with the bytes that were sent.
 */
abstract class NvlinkScenarios {
    static final Location CPU = Location.CPU;

    DevicePlatform helper;
    NvlinkFixture a;
    NvlinkFixture b;
    Arena arena;

    abstract List<DevicePlatformProvider> platforms();

    /** What {@link NvlinkExporterProcess} is told to load: a library path, or {@code default}. */
    abstract String peerLibrary();

    long[] sizeClasses() {
        return new long[] {1, 7, 4095, 4096, 65_536, 65_537, 1 << 20, 4 << 20};
    }

    int lastDevice() {
        return helper.devices().size() - 1;
    }

    @BeforeEach
    void open() {
        helper = platforms().get(0).create();
        a = new NvlinkFixture("seg-a", "machine-1", platforms(), Map.of());
        b = new NvlinkFixture("seg-b", "machine-1", platforms(), Map.of());
        arena = Arena.ofShared();
    }

    @AfterEach
    void close() {
        if (a != null) {
            a.close();
            b.close();
            helper.close();
            arena.close();
        }
    }

    static void await(TestSlice slice) throws Exception {
        slice.result().get(60, TimeUnit.SECONDS);
        assertEquals(1, slice.completions(), "completed exactly once");
    }

    MemorySegment deviceCopyOf(MemorySegment host, int device) {
        MemorySegment d = helper.allocate(device, host.byteSize());
        helper.copy(d, host, host.byteSize());
        return d;
    }

    long deviceCrc(MemorySegment device, long offset, long length) {
        MemorySegment host = arena.allocate(length, 64);
        helper.copy(host, device.asSlice(offset, length), length);
        return Checksums.crc(host);
    }

    @Test
    void everyMemoryPathInOneProcessMovesEveryByte() throws Exception {
        long max = sizeClasses()[sizeClasses().length - 1];
        long span = max + 8192;
        MemorySegment remoteDevice = helper.allocate(lastDevice(), span);
        MemorySegment remoteHost = arena.allocate(span, 64);
        BufferDescriptor rDev = b.register(new DeviceBuffer(1, remoteDevice, Location.device(MemoryKind.CUDA, lastDevice()),
                Permission.READ_WRITE));
        BufferDescriptor rHost = b.register(new DeviceBuffer(2, remoteHost, CPU, Permission.READ_WRITE));
        MemorySegment hostSrc = arena.allocate(span, 64);
        MemorySegment hostDst = arena.allocate(span, 64);
        DeviceBuffer localHost = new DeviceBuffer(10, hostSrc, CPU, Permission.LOCAL_ONLY);
        DeviceBuffer localHostBack = new DeviceBuffer(11, hostDst, CPU, Permission.LOCAL_ONLY);
        MemorySegment devSrc = helper.allocate(0, span);
        MemorySegment devDst = helper.allocate(0, span);
        DeviceBuffer localDevice = new DeviceBuffer(12, devSrc, Location.device(MemoryKind.CUDA, 0), Permission.LOCAL_ONLY);
        DeviceBuffer localDeviceBack = new DeviceBuffer(13, devDst, Location.device(MemoryKind.CUDA, 0), Permission.LOCAL_ONLY);
        try (PeerConnection c = a.transport.connect(b.descriptor(1))) {
            assertTrue(((NvlinkConnection) c).direct(), "peer in this process is reached by address");
            long seed = 1;
            for (long size : sizeClasses()) {
                long localOff = size % 4096 == 0 ? 0 : 3;
                long remoteOff = size % 2 == 0 ? 4096 : 1;
                // cpu -> cuda: WRITE host bytes into the peer's device buffer, READ them back
                Checksums.fill(hostSrc.asSlice(localOff, size), seed++);
                TestSlice w = NvlinkFixture.slice(Opcode.WRITE, localHost, localOff, rDev, remoteOff, size);
                c.post(w);
                await(w);
                TestSlice r = NvlinkFixture.slice(Opcode.READ, localHostBack, 0, rDev, remoteOff, size);
                c.post(r);
                await(r);
                assertEquals(Checksums.crc(hostSrc.asSlice(localOff, size)), Checksums.crc(hostDst.asSlice(0, size)),
                        "cpu->cuda " + size);
                // cuda -> cuda
                Checksums.fill(hostSrc.asSlice(0, size), seed++);
                helper.copy(devSrc.asSlice(localOff, size), hostSrc.asSlice(0, size), size);
                TestSlice dw = NvlinkFixture.slice(Opcode.WRITE, localDevice, localOff, rDev, remoteOff, size);
                c.post(dw);
                await(dw);
                TestSlice dr = NvlinkFixture.slice(Opcode.READ, localDeviceBack, 8, rDev, remoteOff, size);
                c.post(dr);
                await(dr);
                assertEquals(Checksums.crc(hostSrc.asSlice(0, size)), deviceCrc(devDst, 8, size), "cuda->cuda " + size);
                // cuda -> cpu (a host buffer of a peer in this process)
                TestSlice hw = NvlinkFixture.slice(Opcode.WRITE, localDevice, localOff, rHost, remoteOff, size);
                c.post(hw);
                await(hw);
                assertEquals(Checksums.crc(hostSrc.asSlice(0, size)), Checksums.crc(remoteHost.asSlice(remoteOff, size)),
                        "cuda->cpu " + size);
            }
        } finally {
            helper.free(remoteDevice);
            helper.free(devSrc);
            helper.free(devDst);
        }
    }

    @Test
    void concurrentSlicesFromSeveralThreadsEachCompleteOnceWithTheirBytes() throws Exception {
        int slices = 128;
        long sliceSize = 64 << 10;
        long total = slices * sliceSize;
        MemorySegment remoteDevice = helper.allocate(0, total);
        BufferDescriptor rDev = b.register(new DeviceBuffer(1, remoteDevice, Location.device(MemoryKind.CUDA, 0),
                Permission.READ_WRITE));
        MemorySegment src = arena.allocate(total, 64);
        MemorySegment back = arena.allocate(total, 64);
        Checksums.fill(src, 77);
        DeviceBuffer local = new DeviceBuffer(5, src, CPU, Permission.LOCAL_ONLY);
        DeviceBuffer localBack = new DeviceBuffer(6, back, CPU, Permission.LOCAL_ONLY);
        ExecutorService posters = Executors.newFixedThreadPool(4);
        try (PeerConnection c = a.transport.connect(b.descriptor(1))) {
            for (Opcode op : new Opcode[] {Opcode.WRITE, Opcode.READ}) {
                List<Future<List<TestSlice>>> posted = new ArrayList<>();
                for (int t = 0; t < 4; t++) {
                    int thread = t;
                    posted.add(posters.submit(() -> {
                        List<TestSlice> mine = new ArrayList<>();
                        for (int i = thread; i < slices; i += 4) {
                            TestSlice s = NvlinkFixture.slice(op, op == Opcode.WRITE ? local : localBack, i * sliceSize,
                                    rDev, i * sliceSize, sliceSize);
                            mine.add(s);
                            c.post(s);
                        }
                        return mine;
                    }));
                }
                for (Future<List<TestSlice>> f : posted) {
                    for (TestSlice s : f.get(60, TimeUnit.SECONDS)) {
                        await(s);
                    }
                }
            }
            assertEquals(Checksums.crc(src), Checksums.crc(back));
        } finally {
            posters.shutdownNow();
            helper.free(remoteDevice);
        }
    }

    @Test
    void twoProcessesShareDeviceMemoryThroughIpcHandles() throws Exception {
        long size = 8 << 20;
        long seed = 4242;
        MemorySegment expected = arena.allocate(size, 64);
        Checksums.fill(expected, seed);
        try (ExporterProcess peer = new ExporterProcess(peerLibrary(), size, seed, lastDevice())) {
            MemorySegment into = arena.allocate(size, 64);
            DeviceBuffer local = new DeviceBuffer(1, into, CPU, Permission.LOCAL_ONLY);
            try (PeerConnection c = a.transport.connect(peer.descriptor)) {
                assertFalse(((NvlinkConnection) c).direct());
                // READ the whole buffer, in slices of every size class, back to back
                long off = 0;
                int k = 0;
                long[] sizes = sizeClasses();
                List<TestSlice> reads = new ArrayList<>();
                while (off < size) {
                    long n = Math.min(sizes[k++ % sizes.length], size - off);
                    TestSlice s = NvlinkFixture.slice(Opcode.READ, local, off, peer.buffer, off, n);
                    reads.add(s);
                    c.post(s);
                    off += n;
                }
                for (TestSlice s : reads) {
                    await(s);
                }
                assertEquals(Checksums.crc(expected), Checksums.crc(into), "bytes read from the other process");
                assertEquals(1, ((NvlinkConnection) c).mappedBuffers(), "one mapping serves every slice");

                // WRITE from device memory here into a sub-range there; the exporter reads it back itself
                long woff = 12_345;
                long wlen = 3 << 20;
                MemorySegment pattern = arena.allocate(wlen, 64);
                Checksums.fill(pattern, 9);
                MemorySegment dev = deviceCopyOf(pattern, 0);
                try {
                    TestSlice w = NvlinkFixture.slice(Opcode.WRITE, new DeviceBuffer(2, dev,
                            Location.device(MemoryKind.CUDA, 0), Permission.LOCAL_ONLY), 0, peer.buffer, woff, wlen);
                    c.post(w);
                    await(w);
                    assertEquals(Checksums.crc(pattern), peer.crc(woff, wlen));
                    assertEquals(Checksums.crc(expected.asSlice(0, woff)), peer.crc(0, woff), "bytes before are untouched");
                } finally {
                    helper.free(dev);
                }
            }
        }
    }
}
