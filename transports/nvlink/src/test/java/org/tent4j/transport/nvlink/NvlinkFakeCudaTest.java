package org.tent4j.transport.nvlink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.platform.cuda.FakeCudaRuntime;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.MemoryAllocator;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.platform.DevicePlatformProvider;
import org.tent4j.testkit.transport.TestSlice;

/**
 * nvlink against the fake libcudart (host memory standing in for two GPUs, IPC through shared memory), so the
 * transport's whole data path, its mapping cache and its failure paths run on a machine without a GPU.
 */
class NvlinkFakeCudaTest extends NvlinkScenarios {
    @TempDir
    static Path buildDir;
    static Path library;

    @BeforeAll
    static void build() throws Exception {
        assumeTrue(FakeCudaRuntime.buildable(), "no gcc to build the fake libcudart");
        library = FakeCudaRuntime.library(buildDir);
    }

    @Override
    List<DevicePlatformProvider> platforms() {
        return List.of(FakeCudaRuntime.provider(library));
    }

    @Override
    String peerLibrary() {
        return library.toString();
    }

    static TransferException failure(TestSlice slice) throws Exception {
        ExecutionException e = assertThrows(ExecutionException.class, () -> slice.result().get(30, TimeUnit.SECONDS));
        assertEquals(1, slice.completions());
        return (TransferException) e.getCause();
    }

    BufferDescriptor remoteDevice(NvlinkFixture owner, long size, Permission permission) {
        MemorySegment m = helper.allocate(1, size);
        return owner.register(new DeviceBuffer(owner.published.size() + 1, m, Location.device(MemoryKind.CUDA, 1), permission));
    }

    @Test
    void ipcPathInOneProcessMapsOncePerBufferAndUnmapsWhenThePeerDropsIt() throws Exception {
        try (NvlinkFixture viaIpc = new NvlinkFixture("seg-c", "machine-1", platforms(),
                Map.of("same_process_direct", "false"))) {
            BufferDescriptor r = remoteDevice(b, 1 << 20, Permission.READ_WRITE);
            MemorySegment src = arena.allocate(1 << 20, 64);
            MemorySegment back = arena.allocate(1 << 20, 64);
            Checksums.fill(src, 3);
            DeviceBuffer local = new DeviceBuffer(1, src, CPU, Permission.LOCAL_ONLY);
            DeviceBuffer localBack = new DeviceBuffer(2, back, CPU, Permission.LOCAL_ONLY);
            int before = FakeCudaRuntime.openMappings(library);
            NvlinkConnection c = (NvlinkConnection) viaIpc.transport.connect(b.descriptor(1));
            assertFalse(c.direct());
            for (int i = 0; i < 16; i++) {
                TestSlice w = NvlinkFixture.slice(Opcode.WRITE, local, i * 65_536L, r, i * 65_536L, 65_536);
                c.post(w);
                await(w);
            }
            TestSlice rd = NvlinkFixture.slice(Opcode.READ, localBack, 0, r, 0, 1 << 20);
            c.post(rd);
            await(rd);
            assertEquals(Checksums.crc(src), Checksums.crc(back));
            assertEquals(1, c.mappedBuffers());
            assertEquals(before + 1, FakeCudaRuntime.openMappings(library), "one IPC open for 17 slices");

            // the peer republishes without the buffer: the mapping goes
            c.descriptorChanged(SegmentDescriptor.builder().name("seg-b").machineId("machine-1").host("127.0.0.1")
                    .controlPort(0).transports(List.of("nvlink"))
                    .transportAttributes(Map.of("nvlink", b.transport.segmentAttributes())).buffers(List.of())
                    .version(2).build());
            assertEquals(0, c.mappedBuffers());
            assertEquals(before, FakeCudaRuntime.openMappings(library));
            c.close();
            assertFalse(c.isOpen());
            TestSlice late = NvlinkFixture.slice(Opcode.READ, localBack, 0, r, 0, 16);
            c.post(late);
            assertEquals(ErrorCode.PEER_FAILED, failure(late).code());
        }
    }

