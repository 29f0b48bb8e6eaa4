package org.tent4j.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;
import org.tent4j.testkit.transport.TestTransportContext;

/**
 * The transport above the verbs boundary, two engines in one JVM: {@link LoopbackFabric} stands in for the devices
 * (it copies bytes and enforces QP states, keys and access), everything else is the production code — handshake over
 * the control plane, QP pairing and transitions, key tables, round-robin posting, send-queue credits and the queue
 * behind them, the completion pollers, timeouts and close.
 */
class RdmaTransportLoopbackTest {
    private static final int MIB = 1 << 20;
    private static final int SLICE = 64 << 10;

    private final LoopbackFabric fabric = new LoopbackFabric();
    private final Arena arena = Arena.ofShared();
    private TestTransportContext ca;
    private TestTransportContext cb;
    private RdmaTransport ta;
    private RdmaTransport tb;
    private final List<BufferDescriptor> bBuffers = new CopyOnWriteArrayList<>();

    private void start(Map<String, String> optionsA, String... devicesA) {
        ca = new TestTransportContext("a", "ma", "rdma", RdmaOptions.SPECS, optionsA, Duration.ofSeconds(10));
        cb = new TestTransportContext("b", "mb", "rdma", RdmaOptions.SPECS, Map.of(), Duration.ofSeconds(10));
        ta = RdmaTransport.open(ca, RdmaOptions.from(ca.options()), (o, p) -> fabric.open(o, p, devicesA));
        tb = RdmaTransport.open(cb, RdmaOptions.from(cb.options()), (o, p) -> fabric.open(o, p, "mlx5_9"));
    }

    @AfterEach
    void stop() throws Exception {
        if (ta != null) {
            ta.close();
        }
        if (tb != null) {
            tb.close();
        }
        if (ca != null) {
            ca.close();
        }
        if (cb != null) {
            cb.close();
        }
        arena.close();
        assertEquals(List.of(), fabric.violations, "verbs misuse seen by the loopback fabric");
    }

    private TestLocalMemory.Buffer register(TestTransportContext ctx, RdmaTransport t, long size, Permission p,
                                            boolean publish) {
        TestLocalMemory.Buffer b = ctx.memory().register(arena.allocate(size, 4096), p);
        Map<String, String> attrs = t.registerBuffer(b).orElseThrow();
        if (publish) {
            bBuffers.add(b.describe("rdma", attrs));
        }
        return b;
    }

    private SegmentDescriptor bDescriptor() {
        return SegmentDescriptor.builder().name("b").machineId("mb").host("127.0.0.1").controlPort(0)
                .transports(List.of("rdma")).transportAttributes(Map.of("rdma", tb.segmentAttributes()))
                .buffers(bBuffers).version(bBuffers.size()).build();
    }

    private static TestSlice slice(Opcode op, TestLocalMemory.Buffer local, long localOffset, BufferDescriptor remote,
                                   long remoteOffset, long length) {
        return new TestSlice(op, local, localOffset, remote, remote.address() + remoteOffset, length,
                System.nanoTime() + TimeUnit.SECONDS.toNanos(10));
    }

    private static void fill(MemorySegment m, long seed) {
        Random r = new Random(seed);
        byte[] b = new byte[(int) m.byteSize()];
        r.nextBytes(b);
        MemorySegment.copy(MemorySegment.ofArray(b), 0, m, 0, b.length);
    }

    private static TransferException failure(TestSlice s) throws Exception {
        ExecutionException e = assertThrows(ExecutionException.class, () -> s.result().get(10, TimeUnit.SECONDS));
        return assertInstanceOf(TransferException.class, e.getCause());
    }

    private List<LoopbackFabric.LoopbackQp> qpsOf(String... devices) {
        List<String> names = List.of(devices);
        return fabric.qps.values().stream().filter(q -> names.contains(q.device.name)).toList();
    }

