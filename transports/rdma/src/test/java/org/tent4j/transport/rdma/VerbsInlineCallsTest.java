package org.tent4j.transport.rdma;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.TimeSource;

/**
 * The FFM data path of the bindings, run for real against a stand-in provider ({@code src/test/c/fake_provider.c},
 * compiled with gcc against the installed verbs.h): the function pointers verbs.h's inline {@code ibv_post_send},
 * {@code ibv_poll_cq} and {@code ibv_query_port} call are read from provider-laid-out structs, called through the
 * critical address-taking downcalls with the preallocated work requests, and the completions parsed from
 * {@code ibv_wc}. Only the hardware (and libibverbs' own kernel-facing calls) are out of the loop.
 */
class VerbsInlineCallsTest {
    @TempDir
    static Path dir;
    private static Arena arena;
    private static MethodHandle last;
    private static MemorySegment context;
    private static MemorySegment cq;
    private static MemorySegment qp;

    @BeforeAll
    static void build() throws Throwable {
        CProgram.assumeToolchain();
        assumeTrue(NoDevice.libraryInstalled(), "libibverbs.so.1 is not installed");
        Path lib = dir.resolve("libfakeverbs.so");
        Process gcc = new ProcessBuilder("gcc", "-std=gnu11", "-Wall", "-Werror", "-shared", "-fPIC", "-o",
                lib.toString(), Path.of("src/test/c/fake_provider.c").toAbsolutePath().toString())
                .redirectErrorStream(true).start();
        String out = new String(gcc.getInputStream().readAllBytes());
        assertTrue(gcc.waitFor(60, TimeUnit.SECONDS) && gcc.exitValue() == 0, "gcc: " + out);
        arena = Arena.ofShared();
        SymbolLookup fake = SymbolLookup.libraryLookup(lib, arena);
        Linker linker = Linker.nativeLinker();
        context = (MemorySegment) linker.downcallHandle(fake.find("fake_setup").orElseThrow(),
                FunctionDescriptor.of(ADDRESS)).invokeExact();
        cq = ((MemorySegment) linker.downcallHandle(fake.find("fake_cq").orElseThrow(),
                FunctionDescriptor.of(ADDRESS)).invokeExact()).reinterpret(Verbs.IBV_CQ.byteSize());
        qp = ((MemorySegment) linker.downcallHandle(fake.find("fake_qp").orElseThrow(),
                FunctionDescriptor.of(ADDRESS)).invokeExact()).reinterpret(Verbs.IBV_QP.byteSize());
        last = linker.downcallHandle(fake.find("fake_last").orElseThrow(), FunctionDescriptor.of(JAVA_LONG,
                JAVA_INT));
        assertTrue(Files.exists(lib));
    }

    @AfterAll
    static void unload() {
        if (arena != null) {
            arena.close();
        }
    }

    private static long last(int what) throws Throwable {
        return (long) last.invokeExact(what);
    }

