package org.tent4j.platform.ascend;

import org.tent4j.testkit.nativecode.CProgram;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.ServiceLoader;
import java.util.concurrent.CompletableFuture;
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
import org.tent4j.spi.Availability;
import org.tent4j.spi.platform.DeviceInfo;
import org.tent4j.spi.platform.DevicePlatformProvider;
import org.tent4j.spi.platform.DeviceStream;
import org.tent4j.spi.platform.PointerInfo;

/**
 * No Ascend software can be installed here, so besides the "not found" cause, the platform runs against a fake
 * libascendcl built from C at test time; the fake enforces ACL's rules (a device bound per thread, copy kinds that
 * match the memory, keys closed before frees).
 */
class AscendPlatformTest {
    @TempDir
    static Path buildDir;
    static Path fake;
    static Path fakeWithoutIpc;

    AscendPlatformProvider provider;
    AscendPlatform platform;

    @BeforeAll
    static void build() throws Exception {
        if (!CProgram.gccAvailable()) {
            return;
        }
        String source;
        try (InputStream in = AscendPlatformTest.class.getResourceAsStream("fake-ascendcl.c")) {
            source = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        fake = CProgram.sharedLibrary(buildDir, "libfakeascendcl", source, List.of());
        fakeWithoutIpc = CProgram.sharedLibrary(buildDir, "libfakeascendcl-noipc", source, List.of("-DFAKE_ACL_NO_IPC"));
    }

    void openFake() {
        assumeTrue(fake != null, "no gcc to build the fake libascendcl");
        provider = new AscendPlatformProvider(List.of(fake.toString()));
        assertTrue(provider.availability().isAvailable(), () -> provider.availability().reason());
        platform = (AscendPlatform) provider.create();
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
    void unavailableHereBecauseLibascendclIsNotInstalled() {
        assumeTrue(!new java.io.File("/usr/local/Ascend").exists(), "an Ascend toolkit is installed here");
        Availability a = new AscendPlatformProvider().availability();
        assertFalse(a.isAvailable());
        assertTrue(a.reason().startsWith("libascendcl.so not found (searched: libascendcl.so, "), a.reason());
        assertTrue(a.reason().contains("/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so"), a.reason());
        TransferException e = assertThrows(TransferException.class, () -> new AscendPlatformProvider().create());
        assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, e.code());
    }

    @Test
    void serviceLoaderFindsTheAscendProviderForNpuMemory() {
        DevicePlatformProvider p = ServiceLoader.load(DevicePlatformProvider.class).stream().map(ServiceLoader.Provider::get)
                .filter(x -> x.id().equals("ascend")).findFirst().orElseThrow();
        assertEquals(MemoryKind.NPU, p.memoryKind());
    }

    @Test
    void everyBoundFunctionLinksAgainstTheHeaderSignatures() {
        assumeTrue(fake != null, "no gcc");
        SymbolLookup lib = SymbolLookup.libraryLookup(fake, Arena.global());
        for (Map<String, FunctionDescriptor> table : List.of(AclRuntime.REQUIRED, AclRuntime.OPTIONAL)) {
            for (Map.Entry<String, FunctionDescriptor> f : table.entrySet()) {
                MethodHandle h = Linker.nativeLinker().downcallHandle(lib.find(f.getKey()).orElseThrow(
                        () -> new AssertionError("fake lacks " + f.getKey())), f.getValue());
                assertEquals(f.getValue().toMethodType(), h.type());
            }
        }
        assertEquals(15, AclRuntime.REQUIRED.size());
        assertEquals(4, AclRuntime.OPTIONAL.size());
    }

    @Test
    void devicesAndEveryCopyDirectionWithTheRightKind() {
        openFake();
        assertEquals(List.of(DeviceInfo.of(0, "FakeAscend910B", 64L << 30, ""), DeviceInfo.of(1, "FakeAscend910B", 64L << 30, "")),
                platform.devices());
        try (Arena arena = Arena.ofConfined()) {
            for (long size : new long[] {1, 4095, 65_536, 1 << 20}) {
                MemorySegment src = arena.allocate(size, 64);
                MemorySegment back = arena.allocate(size, 64);
                fill(src, size);
                MemorySegment d0 = platform.allocate(0, size);
                MemorySegment d1 = platform.allocate(1, size);
                platform.copy(d0, src, size);       // host to device
                platform.copy(d1, d0, size);        // device to device
                platform.copy(back, d1, size);      // device to host
                assertEquals(crc(src), crc(back), "size " + size);
                MemorySegment pinned = platform.allocateHost(size);
                platform.copy(pinned, back, size);  // host to host
                assertEquals(crc(src), crc(pinned));
                platform.freeHost(pinned);
                platform.free(d0);
                platform.free(d1);
            }
        }
        assertEquals(0, platform.liveAllocations());
    }

    @Test
    void aThreadThatNeverBoundADeviceStillCopies() throws Exception {
        openFake();
        MemorySegment device = platform.allocate(1, 4096);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment src = arena.allocate(4096);
            MemorySegment back = arena.allocate(4096);
            fill(src, 5);
            CompletableFuture.runAsync(() -> platform.copy(device, src, 4096), r -> new Thread(r).start()).get();
            CompletableFuture.runAsync(() -> platform.copy(back, device, 4096), r -> new Thread(r).start()).get();
            assertEquals(crc(src), crc(back));
        }
        platform.free(device);
    }