    @Test
    void aSliceWhoseDeadlinePassedFailsWithTimeoutAndMovesNothing() throws Exception {
        BufferDescriptor r = remoteDevice(b, 4096, Permission.READ_WRITE);
        MemorySegment src = arena.allocate(4096).fill((byte) 7);
        try (PeerConnection c = a.transport.connect(b.descriptor(1))) {
            TestSlice late = new TestSlice(Opcode.WRITE, new DeviceBuffer(1, src, CPU, Permission.LOCAL_ONLY), 0, r,
                    r.address(), 4096, System.nanoTime() - 1);
            c.post(late);
            TransferException e = failure(late);
            assertEquals(ErrorCode.TIMEOUT, e.code());
            assertTrue(e.getMessage().startsWith("nvlink WRITE of 4096 bytes to segment 'seg-b' at 0x"), e.getMessage());
            assertTrue(e.getMessage().endsWith("missed its deadline before a lane could start it"), e.getMessage());
        }
        assertEquals(Checksums.crc(arena.allocate(4096)), deviceCrcOf(r, 4096), "nothing was written");
    }

    long deviceCrcOf(BufferDescriptor r, long length) {
        return deviceCrc(MemorySegment.ofAddress(r.address()).reinterpret(r.length()), 0, length);
    }

    @Test
    void thePeersPublishedPermissionIsEnforcedByTheInitiator() throws Exception {
        BufferDescriptor readOnly = remoteDevice(b, 4096, Permission.READ_ONLY);
        DeviceBuffer local = new DeviceBuffer(1, arena.allocate(4096), CPU, Permission.LOCAL_ONLY);
        try (PeerConnection c = a.transport.connect(b.descriptor(1))) {
            TestSlice w = NvlinkFixture.slice(Opcode.WRITE, local, 0, readOnly, 0, 4096);
            c.post(w);
            TransferException e = failure(w);
            assertEquals(ErrorCode.PERMISSION_DENIED, e.code());
            assertTrue(e.getMessage().endsWith("failed: the peer's buffer is READ_ONLY"), e.getMessage());
            TestSlice r = NvlinkFixture.slice(Opcode.READ, local, 0, readOnly, 0, 4096);
            c.post(r);
            await(r);
        }
    }

    @Test
    void rangesOutsideEitherBufferAreRefused() throws Exception {
        BufferDescriptor r = remoteDevice(b, 4096, Permission.READ_WRITE);
        DeviceBuffer local = new DeviceBuffer(1, arena.allocate(4096), CPU, Permission.LOCAL_ONLY);
        try (PeerConnection c = a.transport.connect(b.descriptor(1))) {
            TestSlice pastRemote = NvlinkFixture.slice(Opcode.READ, local, 0, r, 4000, 200);
            c.post(pastRemote);
            assertEquals(ErrorCode.OUT_OF_BOUNDS, failure(pastRemote).code());
            TestSlice pastLocal = NvlinkFixture.slice(Opcode.READ, local, 4000, r, 0, 200);
            c.post(pastLocal);
            TransferException e = failure(pastLocal);
            assertEquals(ErrorCode.OUT_OF_BOUNDS, e.code());
            assertTrue(e.getMessage().contains("local range +4000 is outside local buffer 1 of 4096 bytes"), e.getMessage());
        }
    }

    @Test
    void hostMemoryOfAnotherProcessIsNotReachable() throws Exception {
        MemorySegment host = arena.allocate(4096);
        BufferDescriptor r = b.register(new DeviceBuffer(9, host, CPU, Permission.READ_WRITE));
        SegmentDescriptor elsewhere = SegmentDescriptor.builder().name("seg-b").machineId("machine-1")
                .host("127.0.0.1").controlPort(0).transports(List.of("nvlink"))
                .transportAttributes(Map.of("nvlink", Map.of(NvlinkTransport.PID, "1", NvlinkTransport.PLATFORMS, "cuda")))
                .buffers(List.of(r)).version(1).build();
        DeviceBuffer local = new DeviceBuffer(1, helper.allocate(0, 4096), Location.device(MemoryKind.CUDA, 0),
                Permission.LOCAL_ONLY);
        try (PeerConnection c = a.transport.connect(elsewhere)) {
            TestSlice w = NvlinkFixture.slice(Opcode.WRITE, local, 0, r, 0, 4096);
            c.post(w);
            TransferException e = failure(w);
            assertEquals(ErrorCode.NO_TRANSPORT, e.code());
            assertTrue(e.getMessage().contains("is host memory of another process; nvlink reaches host memory only inside"
                    + " one process"), e.getMessage());
        } finally {
            helper.free(local.segment());
        }
    }

