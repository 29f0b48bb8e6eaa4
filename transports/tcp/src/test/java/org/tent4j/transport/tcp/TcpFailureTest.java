package org.tent4j.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.transport.tcp.TcpFixture.awaitDone;
import static org.tent4j.transport.tcp.TcpFixture.awaitFailure;
import static org.tent4j.transport.tcp.TcpFixture.slice;
import static org.tent4j.transport.tcp.TcpFixture.sliceAt;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;
import org.tent4j.testkit.ManualClock;

/** What the initiator reports when the peer goes away, never answers, or cannot be reached. */
class TcpFailureTest {

    @Test
    void targetClosedMidFlightFailsSlicesWithPeerFailed() {
        try (TcpFixture f = new TcpFixture()) {
            int size = 64 << 20;
            TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate(size, 64));
            TestLocalMemory.Buffer remote = f.registerAtTarget(f.arena.allocate(size, 64), Permission.READ_WRITE);
            PeerConnection conn = f.connect(remote);
            TestSlice warmUp = slice(Opcode.WRITE, local, 0, remote, 0, 4096);
            conn.post(warmUp);
            awaitDone(warmUp);

            // 1 GiB of 64 MiB slices: the target cannot have answered them all by the time it closes
            List<TestSlice> slices = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                TestSlice s = slice(i % 2 == 0 ? Opcode.WRITE : Opcode.READ, local, 0, remote, 0, size);
                slices.add(s);
                conn.post(s);
            }
            f.b.close();
            int failed = 0;
            for (TestSlice s : slices) {
                if (TcpFixture.finishedWithFailure(s)) {
                    TransferException e = awaitFailure(s);
                    assertEquals(ErrorCode.PEER_FAILED, e.code(), e.getMessage());
                    assertTrue(e.getMessage().contains("segment 'b'"), e.getMessage());
                    failed++;
                } else {
                    awaitDone(s);
                }
            }
            assertTrue(failed > 0, "closing the target must fail what it had not answered");
            assertFalse(conn.isOpen());
            TestSlice late = slice(Opcode.READ, local, 0, remote, 0, 4096);
            conn.post(late);
            assertEquals(ErrorCode.PEER_FAILED, awaitFailure(late).code());
            conn.close();
            for (TestSlice s : slices) {
                assertEquals(1, s.completions(), "closing after the failure must not complete a slice again");
            }
        }
    }

    /**
     * A connection the listening socket accepted just before the transport closed is registered with an event loop
     * only as that loop shuts down, after it closed its channels: the transport must still close it, or the peer's
     * idle lane stays open and its next request is never answered (the race behind a hang of the test above).
     */
    @Test
    void connectionsAcceptedAsTheTargetClosesAreClosedToo() throws IOException {
        InetAddress loopback = InetAddress.getLoopbackAddress();
        for (int round = 0; round < 30; round++) {
            TcpTransport target = (TcpTransport) TcpFixture.PROVIDER.create(TcpFixture.context("t" + round, Map.of()));
            int port = Integer.parseInt(target.segmentAttributes().get("port"));
            List<Socket> peers = new ArrayList<>();
            try {
                for (int i = 0; i < 4; i++) {
                    peers.add(new Socket(loopback, port));
                }
                target.close();
                for (Socket peer : peers) {
                    peer.setSoTimeout((int) TimeUnit.SECONDS.toMillis(TcpFixture.AWAIT_SECONDS));
                    int read;
                    try {
                        read = peer.getInputStream().read();
                    } catch (java.net.SocketTimeoutException e) {
                        throw new AssertionError("round " + round + ": connection " + peer.getLocalPort() + " -> "
                                + port + " stayed open after the target's transport closed", e);
                    } catch (java.net.SocketException reset) {
                        read = -1;
                    }
                    assertEquals(-1, read, "round " + round + ": the closed target sent a byte");
                }
            } finally {
                target.close();
                closeAll(peers);
            }
        }
    }

    @Test
    void peerThatNeverAnswersTimesOutAndTheLaneCloses() throws IOException {
        // deadlines are judged in the engine's clock: only this clock moving past them can fail the slices in time
        ManualClock clock = new ManualClock(System.nanoTime());
        try (TcpFixture f = new TcpFixture(Map.of("lanes", "2"), clock);
             ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            List<Socket> accepted = acceptForever(silent);
            TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate(1 << 16, 64));
            TestLocalMemory.Buffer remote = f.registerAtTarget(f.arena.allocate(1 << 16, 64), Permission.READ_WRITE);
            SegmentDescriptor peer = TcpFixture.descriptor("b", TcpFixture.portOnly(silent.getLocalPort()), remote);
            PeerConnection conn = f.a.connect(peer);
            assertTrue(conn.isOpen());
            long soon = clock.nanoTime() + TimeUnit.HOURS.toNanos(1);
            long later = soon + TimeUnit.HOURS.toNanos(1);
            TestSlice read = sliceAt(Opcode.READ, local, 0, remote, remote.address(), 4096, soon);
            TestSlice write = sliceAt(Opcode.WRITE, local, 0, remote, remote.address(), 4096, soon);
            conn.post(read);
            conn.post(write);
            clock.advance(TimeUnit.HOURS.toNanos(1));
            TransferException e = awaitFailure(read);
            assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("segment 'b'"), e.getMessage());
            assertTrue(e.getMessage().contains("within its deadline"), e.getMessage());
            assertEquals(ErrorCode.TIMEOUT, awaitFailure(write).code());
            assertFalse(conn.isOpen(), "a lane whose answer is overdue is out of sync and must close");
            // a slice with a far deadline on the surviving lane is failed by close(), not left hanging
            TestSlice patient = sliceAt(Opcode.READ, local, 0, remote, remote.address(), 4096, later);
            conn.post(patient);
            conn.close();
            assertEquals(ErrorCode.PEER_FAILED, awaitFailure(patient).code());
            assertEquals(1, read.completions());
            assertEquals(1, write.completions());
            closeAll(accepted);
        }
    }

    @Test
    void deadlineIsReadInTheEnginesClockWhenPosted() {
        // the engine's clock runs an hour ahead of the system's, so the deadline has passed only in the engine's time
        ManualClock clock = new ManualClock(System.nanoTime() + TimeUnit.HOURS.toNanos(1));
        try (TcpFixture f = new TcpFixture(Map.of(), clock)) {
            TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate(4096, 64));
            TestLocalMemory.Buffer remote = f.registerAtTarget(f.arena.allocate(4096, 64), Permission.READ_WRITE);
            PeerConnection conn = f.connect(remote);
            long deadline = clock.nanoTime() - 1;
            assertTrue(deadline - System.nanoTime() > 0);
            TestSlice late = sliceAt(Opcode.WRITE, local, 0, remote, remote.address(), 4096, deadline);
            conn.post(late);
            TransferException e = awaitFailure(late);
            assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
            assertTrue(e.getMessage().endsWith("deadline passed before it was sent"), e.getMessage());
            TestSlice onTime = sliceAt(Opcode.WRITE, local, 0, remote, remote.address(), 4096,
                    clock.nanoTime() + TimeUnit.SECONDS.toNanos(60));
            conn.post(onTime);
            awaitDone(onTime);
        }
    }


    @Test
    void closeFailsEverythingInFlight() throws IOException {
        try (TcpFixture f = new TcpFixture();
             ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            List<Socket> accepted = acceptForever(silent);
            TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate(1 << 16, 64));
            TestLocalMemory.Buffer remote = f.registerAtTarget(f.arena.allocate(1 << 16, 64), Permission.READ_WRITE);
            PeerConnection conn = f.a.connect(TcpFixture.descriptor("b", TcpFixture.portOnly(silent.getLocalPort()),
                    remote));
            List<TestSlice> slices = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                TestSlice s = slice(i % 2 == 0 ? Opcode.READ : Opcode.WRITE, local, 0, remote, 0, 1000 + i);
                slices.add(s);
                conn.post(s);
            }
            conn.close();
            for (TestSlice s : slices) {
                TransferException e = awaitFailure(s);
                assertEquals(ErrorCode.PEER_FAILED, e.code(), e.getMessage());
            }
            assertFalse(conn.isOpen());
            TestSlice after = slice(Opcode.READ, local, 0, remote, 0, 10);
            conn.post(after);
            assertEquals(ErrorCode.PEER_FAILED, awaitFailure(after).code());
            closeAll(accepted);
        }
    }

    @Test
    void closingTheInitiatorTransportFailsItsSlices() throws IOException {
        try (TcpFixture f = new TcpFixture();
             ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            List<Socket> accepted = acceptForever(silent);
            TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate(1 << 16, 64));
            TestLocalMemory.Buffer remote = f.registerAtTarget(f.arena.allocate(1 << 16, 64), Permission.READ_WRITE);
            PeerConnection conn = f.a.connect(TcpFixture.descriptor("b", TcpFixture.portOnly(silent.getLocalPort()),
                    remote));
            TestSlice s = slice(Opcode.READ, local, 0, remote, 0, 100);
            conn.post(s);
            f.a.close();
            TransferException e = awaitFailure(s);
            assertEquals(ErrorCode.PEER_FAILED, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
            TestSlice late = slice(Opcode.READ, local, 0, remote, 0, 100);
            conn.post(late);
            assertEquals(ErrorCode.PEER_FAILED, awaitFailure(late).code());
            closeAll(accepted);
        }
    }

    @Test
    void unreachablePeerThrowsPeerUnreachableNamingTheEndpoint() throws IOException {
        int deadPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            deadPort = s.getLocalPort();
        }
        try (TcpFixture f = new TcpFixture()) {
            TestLocalMemory.Buffer remote = f.registerAtTarget(f.arena.allocate(4096, 64), Permission.READ_WRITE);
            SegmentDescriptor peer = TcpFixture.descriptor("b", TcpFixture.portOnly(deadPort), remote);
            TransferException e = assertThrows(TransferException.class, () -> f.a.connect(peer));
            assertEquals(ErrorCode.PEER_UNREACHABLE, e.code());
            assertTrue(e.getMessage().contains("segment 'b'"), e.getMessage());
            assertTrue(e.getMessage().contains("127.0.0.1:" + deadPort), e.getMessage());
            assertTrue(e.getMessage().toLowerCase().contains("refused"), e.getMessage());

            SegmentDescriptor noPort = TcpFixture.descriptor("b", Map.of(), remote);
            TransferException missing = assertThrows(TransferException.class, () -> f.a.connect(noPort));
            assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, missing.code(), missing.getMessage());
        }
    }

    /** Accepts connections on a daemon thread and never reads or answers. */
    private static List<Socket> acceptForever(ServerSocket server) {
        List<Socket> sockets = java.util.Collections.synchronizedList(new ArrayList<>());
        Thread.ofPlatform().daemon().start(() -> {
            while (!server.isClosed()) {
                try {
                    sockets.add(server.accept());
                } catch (IOException e) {
                    return;
                }
            }
        });
        return sockets;
    }

    private static void closeAll(List<Socket> sockets) throws IOException {
        synchronized (sockets) {
            for (Socket s : sockets) {
                s.close();
            }
        }
    }
}
