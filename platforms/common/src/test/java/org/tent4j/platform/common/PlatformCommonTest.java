package org.tent4j.platform.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;

/** The pieces the native platforms share, each without a runtime: fake native calls record what they were asked. */
class PlatformCommonTest {
    private final List<String> closed = new ArrayList<>();
    private final IpcMappings mappings = new IpcMappings((key, base, device) ->
            closed.add(key + "@" + Long.toHexString(base) + "/" + device));

    @Test
    void repeatedOpensShareOneNativeMappingAndTheLastCloseUnmapsIt() {
        AtomicInteger opens = new AtomicInteger();
        IpcMappings.Opener opener = () -> {
            opens.incrementAndGet();
            return 0x10000;
        };
        MemorySegment a = mappings.open("0:aa", 0, 0x40, 64, opener);
        MemorySegment b = mappings.open("0:aa", 0, 0x40, 64, opener);
        MemorySegment c = mappings.open("0:aa", 0, 0x80, 32, opener); // another range of the same block
        assertEquals(1, opens.get(), "a handle must be opened natively once");
        assertEquals(0x10040, a.address());
        assertEquals(a.address(), b.address());
        assertEquals(0x10080, c.address());
        assertEquals(32, c.byteSize());
        assertEquals(1, mappings.openHandleCount());

        assertTrue(mappings.close(a.address()));
        assertTrue(mappings.close(c.address()));
        assertEquals(List.of(), closed, "closed while a mapping was still handed out");
        assertTrue(mappings.close(b.address()));
        assertEquals(List.of("0:aa@10000/0"), closed);
        assertEquals(0, mappings.openHandleCount());
        assertFalse(mappings.close(b.address()), "a second close of the last mapping must be refused");
    }

    @Test
    void theSameHandleOnAnotherDeviceIsItsOwnMapping() {
        mappings.open("0:aa", 0, 0, 8, () -> 0x1000);
        mappings.open("1:aa", 1, 0, 8, () -> 0x2000);
        assertEquals(2, mappings.openHandleCount());
        mappings.closeAll((key, base, device) -> closed.add(key + "/" + device));
        assertEquals(List.of("0:aa/0", "1:aa/1"), closed.stream().sorted().toList());
        assertEquals(0, mappings.openHandleCount());
    }

    @Test
    void aFailedOpenLeavesNothingBehind() {
        assertThrows(TransferException.class, () -> mappings.open("0:bb", 0, 0, 8, () -> {
            throw new TransferException(ErrorCode.PEER_FAILED, "open failed");
        }));
        assertEquals(0, mappings.openHandleCount());
        assertEquals(0x3000, mappings.open("0:bb", 0, 0, 8, () -> 0x3000).address());
    }

    @Test
    void handleOffsetRoundTrips() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = arena.allocate(64);
            handle.fill((byte) 7);
            byte[] wire = IpcHandleOffset.encode(handle, 64, 0x1234_5678_9AL);
            assertEquals(72, wire.length);
            assertEquals(7, wire[63]);
            assertEquals(0x9A, wire[64] & 0xFF, "the offset is little-endian");
            assertEquals(0x1234_5678_9AL, IpcHandleOffset.offset(wire, 64));
        }
    }

    @Test
    void currentDeviceIsSwitchedOnlyWhenNeededAndPutBack() {
        int[] current = {2};
        List<String> calls = new ArrayList<>();
        CurrentDevice device = new CurrentDevice() {
            @Override
            protected int current() {
                return current[0];
            }

            @Override
            protected void select(int d) {
                calls.add("select " + d);
                current[0] = d;
            }

            @Override
            protected void selectQuietly(int d) {
                calls.add("restore " + d);
                current[0] = d;
            }
        };
        int previous = device.switchTo(0);
        device.restore(previous, 0);
        assertEquals(List.of("select 0", "restore 2"), calls);
        calls.clear();
        device.restore(device.switchTo(2), 2);
        assertEquals(List.of(), calls, "no switch to the device already current");
        current[0] = -1; // the runtime cannot say
        device.restore(device.switchTo(1), 1);
        assertEquals(List.of("select 1"), calls, "an unknown previous device is not restored");
    }

    @Test
    void aNativeStreamChecksCopiesAndClosesOnce() {
        List<String> calls = new ArrayList<>();
        List<NativeStream> forgotten = new ArrayList<>();
        NativeStream stream = new NativeStream("cuda:1", forgotten::add) {
            @Override
            protected void enqueueCopy(MemorySegment dst, MemorySegment src, long length) {
                calls.add("copy " + length);
            }

            @Override
            protected void awaitQueued() {
                calls.add("sync");
            }

            @Override
            protected void destroy() {
                calls.add("destroy on " + name());
            }
        };
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(16);
            MemorySegment b = arena.allocate(16);
            stream.copyAsync(a, b, 0);
            stream.copyAsync(a, b, 16);
            assertThrows(TransferException.class, () -> stream.copyAsync(a, b, 17));
            stream.synchronize();
            stream.close();
            stream.close();
            assertEquals(List.of("copy 16", "sync", "destroy on stream on cuda:1"), calls);
            assertEquals(List.of(stream), forgotten);
            TransferException closed = assertThrows(TransferException.class, stream::synchronize);
            assertEquals("stream on cuda:1 is closed", closed.getMessage());
        }
    }

    @Test
    void aLazyProbeRunsOnceForManyThreads() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
        LazyProbe<String> probe = new LazyProbe<>(() -> "probe " + runs.incrementAndGet());
        try (var pool = java.util.concurrent.Executors.newFixedThreadPool(8)) {
            List<java.util.concurrent.Future<String>> answers = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                answers.add(pool.submit(() -> {
                    go.await();
                    return probe.get();
                }));
            }
            go.countDown();
            for (var a : answers) {
                assertEquals("probe 1", a.get());
            }
        }
        assertEquals(1, runs.get());
    }

    @Test
    void checksNameWhatWasWrong() {
        TransferException e = assertThrows(TransferException.class, () -> PlatformChecks.checkDevice(4, 2, "cuda", "CUDA device"));
        assertEquals("device cuda:4 does not exist (2 CUDA devices)", e.getMessage());
        e = assertThrows(TransferException.class, () -> PlatformChecks.checkDevice(1, 1, "npu", "NPU"));
        assertEquals("device npu:1 does not exist (1 NPU)", e.getMessage());
        assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(TransferException.class,
                () -> PlatformChecks.checkSize(0)).code());
        assertEquals(ErrorCode.ENGINE_CLOSED, assertThrows(TransferException.class,
                () -> PlatformChecks.ensureOpen(true, "rocm")).code());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment small = arena.allocate(8);
            assertEquals(ErrorCode.OUT_OF_BOUNDS, assertThrows(TransferException.class,
                    () -> PlatformChecks.checkCopy(small, arena.allocate(16), 16)).code());
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(TransferException.class,
                    () -> PlatformChecks.checkCopy(small, MemorySegment.ofArray(new byte[8]), 8)).code());
        }
    }
}