    @Test
    void connectRefusesPeersOnOtherMachinesOrWithoutNvlink() {
        SegmentDescriptor remote = SegmentDescriptor.builder().name("seg-far").machineId("machine-2").host("10.0.0.2")
                .controlPort(0).transports(List.of("nvlink")).transportAttributes(Map.of()).buffers(List.of())
                .version(1).build();
        TransferException e = assertThrows(TransferException.class, () -> a.transport.connect(remote));
        assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, e.code());
        assertEquals("nvlink needs both segments on one machine: segment 'seg-far' is on machine 'machine-2', this"
                + " engine on 'machine-1'", e.getMessage());
        SegmentDescriptor tcpOnly = SegmentDescriptor.builder().name("seg-tcp").machineId("machine-1")
                .host("127.0.0.1").controlPort(0).transports(List.of("tcp")).transportAttributes(Map.of())
                .buffers(List.of()).version(1).build();
        assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, assertThrows(TransferException.class,
                () -> a.transport.connect(tcpOnly)).code());
    }

    @Test
    void registrationPublishesHandlesOnlyForDeviceMemoryPeersMayTouch() {
        MemorySegment device = helper.allocate(1, 8192);
        try {
            Map<String, String> published = a.transport.registerBuffer(new DeviceBuffer(1, device.asSlice(4096, 4096),
                    Location.device(MemoryKind.CUDA, 1), Permission.READ_ONLY)).orElseThrow();
            IpcAttributes decoded = IpcAttributes.decode(published, "buffer");
            assertEquals("cuda", decoded.platform());
            assertEquals(1, decoded.device());
            assertEquals("0000:11:00.0", decoded.pciBusId());
            assertEquals(72, decoded.handle().length);

            assertEquals(Optional.of(Map.of()), a.transport.registerBuffer(new DeviceBuffer(2, device,
                    Location.device(MemoryKind.CUDA, 1), Permission.LOCAL_ONLY)), "no handle for LOCAL_ONLY memory");
            assertEquals(Optional.of(Map.of()), a.transport.registerBuffer(new DeviceBuffer(3, arena.allocate(64), CPU,
                    Permission.READ_WRITE)), "host memory publishes nothing");
            assertEquals(Optional.empty(), a.transport.registerBuffer(new DeviceBuffer(4, arena.allocate(64),
                    Location.device(MemoryKind.ROCM, 0), Permission.READ_WRITE)), "no rocm platform here");
            assertEquals(Optional.empty(), a.transport.registerBuffer(new DeviceBuffer(5, arena.allocate(64),
                    Location.device(MemoryKind.CUDA, 0), Permission.READ_WRITE)), "host memory claiming to be cuda");
        } finally {
            helper.free(device);
        }
        Map<String, String> segment = a.transport.segmentAttributes();
        assertEquals(Long.toString(ProcessHandle.current().pid()), segment.get("pid"));
        assertEquals("cuda", segment.get("platforms"));
    }

    @Test
    void theAllocatorHandsOutZeroedDeviceMemory() {
        MemoryAllocator allocator = a.transport.allocator().orElseThrow();
        assertTrue(allocator.supports(Location.device(MemoryKind.CUDA, 1)));
        assertFalse(allocator.supports(Location.device(MemoryKind.CUDA, 2)));
        assertFalse(allocator.supports(CPU));
        MemoryAllocator.Allocation allocation = allocator.allocate(3 << 20, Location.device(MemoryKind.CUDA, 1));
        assertEquals(Map.of("platform", "cuda", "device", "1"), allocation.backing());
        assertEquals(Checksums.crc(arena.allocate(3 << 20)), deviceCrc(allocation.segment(), 0, 3 << 20));
        allocation.release().run();
    }

    @Test
    void aClosedTransportFailsWhatIsPostedAndRefusesConnections() throws Exception {
        BufferDescriptor r = remoteDevice(b, 4096, Permission.READ_WRITE);
        PeerConnection c = a.transport.connect(b.descriptor(1));
        a.transport.close();
        assertFalse(c.isOpen());
        TestSlice s = NvlinkFixture.slice(Opcode.READ, new DeviceBuffer(1, arena.allocate(4096), CPU, Permission.LOCAL_ONLY),
                0, r, 0, 4096);
        c.post(s);
        assertTrue(List.of(ErrorCode.ENGINE_CLOSED, ErrorCode.PEER_FAILED).contains(failure(s).code()));
        assertEquals(ErrorCode.ENGINE_CLOSED, assertThrows(TransferException.class,
                () -> a.transport.connect(b.descriptor(1))).code());
    }
}