    @Test
    void connectPairsQueuePairsAndMovesBothSidesToRts() {
        start(Map.of(), "mlx5_0", "mlx5_1");
        register(cb, tb, MIB, Permission.READ_WRITE, true);
        PeerConnection c = ta.connect(bDescriptor());
        assertTrue(c.isOpen());
        List<LoopbackFabric.LoopbackQp> mine = qpsOf("mlx5_0", "mlx5_1");
        List<LoopbackFabric.LoopbackQp> theirs = qpsOf("mlx5_9");
        assertEquals(4, mine.size(), "qps_per_peer 2 on each of two devices");
        assertEquals(4, theirs.size(), "the target made one QP per initiator QP");
        for (LoopbackFabric.LoopbackQp q : fabric.qps.values()) {
            assertEquals(List.of(Verbs.IBV_QPS_INIT, Verbs.IBV_QPS_RTR, Verbs.IBV_QPS_RTS), q.states);
            LoopbackFabric.LoopbackQp peer = fabric.qps.get(q.destQpNum);
            assertEquals(q.qpNum, peer.destQpNum, "QPs are paired with each other");
            assertTrue(mine.contains(q) != mine.contains(peer), "each pair spans both engines");
        }
        List<RdmaAttributes.DeviceAddress> published = RdmaAttributes.decodeSegment("a", ta.segmentAttributes());
        assertEquals(List.of("mlx5_0", "mlx5_1"), published.stream().map(RdmaAttributes.DeviceAddress::name).toList());
    }

    @Test
    void writeThenReadMovesTheBytesOverEveryPathAndQp() throws Exception {
        start(Map.of(), "mlx5_0", "mlx5_1");
        TestLocalMemory.Buffer src = register(ca, ta, MIB, Permission.LOCAL_ONLY, false);
        TestLocalMemory.Buffer back = register(ca, ta, MIB, Permission.LOCAL_ONLY, false);
        TestLocalMemory.Buffer target = register(cb, tb, MIB, Permission.READ_WRITE, true);
        fill(src.segment(), 42);
        BufferDescriptor remote = bBuffers.getFirst();
        PeerConnection c = ta.connect(bDescriptor());
        List<TestSlice> writes = new ArrayList<>();
        int n = 0;
        for (int off = 0; off < MIB; off += SLICE) {
            TestSlice s = slice(Opcode.WRITE, src, off, remote, off, SLICE);
            writes.add(s);
            c.post(new OnPath(s, n++ % c.pathCount())); // as the runtime spreads them
        }
        for (TestSlice s : writes) {
            s.result().get(10, TimeUnit.SECONDS);
            assertEquals(1, s.completions());
        }
        assertEquals(-1, src.segment().mismatch(target.segment()), "target holds what was written");
        List<TestSlice> reads = new ArrayList<>();
        for (int off = 0; off < MIB; off += SLICE) {
            TestSlice s = slice(Opcode.READ, back, off, remote, off, SLICE);
            reads.add(s);
            c.post(new OnPath(s, n++ % c.pathCount()));
        }
        for (TestSlice s : reads) {
            s.result().get(10, TimeUnit.SECONDS);
        }
        assertEquals(-1, src.segment().mismatch(back.segment()), "read back what was written");
        for (LoopbackFabric.LoopbackQp q : qpsOf("mlx5_0", "mlx5_1")) {
            assertEquals(8, q.posts.get(), "32 slices over 2 paths of 2 QPs, each in turn");
        }
        for (RdmaDevice d : ta.devices()) {
            assertEquals(0, d.slots().occupied());
        }
    }

    @Test
    void remoteAccessErrorIsPermissionDeniedAndBreaksTheConnection() throws Exception {
        start(Map.of("qps_per_peer", "1"), "mlx5_0");
        TestLocalMemory.Buffer src = register(ca, ta, SLICE, Permission.LOCAL_ONLY, false);
        register(cb, tb, SLICE, Permission.READ_ONLY, true);
        BufferDescriptor remote = bBuffers.getFirst();
        PeerConnection c = ta.connect(bDescriptor());
        TestSlice write = slice(Opcode.WRITE, src, 0, remote, 0, 4096);
        c.post(write);
        TransferException e = failure(write);
        assertEquals(ErrorCode.PERMISSION_DENIED, e.code());
        assertTrue(e.getMessage().contains("failed: IBV_WC_REM_ACCESS_ERR (status 10, vendor_err 0x42)"),
                e.getMessage());
        // the poller breaks the lane before it fails the slice, so the failure is the event to wait for
        assertFalse(c.isOpen(), "connection marked broken");
        TestSlice next = slice(Opcode.READ, src, 0, remote, 0, 4096);
        c.post(next);
        TransferException broken = failure(next);
        assertEquals(ErrorCode.PEER_FAILED, broken.code());
        assertTrue(broken.getMessage().startsWith("rdma path mlx5_0->mlx5_9 to 'b' is broken: mlx5_0 qp 0x"),
                broken.getMessage());
        // a new connection reads the read-only buffer
        PeerConnection again = ta.connect(bDescriptor());
        TestSlice read = slice(Opcode.READ, src, 0, remote, 0, 4096);
        again.post(read);
        read.result().get(10, TimeUnit.SECONDS);
    }

