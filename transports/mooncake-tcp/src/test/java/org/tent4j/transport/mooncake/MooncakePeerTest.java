package org.tent4j.transport.mooncake;

import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Transport;
import org.tent4j.testkit.transport.TestSlice;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.tent4j.transport.mooncake.Tent4jSide.crc;
import static org.tent4j.transport.mooncake.Tent4jSide.fill;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.transport.mooncake.FakeMooncakeTarget.BASE;
import static org.tent4j.transport.mooncake.FakeMooncakeTarget.header;
import static org.tent4j.transport.mooncake.FakeMooncakeTarget.hex;
import static org.tent4j.transport.mooncake.FakeMooncakeTarget.readAll;

/**
 * The plugin against Mooncake peers written from the reference alone: {@link FakeMooncakeTarget} (a target) and
 * raw java.net sockets (an initiator). The golden bytes are a real C++ initiator's WRITE header and a v2 OK status.
 */
class MooncakePeerTest {
    /** A C++ initiator's WRITE header for 4096 bytes to 0x7fd329c00000, v2 framing, captured on the wire. */
    static final String GOLDEN_WRITE_HEADER = "00 10 00 00 00 00 00 00 00 00 c0 29 d3 7f 00 00 81 00 00 00 00 00 00 00";
    static final String GOLDEN_OK = "00 00 00 00 56 54 43 4d";
    static final String REJECTED = "01 00 00 00 56 54 43 4d";
    static final String PERMISSION_DENIED = "02 00 00 00 56 54 43 4d";
    private static final long KIB = 1024;

    @AutoClose
    private Tent4jSide side;
    @AutoClose
    private FakeMooncakeTarget fake;

    private Transport tent4j(Map<String, String> options) {
        return tent4j(options, Duration.ofSeconds(5));
    }

    private Transport tent4j(Map<String, String> options, Duration transferTimeout) {
        side = new Tent4jSide(options, transferTimeout);
        return side.transport;
    }

    private LocalBuffer allocate(long size) {
        return side.allocate(size, Permission.READ_WRITE);
    }

    /** A connection to a {@link FakeMooncakeTarget} of 64 KiB that misbehaves as told, in v2 framing, one lane. */
    private PeerConnection misbehaving(FakeMooncakeTarget.Misbehaviour misbehaviour) throws Exception {
        fake = new FakeMooncakeTarget(64 * KIB);
        fake.misbehaviour = misbehaviour;
        return tent4j(Map.of("lanes", "1")).connect(mooncakePeer(2));
    }