    @Test
    void classifyKnowsItsOwnBlocksAndAsksTheRuntimeAboutOthers() {
        openFake();
        MemorySegment device = platform.allocate(1, 8192);
        MemorySegment pinned = platform.allocateHost(4096);
        try (Arena arena = Arena.ofConfined();
             AscendPlatform other = (AscendPlatform) new AscendPlatformProvider(List.of(fake.toString())).create()) {
            assertEquals(PointerInfo.of(Location.device(MemoryKind.NPU, 1), false), platform.classify(device.address() + 100));
            assertEquals(PointerInfo.of(Location.CPU, true), platform.classify(pinned.address()));
            assertEquals(PointerInfo.of(Location.CPU, false), platform.classify(arena.allocate(8).address()));
            // a platform on another runtime instance never saw the block: aclrtPointerGetAttributes tells it
            assertEquals(PointerInfo.of(Location.device(MemoryKind.NPU, 1), false), other.classify(device.address()));
            MemorySegment src = arena.allocate(8192);
            fill(src, 1);
            other.copy(device, src, 8192);
            MemorySegment back = arena.allocate(8192);
            platform.copy(back, device, 8192);
            assertEquals(crc(src), crc(back));
        }
        platform.freeHost(pinned);
        platform.free(device);
    }

    @Test
    void streamCopiesBindTheStreamsDevice() {
        openFake();
        MemorySegment device = platform.allocate(1, 1 << 20);
        try (Arena arena = Arena.ofConfined(); DeviceStream stream = platform.createStream(1)) {
            MemorySegment src = platform.allocateHost(1 << 20);
            MemorySegment back = platform.allocateHost(1 << 20);
            fill(src, 8);
            stream.copyAsync(device, src, 1 << 20);
            stream.copyAsync(back, device, 1 << 20);
            stream.synchronize();
            assertEquals(crc(src), crc(back));
            platform.freeHost(src);
            platform.freeHost(back);
        }
        platform.free(device);
    }

    @Test
    void ipcKeysExportImportAndCloseBeforeFree() {
        openFake();
        MemorySegment block = platform.allocate(0, 1 << 20);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(1 << 20);
            fill(data, 21);
            platform.copy(block, data, 1 << 20);
            MemorySegment sub = block.asSlice(65_536, 4096);
            byte[] key = platform.exportIpcHandle(sub);
            assertTrue(new String(key, StandardCharsets.US_ASCII).startsWith("fakeacl-"));
            MemorySegment mapped = platform.openIpcHandle(key, 4096, 1);
            assertEquals(PointerInfo.of(Location.device(MemoryKind.NPU, 1), false), platform.classify(mapped.address()));
            MemorySegment viaMapping = arena.allocate(4096);
            platform.copy(viaMapping, mapped, 4096);
            assertEquals(crc(data.asSlice(65_536, 4096)), crc(viaMapping));
            MemorySegment ones = arena.allocate(4096).fill((byte) 1);
            platform.copy(mapped, ones, 4096);
            MemorySegment check = arena.allocate(4096);
            platform.copy(check, sub, 4096);
            assertArrayEquals(ones.toArray(ValueLayout.JAVA_BYTE), check.toArray(ValueLayout.JAVA_BYTE));
            assertEquals(mapped.address(), platform.openIpcHandle(key, 4096, 1).address(), "one import per key");
            platform.closeIpcMapping(mapped);
            platform.closeIpcMapping(mapped);
            assertThrows(TransferException.class, () -> platform.closeIpcMapping(mapped));
        }
        // the fake refuses aclrtFree while an exported key is open: the platform must close it first
        platform.free(block);
    }

    @Test
    void failuresNameTheCallTheAclErrorAndTheRecentMessage() {
        openFake();
        TransferException oom = assertThrows(TransferException.class, () -> platform.allocate(0, 1L << 40));
        assertEquals("aclrtMalloc(1099511627776 bytes on npu:0) failed: 207001 ACL_ERROR_RT_MEMORY_ALLOCATION"
                + " (EE9999: fake acl: out of device memory)", oom.getMessage());
        assertEquals(ErrorCode.INTERNAL, oom.code());
        TransferException badDevice = assertThrows(TransferException.class, () -> platform.allocate(2, 64));
        assertEquals("device npu:2 does not exist (2 NPUs)", badDevice.getMessage());
        try (Arena arena = Arena.ofConfined()) {
            TransferException host = assertThrows(TransferException.class, () -> platform.exportIpcHandle(arena.allocate(64)));
            assertEquals(ErrorCode.INVALID_ARGUMENT, host.code());
        }
        assertEquals("100002 ACL_ERROR_REPEAT_INITIALIZE", 100002 + " " + AclRuntime.errorName(100002));
        assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, AclRuntime.errorCode(AclRuntime.ERROR_RT_NO_DEVICE));
    }

    @Test
    void olderCannWithoutIpcStillCopiesAndNamesTheMissingFunction() {
        assumeTrue(fakeWithoutIpc != null, "no gcc");
        AscendPlatformProvider old = new AscendPlatformProvider(List.of(fakeWithoutIpc.toString()));
        assertTrue(old.availability().isAvailable(), () -> old.availability().reason());
        try (AscendPlatform p = (AscendPlatform) old.create(); Arena arena = Arena.ofConfined()) {
            MemorySegment device = p.allocate(0, 4096);
            MemorySegment src = arena.allocate(4096);
            MemorySegment back = arena.allocate(4096);
            fill(src, 4);
            p.copy(device, src, 4096);
            p.copy(back, device, 4096);
            assertEquals(crc(src), crc(back));
            TransferException e = assertThrows(TransferException.class, () -> p.exportIpcHandle(device));
            assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, e.code());
            assertTrue(e.getMessage().endsWith("has no aclrtIpcMemGetExportKey (Ascend IPC needs a CANN release that"
                    + " provides it)"), e.getMessage());
            p.free(device);
        }
    }
}