    @Test
    void queryPortGoesThroughVerbsContextWithTheFullAttributeSize() throws Throwable {
        VerbsLibrary verbs = VerbsLibrary.load();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(Verbs.IBV_PORT_ATTR);
            verbs.queryPort(context, 1, attr, "fake0");
            assertEquals(Verbs.IBV_PORT_ATTR.byteSize(), last(11), "port_attr_len passed as sizeof(ibv_port_attr)");
            assertEquals(Verbs.IBV_PORT_ACTIVE, attr.get(JAVA_INT, Verbs.PORT_ATTR_STATE));
            assertEquals(Verbs.IBV_MTU_2048, attr.get(JAVA_INT, Verbs.PORT_ATTR_ACTIVE_MTU));
            assertEquals(0x1201, Short.toUnsignedInt(attr.get(JAVA_SHORT,
                    Verbs.PORT_ATTR_LID)), "the u8 port number arrived as 1");
            assertEquals(Verbs.IBV_LINK_LAYER_ETHERNET, attr.get(JAVA_BYTE,
                    Verbs.PORT_ATTR_LINK_LAYER));
            assertEquals(1L << 30, Integer.toUnsignedLong(attr.get(JAVA_INT, Verbs.PORT_ATTR_MAX_MSG_SZ)));
            verbs.queryPort(context, 2, attr, "fake0");
            assertEquals(Verbs.IBV_PORT_DOWN, attr.get(JAVA_INT, Verbs.PORT_ATTR_STATE));
            assertEquals(0x1202, Short.toUnsignedInt(attr.get(JAVA_SHORT,
                    Verbs.PORT_ATTR_LID)));
        }
    }

    private RdmaDevice device(VerbsCompletionQueue completions) {
        RdmaOptions options = RdmaOptions.from(OptionValues.parse(RdmaOptions.PREFIX, RdmaOptions.SPECS, Map.of(
                "cq_size", "64")));
        RdmaDevice.PortInfo port = new RdmaDevice.PortInfo(Verbs.IBV_PORT_ACTIVE, Verbs.IBV_MTU_2048, 0,
                Verbs.IBV_LINK_LAYER_ETHERNET, 8, 1L << 30, 1, new byte[16]);
        RdmaDevice.DeviceLimits limits = new RdmaDevice.DeviceLimits(1L << 40, 256, 4, 64, 16, 16, 1);
        DeviceVerbs verbs = new DeviceVerbs() {
            @Override
            public RdmaDevice.MemoryRegion register(long address, long length, int access, String what) {
                throw new UnsupportedOperationException();
            }

            @Override
            public void deregister(RdmaDevice.MemoryRegion region) {
            }

            @Override
            public QueuePairVerbs createQueuePair(int depth, int maxSge) {
                return new NativeDeviceVerbs.NativeQueuePair(VerbsLibrary.load(), qp);
            }

            @Override
            public void close() {
            }
        };
        return new RdmaDevice("fake0", 0, verbs, completions, port, limits, options, 64, TimeSource.SYSTEM, null, null);
    }

    @Test
    void postAndPollRunThroughTheProvidersFunctionTables() throws Throwable {
        VerbsLibrary verbs = VerbsLibrary.load();
        VerbsCompletionQueue completions = new VerbsCompletionQueue(verbs, cq, 16, arena);
        RdmaDevice device = device(completions);
        QueuePair pair = device.createQueuePair(0);
        assertEquals(0xabc, pair.qpNum(), "qp_num read from struct ibv_qp");
        Fakes.CountingSlice read = new Fakes.CountingSlice(Long.MAX_VALUE, Opcode.READ);
        long local = Fakes.LOCAL.address() + 4096;
        assertEquals(RdmaDevice.POSTED, device.post(pair, read, Verbs.IBV_WR_RDMA_READ, local, 0x1234567,
                0x7f0000002000L, 0x89abcdef));
        long wrId = last(0);
        assertTrue(SlotTable.index(wrId) < 64 && device.slots().lane(wrId) == pair, "wr_id names the slot");
        assertEquals(Verbs.IBV_WR_RDMA_READ, last(1));
        assertEquals(Verbs.IBV_SEND_SIGNALED, last(2));
        assertEquals(1, last(3));
        assertEquals(0, last(4), "next is NULL");
        assertEquals(0x7f0000002000L, last(5));
        assertEquals(0x89abcdefL, last(6));
        assertEquals(local, last(7));
        assertEquals(4096, last(8));
        assertEquals(0x1234567, last(9));
        assertEquals(0xabc, last(10), "post_send got our struct ibv_qp *");
        assertEquals(1, device.slots().occupied());

        CompletionPoller poller = device.poller();
        assertEquals(1, poller.pollOnce());
        assertEquals(1, read.completes.get());
        assertEquals(0, device.slots().occupied());
        assertEquals(0, pair.outstanding());

        Fakes.CountingSlice denied = new Fakes.CountingSlice(Long.MAX_VALUE, Opcode.WRITE);
        device.post(pair, denied, Verbs.IBV_WR_RDMA_WRITE, local, 1, 0x7f0000002000L, 0xdead);
        assertEquals(Verbs.IBV_WR_RDMA_WRITE, last(1));
        assertEquals(1, poller.pollOnce());
        assertEquals(ErrorCode.PERMISSION_DENIED, denied.code);
        assertTrue(denied.message.endsWith("IBV_WC_REM_ACCESS_ERR (status 10, vendor_err 0x77)"), denied.message);
        assertTrue(denied.message.contains("fake0 qp 0xabc"), denied.message);
    }

    @Test
    void aRefusedPostFailsTheSliceAndFreesItsSlot() throws Throwable {
        VerbsLibrary verbs = VerbsLibrary.load();
        RdmaDevice device = device(new VerbsCompletionQueue(verbs, cq, 16, arena));
        QueuePair pair = device.createQueuePair(0);
        Fakes.CountingSlice s = new Fakes.CountingSlice();
        assertEquals(RdmaDevice.FAILED, device.post(pair, s, Verbs.IBV_WR_RDMA_READ, Fakes.LOCAL.address(), 1,
                0x7f0000002000L, 0xf011));
        assertEquals(ErrorCode.PEER_FAILED, s.code);
        assertTrue(s.message.endsWith(": ibv_post_send failed: errno 12 (Cannot allocate memory)"), s.message);
        assertEquals(0, device.slots().occupied());
        assertEquals(0, pair.outstanding());
        assertEquals("ibv_post_send failed: errno 12 (Cannot allocate memory)", pair.brokenCause());
        assertEquals(0, device.poller().pollOnce(), "a refused post produces no completion");
    }

    @Test
    void dataPathIsAllocationFree() throws Throwable {
        VerbsLibrary verbs = VerbsLibrary.load();
        RdmaDevice device = device(new VerbsCompletionQueue(verbs, cq, 16, arena));
        QueuePair pair = device.createQueuePair(0);
        Fakes.CountingSlice s = new Fakes.CountingSlice();
        CompletionPoller poller = device.poller();
        long local = Fakes.LOCAL.address();
        for (int i = 0; i < 20_000; i++) {
            device.post(pair, s, Verbs.IBV_WR_RDMA_WRITE, local, 1, 0x7f0000002000L, 2);
            poller.pollOnce();
        }
        int rounds = 50_000;
        long before = Fakes.allocatedBytes();
        for (int i = 0; i < rounds; i++) {
            device.post(pair, s, Verbs.IBV_WR_RDMA_WRITE, local, 1, 0x7f0000002000L, 2);
            poller.pollOnce();
        }
        long allocated = Fakes.allocatedBytes() - before;
        assertTrue(allocated < rounds, allocated + " bytes allocated by " + rounds
                + " post_send + poll_cq round trips through FFM");
        assertEquals(70_000, s.completes.get());
    }
}