    @Test
    void aBrokenQueuePairLeavesItsPathToTheOthersUntilReconnect() throws Exception {
        start(Map.of("qps_per_peer", "2"), "mlx5_0");
        TestLocalMemory.Buffer src = register(ca, ta, SLICE, Permission.LOCAL_ONLY, false);
        register(cb, tb, SLICE, Permission.READ_ONLY, true);
        BufferDescriptor remote = bBuffers.getFirst();
        PeerConnection c = ta.connect(bDescriptor());
        TestSlice write = slice(Opcode.WRITE, src, 0, remote, 0, 4096);
        c.post(write);
        assertEquals(ErrorCode.PERMISSION_DENIED, failure(write).code());
        assertFalse(c.isOpen(), "connection asks to be reopened");
        for (int i = 0; i < 4; i++) {
            TestSlice read = slice(Opcode.READ, src, 0, remote, 0, 4096);
            c.post(read);
            read.result().get(10, TimeUnit.SECONDS);
        }
        assertEquals(1, qpsOf("mlx5_0").stream().filter(q -> q.state == Verbs.IBV_QPS_ERR).count());
    }

    /** A slice the runtime sent down a given path. */
    private record OnPath(TestSlice slice, int path) implements org.tent4j.spi.Slice {
        @Override public Opcode opcode() { return slice.opcode(); }
        @Override public org.tent4j.spi.LocalBuffer localBuffer() { return slice.localBuffer(); }
        @Override public long localOffset() { return slice.localOffset(); }
        @Override public BufferDescriptor remoteBuffer() { return slice.remoteBuffer(); }
        @Override public long remoteAddress() { return slice.remoteAddress(); }
        @Override public long length() { return slice.length(); }
        @Override public long deadlineNanos() { return slice.deadlineNanos(); }
        @Override public void complete() { slice.complete(); }
        @Override public void fail(ErrorCode code, String message) { slice.fail(code, message); }
    }

    @Test
    void pathsAreRailsAndSlicesGoWhereTheRuntimeSays() throws Exception {
        start(Map.of("qps_per_peer", "2"), "mlx5_0", "mlx5_1");
        TestLocalMemory.Buffer src = register(ca, ta, MIB, Permission.LOCAL_ONLY, false);
        register(cb, tb, MIB, Permission.READ_WRITE, true);
        PeerConnection c = ta.connect(bDescriptor());
        assertEquals(2, c.pathCount());
        assertEquals("mlx5_0->mlx5_9", c.pathName(0));
        assertEquals("mlx5_1->mlx5_9", c.pathName(1));
        for (int i = 0; i < 6; i++) {
            TestSlice s = slice(Opcode.WRITE, src, 0, bBuffers.getFirst(), 0, 4096);
            c.post(new OnPath(s, 1));
            s.result().get(10, TimeUnit.SECONDS);
        }
        assertEquals(0, qpsOf("mlx5_0").stream().mapToInt(q -> q.posts.get()).sum(), "path 0 untouched");
        assertEquals(List.of(3, 3), qpsOf("mlx5_1").stream().map(q -> q.posts.get()).toList(),
                "path 1's two QPs in turn");
    }

    @Test
    void rangesWithoutRdmaKeysAreRefused() throws Exception {
        start(Map.of(), "mlx5_0");
        TestLocalMemory.Buffer src = register(ca, ta, SLICE, Permission.LOCAL_ONLY, false);
        register(cb, tb, SLICE, Permission.READ_WRITE, true);
        PeerConnection c = ta.connect(bDescriptor());
        TestLocalMemory.Buffer unregistered = ca.memory().register(arena.allocate(SLICE), Permission.LOCAL_ONLY);
        TestSlice local = slice(Opcode.WRITE, unregistered, 0, bBuffers.getFirst(), 0, 4096);
        c.post(local);
        assertEquals(ErrorCode.ADDRESS_NOT_REGISTERED, failure(local).code());
        BufferDescriptor tcpOnly = BufferDescriptor.builder().address(0x7000_0000L).length(SLICE)
                .location(Location.CPU).permission(Permission.READ_WRITE).transports(List.of("tcp"))
                .attributes(Map.of()).build();
        TestSlice remote = slice(Opcode.READ, src, 0, tcpOnly, 0, 4096);
        c.post(remote);
        TransferException e = failure(remote);
        assertEquals(ErrorCode.ADDRESS_NOT_REGISTERED, e.code());
        assertEquals("rdma READ of 4096 bytes at remote 0x70000000 of 'b': buffer is not registered with rdma",
                e.getMessage());
        assertTrue(c.isOpen(), "a refused slice does not break the connection");
    }