    private static void assertFailure(TransferException e, ErrorCode code, String... fragments) {
        assertEquals(code, e.code(), e.getMessage());
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), () -> "'" + f + "' not in: " + e.getMessage());
        }
    }

    /** The Mooncake peer as this engine sees it: its published JSON, read and turned into a tent4j descriptor. */
    private SegmentDescriptor mooncakePeer(Integer protoVersion) {
        byte[] json = fake.descriptorJson(protoVersion).getBytes(StandardCharsets.UTF_8);
        return MooncakeSegmentDescriptor.parse("mooncake/ram/mooncake-node", json)
                .toSegmentDescriptor("127.0.0.1", "mooncake-machine");
    }

    private static TestSlice slice(Opcode op, LocalBuffer local, long localOffset, SegmentDescriptor peer,
                                   long remoteAddress, long length) {
        return slice(op, local, localOffset, peer.buffers().getFirst(), remoteAddress, length,
                System.nanoTime() + TimeUnit.SECONDS.toNanos(10));
    }

    private static TestSlice slice(Opcode op, LocalBuffer local, long localOffset, BufferDescriptor remote,
                                   long remoteAddress, long length, long deadline) {
        return new TestSlice(op, local, localOffset, remote, remoteAddress, length, deadline);
    }

    private static void completes(PeerConnection c, TestSlice s) throws Exception {
        c.post(s);
        s.result().get(10, TimeUnit.SECONDS);
        assertEquals(1, s.completions());
    }

    private static TransferException fails(PeerConnection c, TestSlice s) throws Exception {
        c.post(s);
        ExecutionException e = assertThrows(ExecutionException.class, () -> s.result().get(10, TimeUnit.SECONDS));
        return (TransferException) e.getCause();
    }

    // ----------------------------------------------------------------------------- tent4j initiates, Mooncake serves

    @Test
    void writeInV2FramingSendsTheGoldenHeaderAndLandsTheBytes() throws Exception {
        fake = new FakeMooncakeTarget(1L << 20);
        PeerConnection c = tent4j(Map.of("lanes", "1")).connect(mooncakePeer(2));
        LocalBuffer local = allocate(8 * KIB);
        fill(local.segment(), 1);
        completes(c, slice(Opcode.WRITE, local, 0, mooncakePeer(2), BASE, 4096));
        assertEquals(GOLDEN_WRITE_HEADER, hex(fake.headers.poll(5, TimeUnit.SECONDS)));
        assertEquals(crc(local.segment().asSlice(0, 4096)), crc(fake.memory, 0, 4096));
    }

    @Test
    void readInV2FramingLandsTheBytes() throws Exception {
        fake = new FakeMooncakeTarget(2L << 20);
        for (int i = 0; i < fake.memory.length; i++) {
            fake.memory[i] = (byte) (i * 7 + (i >>> 9));
        }
        SegmentDescriptor peer = mooncakePeer(2);
        PeerConnection c = tent4j(Map.of()).connect(peer);
        LocalBuffer local = allocate(2L << 20);
        int length = (1 << 20) + 17;
        completes(c, slice(Opcode.READ, local, 5, peer, BASE + 3, length));
        byte[] h = fake.headers.poll(5, TimeUnit.SECONDS);
        assertEquals(0x80, h[16] & 0xff, "a v2 READ's opcode byte");
        assertEquals(crc(fake.memory, 3, length), crc(local.segment().asSlice(5, length)));
    }

    @Test
    void v1FramingWhenThePeerPublishesNoProtoVersion() throws Exception {
        fake = new FakeMooncakeTarget(1L << 20);
        SegmentDescriptor peer = mooncakePeer(null);
        PeerConnection c = tent4j(Map.of("lanes", "1")).connect(peer);
        LocalBuffer local = allocate(64 * KIB);
        fill(local.segment(), 2);
        completes(c, slice(Opcode.WRITE, local, 0, peer, BASE + 100, 4096));
        assertEquals(hex(header(4096, BASE + 100, 1, false)), hex(fake.headers.poll(5, TimeUnit.SECONDS)));
        // the fence: a one-byte READ of the WRITE's last byte, whose answer proves the WRITE was stored
        assertEquals(hex(header(1, BASE + 100 + 4095, 0, false)), hex(fake.headers.poll(5, TimeUnit.SECONDS)));
        assertEquals(crc(local.segment().asSlice(0, 4096)), crc(fake.memory, 100, 4096));

        completes(c, slice(Opcode.READ, local, 8192, peer, BASE + 100, 4096));
        assertEquals(hex(header(4096, BASE + 100, 0, false)), hex(fake.headers.poll(5, TimeUnit.SECONDS)));
        assertEquals(crc(local.segment().asSlice(0, 4096)), crc(local.segment().asSlice(8192, 4096)));
    }

    @Test
    void protoOneForcesV1EvenAgainstAV2Peer() throws Exception {
        fake = new FakeMooncakeTarget(64 * KIB);
        SegmentDescriptor peer = mooncakePeer(2);
        PeerConnection c = tent4j(Map.of("proto", "1", "v1_write_fence", "false")).connect(peer);
        LocalBuffer local = allocate(4 * KIB);
        completes(c, slice(Opcode.WRITE, local, 0, peer, BASE, 4096));
        assertEquals(hex(header(4096, BASE, 1, false)), hex(fake.headers.poll(5, TimeUnit.SECONDS)));
        completes(c, slice(Opcode.READ, local, 0, peer, BASE, 4096));
        assertEquals(hex(header(4096, BASE, 0, false)), hex(fake.headers.poll(5, TimeUnit.SECONDS)));
    }

    @Test
    void aV2TargetRejectsARangeOutsideOrAcrossItsBuffersAndTheLaneGoesOn() throws Exception {
        fake = new FakeMooncakeTarget(64 * KIB, 64 * KIB);
        SegmentDescriptor peer = mooncakePeer(2);
        PeerConnection c = tent4j(Map.of("lanes", "1")).connect(peer);
        LocalBuffer local = allocate(64 * KIB);
        fill(local.segment(), 3);
        long across = BASE + 64 * KIB - 100;
        TransferException spanning = fails(c, slice(Opcode.WRITE, local, 0, peer, across, 4096));
        assertEquals(ErrorCode.OUT_OF_BOUNDS, spanning.code(), spanning.getMessage());
        assertTrue(spanning.getMessage().contains("[0x" + Long.toHexString(across) + ", +4096)")
                && spanning.getMessage().contains("mooncake-node") && spanning.getMessage().contains("status 1"),
                spanning.getMessage());
        assertTrue(Arrays.equals(new byte[4096], Arrays.copyOfRange(fake.memory, (int) (across - BASE),
                (int) (across - BASE) + 4096)), "a rejected WRITE changed the target's memory");

        TransferException past = fails(c, slice(Opcode.READ, local, 0, peer, BASE + 128 * KIB - 10, 100));
        assertEquals(ErrorCode.OUT_OF_BOUNDS, past.code(), past.getMessage());

        // the target closed after each refusal; the lane connects again for the next slice
        completes(c, slice(Opcode.WRITE, local, 0, peer, BASE + 64 * KIB, 4096));
        assertEquals(crc(local.segment().asSlice(0, 4096)), crc(fake.memory, (int) (64 * KIB), 4096));
    }

    /**
     * In v2 framing a lane sends its next request before the last answer is back: a target that answers a WRITE only
     * after reading the next one answers both, and both land; with {@code pipeline=1} the lane waits, so the same
     * target answers nothing and the first WRITE times out.
     */
    @Test
    void aV2LanePipelinesItsRequestsAndPipelineOneWaitsForEachAnswer() throws Exception {
        fake = new FakeMooncakeTarget(64 * KIB);
        fake.misbehaviour = FakeMooncakeTarget.Misbehaviour.READ_AHEAD;
        SegmentDescriptor peer = mooncakePeer(2);
        PeerConnection c = tent4j(Map.of("lanes", "1")).connect(peer);
        LocalBuffer local = allocate(16 * KIB);
        fill(local.segment(), 5);
        TestSlice first = slice(Opcode.WRITE, local, 0, peer, BASE, 8 * KIB);
        TestSlice second = slice(Opcode.WRITE, local, 8 * KIB, peer, BASE + 8 * KIB, 8 * KIB);
        c.post(first);
        c.post(second);
        first.result().get(10, TimeUnit.SECONDS);
        second.result().get(10, TimeUnit.SECONDS);
        assertEquals(crc(local.segment().asSlice(0, 16 * KIB)), crc(fake.memory, 0, (int) (16 * KIB)));
        side.close();

        fake.close();
        fake = new FakeMooncakeTarget(64 * KIB);
        fake.misbehaviour = FakeMooncakeTarget.Misbehaviour.READ_AHEAD;
        peer = mooncakePeer(2);
        c = tent4j(Map.of("lanes", "1", "pipeline", "1")).connect(peer);
        local = allocate(16 * KIB);
        TestSlice waiting = slice(Opcode.WRITE, local, 0, peer.buffers().getFirst(), BASE, 8 * KIB,
                System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300));
        c.post(waiting);
        c.post(slice(Opcode.WRITE, local, 8 * KIB, peer, BASE + 8 * KIB, 8 * KIB));
        ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.result().get(10, TimeUnit.SECONDS));
        assertFailure((TransferException) e.getCause(), ErrorCode.TIMEOUT, "by the deadline");
    }

    /**
     * A Mooncake target refuses as soon as it has read the header, answers, and closes without reading the payload;
     * a large WRITE is then still going out, and must end with the refusal, not a reset connection.
     */
    @RepeatedTest(5)
    void aRefusalThatArrivesWhileALargeWriteIsGoingOutEndsItWithTheRefusal() throws Exception {
        fake = new FakeMooncakeTarget(64 * KIB);
        SegmentDescriptor peer = mooncakePeer(2);
        PeerConnection c = tent4j(Map.of("lanes", "1")).connect(peer);
        LocalBuffer local = allocate(32L << 20);
        assertFailure(fails(c, slice(Opcode.WRITE, local, 0, peer, BASE, 32L << 20)), ErrorCode.OUT_OF_BOUNDS,
                "status 1");
    }

    @Test
    void aV1TargetClosingOnARefusedRangeFailsTheSlice() throws Exception {
        fake = new FakeMooncakeTarget(64 * KIB);
        SegmentDescriptor peer = mooncakePeer(null);
        PeerConnection c = tent4j(Map.of("lanes", "1")).connect(peer);
        LocalBuffer local = allocate(8 * KIB);
        assertFailure(fails(c, slice(Opcode.WRITE, local, 0, peer, BASE + 64 * KIB - 10, 4096)), ErrorCode.PEER_FAILED,
                "v1 WRITE of 4096 bytes at 0x" + Long.toHexString(BASE + 64 * KIB - 10));
        assertFailure(fails(c, slice(Opcode.READ, local, 0, peer, BASE + 64 * KIB - 10, 4096)), ErrorCode.PEER_FAILED,
                "closed the connection after 0 of 4096 bytes");
    }

    @Test
    void aStatusWithoutTheMagicFailsTheSliceAsAProtocolError() throws Exception {
        PeerConnection c = misbehaving(FakeMooncakeTarget.Misbehaviour.STATUS_WITHOUT_MAGIC);
        LocalBuffer local = allocate(8 * KIB);
        for (Opcode op : Opcode.values()) {
            assertFailure(fails(c, slice(op, local, 0, mooncakePeer(2), BASE + 8, 4096)), ErrorCode.PROTOCOL,
                    "lacks the magic", "0x" + Long.toHexString(BASE + 8), "127.0.0.1:" + fake.port());
        }
    }

    @Test
    void aTargetClosingMidPayloadFailsTheReadNamingHowFarItGot() throws Exception {
        PeerConnection c = misbehaving(FakeMooncakeTarget.Misbehaviour.CLOSE_MID_PAYLOAD);
        LocalBuffer local = allocate(64 * KIB);
        assertFailure(fails(c, slice(Opcode.READ, local, 0, mooncakePeer(2), BASE, 64 * KIB)), ErrorCode.PEER_FAILED,
                "after 32768 of 65536 bytes");
    }

    @Test
    void aSilentTargetFailsTheSliceAtItsDeadline() throws Exception {
        PeerConnection c = misbehaving(FakeMooncakeTarget.Misbehaviour.SILENT);
        LocalBuffer local = allocate(4 * KIB);
        assertFailure(fails(c, slice(Opcode.READ, local, 0, mooncakePeer(2).buffers().getFirst(), BASE, 4096,
                System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300))), ErrorCode.TIMEOUT, "by the deadline");
        // the lane gave up its socket, so the target sees the connection end
        assertTrue(fake.closedConnections.await(5, TimeUnit.SECONDS));
    }

    /** The kernel's view of the established TCP sockets matching {@code filter} ({@code ss -tno}), waited for. */
    private static String ss(String filter, String expected) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (;;) {
            Process p;
            try {
                p = new ProcessBuilder("ss", "-tnoH", "state", "established", "( " + filter + " )").redirectErrorStream(true).start();
            } catch (java.io.IOException e) {
                org.junit.jupiter.api.Assumptions.abort("ss (iproute2) is not installed: " + e.getMessage());
                throw e;
            }
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor();
            if (out.contains(expected) || System.nanoTime() > deadline) {
                return out;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
        }
    }

    /**
     * Keep-alive reaches the sockets of both sides with the configured idle time: the kernel runs a keep-alive timer
     * of about 77 s (the default is 15 s, and without keep-alive there is no timer) on the lane's connection and on a
     * connection this engine's target accepted.
     */
    @Test
    void keepAliveTimersRunOnTheLanesAndOnAcceptedConnections() throws Exception {
        fake = new FakeMooncakeTarget(64 * KIB);
        tent4j(Map.of("lanes", "1", "keepalive_idle", "77s", "keepalive_interval", "3s", "keepalive_count", "4"))
                .connect(mooncakePeer(2));
        String lane = ss("dport = :" + fake.port(), "timer:(keepalive,1min1");
        assertTrue(lane.contains("timer:(keepalive,1min1"), "the lane's socket: " + lane);
        try (Socket s = mooncakeInitiator()) {
            String accepted = ss("sport = :" + port(), "timer:(keepalive,1min1");
            assertTrue(accepted.contains("timer:(keepalive,1min1"), "the accepted socket: " + accepted);
        }
    }

    @Test
    void keepAliveSettingsOutsideWhatTheKernelTakesAreRefusedByKey() {
        for (Map<String, String> bad : List.of(Map.of("keepalive_idle", "1500ms"), Map.of("keepalive_interval", "0s"),
                Map.of("keepalive_count", "0"))) {
            String key = bad.keySet().iterator().next();
            org.tent4j.api.ConfigException e = assertThrows(org.tent4j.api.ConfigException.class, () -> tent4j(bad));
            assertTrue(e.getMessage().contains("transports.mooncake-tcp." + key), e.getMessage());
        }
    }

    // ----------------------------------------------------------------------------- Mooncake initiates, tent4j serves

    private int port() {
        return side.attribute(MooncakeTcpTransport.ATTR_PORT);
    }

    private Socket mooncakeInitiator() throws Exception {
        Socket s = new Socket(InetAddress.getLoopbackAddress(), port());
        s.setTcpNoDelay(true);
        s.setSoTimeout(10_000);
        return s;
    }

    @Test
    void theTargetAnswersV2WithTheGoldenOkStatusOnAPersistentConnection() throws Exception {
        tent4j(Map.of());
        assertEquals(2, side.attribute(MooncakeTcpTransport.ATTR_PROTO_VERSION));
        LocalBuffer target = allocate(1L << 20);
        byte[] payload = new byte[4096];
        for (int i = 0; i < payload.length; i++) {
            payload[i] = (byte) (i * 13 + 5);
        }
        try (Socket s = mooncakeInitiator()) {
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            out.write(header(4096, target.address() + 64, 1, true));
            out.write(payload);
            assertEquals(GOLDEN_OK, hex(readAll(in, 8)));
            assertEquals(crc(payload, 0, 4096), crc(target.segment().asSlice(64, 4096)));

            out.write(header(4096, target.address() + 64, 0, true));
            assertEquals(GOLDEN_OK, hex(readAll(in, 8)));
            assertArrayEquals(payload, readAll(in, 4096));
        }
    }

    @Test
    void connectionsAreServedOnPlatformThreadsUpToALimitAndOnVirtualOnesBeyond() throws Exception {
        tent4j(Map.of());
        LocalBuffer target = allocate(4096);
        int n = MooncakeTarget.PLATFORM_SERVERS + 2;
        List<Socket> initiators = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                Socket s = mooncakeInitiator();
                initiators.add(s);
                // answered: the connection has its serving thread
                s.getOutputStream().write(header(8, target.address(), 0, true));
                assertEquals(GOLDEN_OK, hex(readAll(s.getInputStream(), 8)));
                readAll(s.getInputStream(), 8);
            }
            // virtual threads are not listed among all threads' stacks; platform ones are
            List<Thread> platform = servingPlatformThreads();
            assertEquals(MooncakeTarget.PLATFORM_SERVERS, platform.size(), "served on platform threads of " + n);

            // platform threads that end hand their places to the next connections
            for (Socket s : initiators) {
                s.close();
            }
            initiators.clear();
            for (Thread t : platform) {
                t.join(Duration.ofSeconds(10)); // its connection closed, so its read ends
                assertFalse(t.isAlive(), "a serving thread outlived its connection");
            }
            Socket next = mooncakeInitiator();
            initiators.add(next);
            next.getOutputStream().write(header(8, target.address(), 0, true));
            assertEquals(GOLDEN_OK, hex(readAll(next.getInputStream(), 8)));
            assertEquals(1, servingPlatformThreads().size(), "a new connection served on a platform thread again");
        } finally {
            for (Socket s : initiators) {
                s.close();
            }
        }
    }

    private static List<Thread> servingPlatformThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("mooncake-tcp-serve-") && t.isAlive()).toList();
    }

    @Test
    void theTargetServesV1WithoutStatusFrames() throws Exception {
        tent4j(Map.of());
        LocalBuffer target = allocate(64 * KIB);
        byte[] payload = new byte[10_000];
        Arrays.fill(payload, (byte) 0x3c);
        try (Socket s = mooncakeInitiator()) {
            s.getOutputStream().write(header(payload.length, target.address() + 1, 1, false));
            s.getOutputStream().write(payload);
            // no answer to a v1 WRITE: the READ behind it on the same connection is answered with the bytes alone
            s.getOutputStream().write(header(payload.length, target.address() + 1, 0, false));
            assertArrayEquals(payload, readAll(s.getInputStream(), payload.length));
            s.shutdownOutput();
            assertEquals(-1, s.getInputStream().read(), "a v1 exchange carries nothing but the payload");
        }
    }

    @Test
    void theTargetRejectsOutOfRangeAndSpanningRequestsAsMooncakeDoes() throws Exception {
        tent4j(Map.of());
        MemorySegment both = side.arena.allocate(128 * KIB, 64);
        LocalBuffer first = side.register(both.asSlice(0, 64 * KIB), Permission.READ_WRITE);
        side.register(both.asSlice(64 * KIB, 64 * KIB), Permission.READ_WRITE);
        long across = first.address() + 64 * KIB - 100;
        long[][] refused = {
                {4096, across, 1},                              // spans the two buffers
                {100, first.address() + 128 * KIB - 10, 0},     // runs past the second
                {16, first.address() - 4096, 0},                // before both
                {0, first.address(), 0},                        // size 0
                {-1L, first.address(), 1},                      // size 2^64 - 1 (overflows)
                {16, first.address(), 5},                       // no such opcode
        };
        for (long[] r : refused) {
            try (Socket s = mooncakeInitiator()) {
                s.getOutputStream().write(header(r[0], r[1], (int) r[2], true));
                assertEquals(REJECTED, hex(readAll(s.getInputStream(), 8)), () -> "v2 request " + Arrays.toString(r));
                assertEquals(-1, s.getInputStream().read(), "a v2 target closes after a rejection");
            }
            try (Socket s = mooncakeInitiator()) {
                s.getOutputStream().write(header(r[0], r[1], (int) r[2], false));
                assertEquals(-1, s.getInputStream().read(), () -> "a v1 target closes silently on "
                        + Arrays.toString(r));
            }
        }
        assertEquals(-1, both.mismatch(side.arena.allocate(128 * KIB)), "a refused request touched memory");
    }

    @Test
    void theTargetRefusesAWriteIntoAReadOnlyBufferWithStatusTwo() throws Exception {
        tent4j(Map.of());
        LocalBuffer target = side.allocate(4 * KIB, Permission.READ_ONLY);
        try (Socket s = mooncakeInitiator()) {
            s.getOutputStream().write(header(16, target.address(), 1, true));
            s.getOutputStream().write(new byte[16]);
            assertEquals(PERMISSION_DENIED, hex(readAll(s.getInputStream(), 8)));
        }
        try (Socket s = mooncakeInitiator()) {
            s.getOutputStream().write(header(16, target.address(), 0, true));
            assertEquals(GOLDEN_OK, hex(readAll(s.getInputStream(), 8)), "a READ of a READ_ONLY buffer is served");
        }
    }

    @Test
    void connectionsBeyondMaxConnectionsAreClosedAtOnce() throws Exception {
        tent4j(Map.of("max_connections", "1"));
        LocalBuffer target = allocate(4 * KIB);
        try (Socket first = mooncakeInitiator()) {
            first.getOutputStream().write(header(8, target.address(), 0, true));
            assertEquals(GOLDEN_OK, hex(readAll(first.getInputStream(), 8))); // served, and still open
            readAll(first.getInputStream(), 8);
            try (Socket second = mooncakeInitiator()) {
                assertEquals(-1, second.getInputStream().read(), "a second connection over max_connections=1");
            }
            first.getOutputStream().write(header(8, target.address(), 0, true));
            assertEquals(GOLDEN_OK, hex(readAll(first.getInputStream(), 8)), "the first one is still served");
        }
    }

    @Test
    void anInitiatorThatDiesMidPayloadReleasesTheBuffer() throws Exception {
        tent4j(Map.of());
        LocalBuffer target = allocate(1L << 20);
        try (Socket s = mooncakeInitiator()) {
            s.getOutputStream().write(header(1L << 20, target.address(), 1, true));
            s.getOutputStream().write(new byte[1000]);
        }
        // the target still serves others
        try (Socket s = mooncakeInitiator()) {
            s.getOutputStream().write(header(8, target.address(), 0, true));
            assertEquals(GOLDEN_OK, hex(readAll(s.getInputStream(), 8)));
            readAll(s.getInputStream(), 8);
        }
        side.unregister(target); // returns: nothing touches the buffer any more
        try (Socket s = mooncakeInitiator()) {
            s.getOutputStream().write(header(8, target.address(), 0, true));
            assertEquals(REJECTED, hex(readAll(s.getInputStream(), 8)), "an unregistered buffer is refused");
        }
    }

    @Test
    void unregisterClosesAConnectionStuckInTheBufferRatherThanWaitForever() throws Exception {
        tent4j(Map.of(), Duration.ofMillis(500)); // how long unregister lets a request in the buffer finish
        LocalBuffer target = allocate(1L << 20);
        try (Socket s = mooncakeInitiator()) {
            s.getOutputStream().write(header(1L << 20, target.address(), 1, true));
            s.getOutputStream().write(new byte[1000]); // and then nothing: the target waits for the rest
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!((MooncakeTcpTransport) side.transport).isPinned(target) && System.nanoTime() - until < 0) {
                Thread.onSpinWait(); // until the target has read the header and holds the buffer
            }
            assertTrue(((MooncakeTcpTransport) side.transport).isPinned(target), "the target never read the header");
            long start = System.nanoTime();
            side.unregister(target);
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(4), "unregister waited too long");
            assertEquals(-1, s.getInputStream().read(), "the stuck connection was closed");
        }
        assertNull(side.context.memory().find(target.address(), 1));
    }
}