    @Test
    void fullSendQueueQueuesSlicesAndCompletionsDrainThemInOrder() throws Exception {
        start(Map.of("max_qp_wr", "1", "qps_per_peer", "1"), "mlx5_0");
        TestLocalMemory.Buffer src = register(ca, ta, 8 * 4096, Permission.LOCAL_ONLY, false);
        TestLocalMemory.Buffer target = register(cb, tb, 8 * 4096, Permission.READ_WRITE, true);
        fill(src.segment(), 7);
        PeerConnection c = ta.connect(bDescriptor());
        LoopbackFabric.LoopbackQp qp = qpsOf("mlx5_0").getFirst();
        fabric.holdCompletions = true;
        List<Integer> order = new CopyOnWriteArrayList<>();
        List<CompletableFuture<Void>> recorded = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            TestSlice s = slice(Opcode.WRITE, src, i * 4096L, bBuffers.getFirst(), i * 4096L, 4096);
            int n = i;
            recorded.add(s.result().thenRun(() -> order.add(n)));
            c.post(s);
        }
        assertEquals(1, qp.posts.get(), "send-queue depth 1: one on the wire, five queued");
        for (int i = 1; i <= 6; i++) {
            int expected = i;
            fabric.release();
            recorded.get(i - 1).get(10, TimeUnit.SECONDS);
            assertEquals(expected, order.size(), "only the released slice completed");
            fabric.await(() -> qp.posts.get() == Math.min(6, expected + 1), "next queued slice posted");
        }
        assertEquals(List.of(0, 1, 2, 3, 4, 5), order, "queued slices go out first-in first-out");
        assertEquals(-1, src.segment().asSlice(0, 6 * 4096).mismatch(target.segment().asSlice(0, 6 * 4096)));
    }

    @Test
    void overdueSliceTimesOutAndFlushesItsQueuePair() throws Exception {
        start(Map.of("qps_per_peer", "1"), "mlx5_0");
        TestLocalMemory.Buffer src = register(ca, ta, SLICE, Permission.LOCAL_ONLY, false);
        register(cb, tb, SLICE, Permission.READ_WRITE, true);
        PeerConnection c = ta.connect(bDescriptor());
        fabric.holdCompletions = true;
        TestSlice s = new TestSlice(Opcode.WRITE, src, 0, bBuffers.getFirst(), bBuffers.getFirst().address(), 4096,
                System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(30));
        c.post(s);
        TransferException e = failure(s);
        assertEquals(ErrorCode.TIMEOUT, e.code());
        assertTrue(e.getMessage().endsWith("timed out: no completion before the deadline"), e.getMessage());
        LoopbackFabric.LoopbackQp qp = qpsOf("mlx5_0").getFirst();
        fabric.await(() -> qp.states.contains(Verbs.IBV_QPS_ERR), "stuck QP moved to ERR");
        qp.device.cq.awaitDispatched("the poller handled the flush completion");
        assertEquals(0, ta.devices().getFirst().slots().occupied(), "flush completion freed the slot");
        assertFalse(c.isOpen());
        assertEquals(1, s.completions());
    }

    @Test
    void closeFailsWhatIsInFlightAndTheTargetDropsItsQueuePairs() throws Exception {
        start(Map.of(), "mlx5_0");
        TestLocalMemory.Buffer src = register(ca, ta, SLICE, Permission.LOCAL_ONLY, false);
        register(cb, tb, SLICE, Permission.READ_WRITE, true);
        PeerConnection c = ta.connect(bDescriptor());
        fabric.holdCompletions = true;
        List<TestSlice> slices = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            TestSlice s = slice(Opcode.WRITE, src, 0, bBuffers.getFirst(), 0, 4096);
            slices.add(s);
            c.post(s);
        }
        c.close();
        for (TestSlice s : slices) {
            TransferException e = failure(s);
            assertEquals(ErrorCode.PEER_FAILED, e.code());
            assertTrue(e.getMessage().startsWith("rdma connection to 'b' was closed"), e.getMessage());
            assertEquals(1, s.completions());
        }
        assertFalse(c.isOpen());
        assertEquals(0, ta.devices().getFirst().slots().occupied());
        fabric.await(() -> fabric.destroyed.size() == 4, "both sides' QPs destroyed");
        assertTrue(fabric.qps.isEmpty());
        TestSlice after = slice(Opcode.WRITE, src, 0, bBuffers.getFirst(), 0, 4096);
        c.post(after);
        assertEquals("rdma connection to 'b' is closed", failure(after).getMessage());
    }

    @Test
    void transportCloseFailsInFlightWithEngineClosedAndClosesDevices() throws Exception {
        start(Map.of(), "mlx5_0");
        TestLocalMemory.Buffer src = register(ca, ta, SLICE, Permission.LOCAL_ONLY, false);
        register(cb, tb, SLICE, Permission.READ_WRITE, true);
        PeerConnection c = ta.connect(bDescriptor());
        fabric.holdCompletions = true;
        TestSlice s = slice(Opcode.WRITE, src, 0, bBuffers.getFirst(), 0, 4096);
        c.post(s);
        ta.close();
        TransferException e = failure(s);
        assertEquals(ErrorCode.ENGINE_CLOSED, e.code());
        TransferException connect = assertThrows(TransferException.class, () -> ta.connect(bDescriptor()));
        assertEquals(ErrorCode.ENGINE_CLOSED, connect.code());
        ta = null;
    }

    @Test
    void peersWithoutUsableRdmaAttributesAreRefused() {
        start(Map.of(), "mlx5_0");
        SegmentDescriptor tcpOnly = SegmentDescriptor.builder().name("b").machineId("mb").host("127.0.0.1")
                .controlPort(0).transports(List.of("tcp")).transportAttributes(Map.of()).buffers(List.of()).version(1)
                .build();
        TransferException none = assertThrows(TransferException.class, () -> ta.connect(tcpOnly));
        assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, none.code());
        assertEquals("peer 'b' publishes no rdma devices (it does not run the rdma transport)", none.getMessage());
        SegmentDescriptor bad = SegmentDescriptor.builder().name("b").machineId("mb").host("127.0.0.1").controlPort(0)
                .transports(List.of("rdma")).transportAttributes(Map.of("rdma", Map.of("devices", "x", "lids", "1")))
                .buffers(List.of()).version(1).build();
        assertEquals(ErrorCode.PROTOCOL, assertThrows(TransferException.class, () -> ta.connect(bad)).code());
        assertTrue(fabric.qps.isEmpty(), "no QP left behind");
    }

    @Test
    void targetRejectsHandshakesItCannotServe() {
        start(Map.of(), "mlx5_0");
        byte[] gid = new byte[16];
        byte[] wrongDevice = new HandshakeMessage(HandshakeMessage.Type.CONNECT, 9, List.of(
                new HandshakeMessage.Endpoint(0, 5, 0x999, 1, 1, Verbs.IBV_MTU_4096, gid))).encode();
        TransferException e = assertThrows(TransferException.class, () -> ca.controlPlane().call(bDescriptor(),
                RdmaTransport.CONNECT_SERVICE, wrongDevice, Duration.ofSeconds(5)));
        assertEquals(ErrorCode.PROTOCOL, e.code());
        assertEquals("rdma handshake: 'a' asks for device 5 but this engine publishes 1", e.getMessage());
        byte[] unknownPeerQp = new HandshakeMessage(HandshakeMessage.Type.CONNECT, 9, List.of(
                new HandshakeMessage.Endpoint(0, 0, 0x999, 1, 1, Verbs.IBV_MTU_4096, gid))).encode();
        TransferException rtr = assertThrows(TransferException.class, () -> ca.controlPlane().call(bDescriptor(),
                RdmaTransport.CONNECT_SERVICE, unknownPeerQp, Duration.ofSeconds(5)));
        assertTrue(rtr.getMessage().contains("-> RTR, mask 0x129181) failed: errno 22 (Invalid argument)"),
                rtr.getMessage());
        assertEquals(1, fabric.destroyed.size(), "the half-made QP was destroyed");
        fabric.violations.clear(); // the RTR refusal above was provoked on purpose
        assertThrows(TransferException.class, () -> ca.controlPlane().call(bDescriptor(),
                RdmaTransport.CONNECT_SERVICE, new byte[]{1, 2, 3}, Duration.ofSeconds(5)));
    }

    @Test
    void buffersRegisteredAfterConnectAreReachable() throws Exception {
        start(Map.of(), "mlx5_0");
        TestLocalMemory.Buffer src = register(ca, ta, SLICE, Permission.LOCAL_ONLY, false);
        fill(src.segment(), 3);
        register(cb, tb, SLICE, Permission.READ_WRITE, true);
        PeerConnection c = ta.connect(bDescriptor());
        TestLocalMemory.Buffer late = register(cb, tb, SLICE, Permission.READ_WRITE, true);
        // before the runtime passes the new descriptor on, the slice's own buffer descriptor carries the keys
        TestSlice early = slice(Opcode.WRITE, src, 0, bBuffers.get(1), 0, SLICE);
        c.post(early);
        early.result().get(10, TimeUnit.SECONDS);
        c.descriptorChanged(bDescriptor());
        TestSlice after = slice(Opcode.WRITE, src, 0, bBuffers.get(1), 0, SLICE);
        c.post(after);
        after.result().get(10, TimeUnit.SECONDS);
        assertEquals(-1, src.segment().mismatch(late.segment()));
        assertTrue(c.isOpen());
    }

    @Test
    void deviceMemoryIsRegisteredThroughPeerMemoryUnlessGpuDirectIsOff() {
        start(Map.of(), "mlx5_0");
        TestLocalMemory.Buffer cuda = new TestLocalMemory.Buffer(98, arena.allocate(4096),
                Location.device(MemoryKind.CUDA, 0), Permission.READ_WRITE, Map.of());
        assertTrue(ta.registerBuffer(cuda).isPresent(), "gpu_direct (default) registers device memory with ibv_reg_mr");
        assertTrue(ta.capabilities().orElseThrow().supports(MemoryKind.CUDA, MemoryKind.CPU));
        assertTrue(ta.capabilities().orElseThrow().supports(MemoryKind.CPU, MemoryKind.ROCM));
        ta.unregisterBuffer(cuda);
    }

    @Test
    void deviceMemoryAndUnregisteredBuffersAreNotServed() {
        start(Map.of("gpu_direct", "false"), "mlx5_0");
        TestLocalMemory.Buffer cuda = new TestLocalMemory.Buffer(99, arena.allocate(4096),
                Location.device(MemoryKind.CUDA, 0), Permission.READ_WRITE, Map.of());
        assertTrue(ta.registerBuffer(cuda).isEmpty());
        assertFalse(ta.capabilities().orElseThrow().supports(MemoryKind.CUDA, MemoryKind.CPU));
        TestLocalMemory.Buffer host = register(ca, ta, 4096, Permission.READ_ONLY, false);
        assertSame(host, ta.localRegistration(host.address() + 100, 10).buffer());
        ta.unregisterBuffer(host);
        assertEquals(null, ta.localRegistration(host.address(), 1));
        ta.unregisterBuffer(host); // twice is harmless
    }

    @Test
    void allowListSelectsDevicesAndNamesMissingOnes() {
        ca = new TestTransportContext("a", "ma", "rdma", RdmaOptions.SPECS, Map.of("devices", "mlx5_1"),
                Duration.ofSeconds(10));
        ta = RdmaTransport.open(ca, RdmaOptions.from(ca.options()), (o, p) -> fabric.open(o, p, "mlx5_0",
                "mlx5_1"));
        assertEquals(List.of("mlx5_1"), ta.devices().stream().map(RdmaDevice::name).toList());
        assertEquals(0, ta.devices().getFirst().index());
        Map<String, String> attrs = new HashMap<>(ta.segmentAttributes());
        assertEquals("mlx5_1", attrs.get("devices"));
        assertEquals(1L << 30, ta.capabilities().orElseThrow().maxSliceSize(), "bounded by the port's max_msg_sz");
        assertEquals(20, ta.capabilities().orElseThrow().rank());
    }

    @Test
    void handshakeFailureSurfacesAsAnUnreachablePeerWithoutLeaks() {
        start(Map.of(), "mlx5_0");
        register(cb, tb, SLICE, Permission.READ_WRITE, true);
        SegmentDescriptor b = bDescriptor();
        cb.close(); // b's control plane is gone
        TransferException e = assertThrows(TransferException.class, () -> ta.connect(b));
        assertEquals(ErrorCode.PEER_UNREACHABLE, e.code());
        assertEquals(2, fabric.destroyed.size(), "the QPs made for the attempt were destroyed");
        cb = null;
    }
}
