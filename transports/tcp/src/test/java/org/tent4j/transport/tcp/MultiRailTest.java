package org.tent4j.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.transport.tcp.TcpFixture.awaitDone;
import static org.tent4j.transport.tcp.TcpFixture.crc;
import static org.tent4j.transport.tcp.TcpFixture.fillRandom;
import static org.tent4j.transport.tcp.TcpFixture.slice;

import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.testkit.Poll;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;

/**
 * Multi-rail tcp on loopback: descriptors with and without published addresses work both ways, and a rail that does
 * not connect is left out, skipped by reconnects while it is known unreachable, and re-tried in the background until it
 * answers, then joins the open connection as new paths (the bed's MultiRailAcrossHostsTest moves bytes over two real
 * links).
 */
class MultiRailTest {
    static final int SIZE = 1 << 20;

    /** {@code f}'s target as a peer of {@code machineId} publishing {@code tcp}. */
    static SegmentDescriptor target(TcpFixture f, String machineId, Map<String, String> tcp, TestLocalMemory.Buffer buf) {
        List<BufferDescriptor> d = List.of(buf.describe("tcp", Map.of()));
        return SegmentDescriptor.builder().name("b").machineId(machineId).host("127.0.0.1").controlPort(0)
                .transports(List.of("tcp")).transportAttributes(Map.of("tcp", tcp)).buffers(d).version(1).build();
    }

    static void writeIntact(TcpFixture f, PeerConnection c, TestLocalMemory.Buffer src, TestLocalMemory.Buffer dst,
                            MemorySegment dstMemory, long seed) {
        fillRandom(src.segment(), seed);
        TestSlice s = slice(Opcode.WRITE, src, 0, dst, 0, SIZE);
        c.post(s);
        awaitDone(s);
        assertEquals(crc(src.segment()), crc(dstMemory));
    }

    @Test
    void engineWithSeveralInterfacesAndPeerWithOneEndpointReachEachOther() {
        // "*" adds every up non-loopback interface of this machine (none on a bare one: then it is one address, too)
        try (TcpFixture f = new TcpFixture(Map.of("interfaces", "*"), Map.of("interfaces", "*"))) {
            MemorySegment remote = f.arena.allocate(SIZE);
            TestLocalMemory.Buffer dst = f.registerAtTarget(remote, Permission.READ_WRITE);
            TestLocalMemory.Buffer src = f.registerAtInitiator(f.arena.allocate(SIZE));
            // a peer that publishes one endpoint (its port, as before multi-rail): reached at its host
            Map<String, String> old = new HashMap<>(f.b.segmentAttributes());
            old.remove(RailAddresses.ATTR_ADDRESSES);
            PeerConnection toOld = f.a.connect(target(f, "machine-b", old, dst));
            try {
                assertEquals(2, toOld.pathCount(), "one rail, two lanes");
                assertEquals("lane-1", toOld.pathName(1));
                writeIntact(f, toOld, src, dst, remote, 1);
            } finally {
                toOld.close();
            }
            // an initiator that reads only host and port (older than multi-rail) reaches a multi-rail target there
            try (TcpFixture plain = new TcpFixture()) {
                TestLocalMemory.Buffer src2 = plain.registerAtInitiator(plain.arena.allocate(SIZE));
                PeerConnection fromOld = plain.a.connect(target(f, "machine-b", old, dst));
                try {
                    writeIntact(plain, fromOld, src2, dst, remote, 2);
                } finally {
                    fromOld.close();
                }
            }
        }
    }

    @Test
    void aRailThatDoesNotConnectIsLeftOutSkippedWhileKnownUnreachableAndReTriedUntilItAnswers() throws Exception {
        try (TcpFixture f = new TcpFixture(Map.of("rail_recheck", "2s"), Map.of())) {
            MemorySegment remote = f.arena.allocate(SIZE);
            TestLocalMemory.Buffer dst = f.registerAtTarget(remote, Permission.READ_WRITE);
            TestLocalMemory.Buffer src = f.registerAtInitiator(f.arena.allocate(SIZE));
            Map<String, String> tcp = new HashMap<>(f.b.segmentAttributes());
            // 127.0.0.2 is loopback too, but nothing listens there at the target's port: refused at once
            tcp.put(RailAddresses.ATTR_ADDRESSES, "127.0.0.1,127.0.0.2");
            SegmentDescriptor d = target(f, "machine-a", tcp, dst); // same machine: loopback addresses count
            PeerConnection first = f.a.connect(d);
            PeerConnection again = null;
            PeerConnection reopened = null;
            try (ServerSocket second = new ServerSocket(f.b.port(), 50, InetAddress.getByName("127.0.0.2"))) {
                assertEquals(2, first.pathCount(), "the refused rail is left out");
                assertEquals(List.of("127.0.0.1/lane-0", "127.0.0.1/lane-1"),
                        List.of(first.pathName(0), first.pathName(1)));
                writeIntact(f, first, src, dst, remote, 3);
                // it listens now, but it failed a moment ago: a reconnect within rail_recheck does not wait for it
                again = f.a.connect(d);
                assertEquals(2, again.pathCount());
                // the background re-try finds it answering: the connection asks to be reopened
                Poll.until("a rail that answers again reopens the connection", Duration.ofSeconds(10), Duration.ofMillis(20),
                        () -> !first.isOpen());
                reopened = f.a.connect(d);
                assertEquals(4, reopened.pathCount(), "both rails, two lanes each");
                assertEquals("127.0.0.2/lane-1", reopened.pathName(3));
            } finally {
                first.close();
                if (again != null) {
                    again.close();
                }
                if (reopened != null) {
                    reopened.close();
                }
            }
        }
    }

    @Test
    void aRailThatAnswersAgainJoinsTheOpenConnectionWithoutReconnectingItsLanes() throws Exception {
        try (TcpFixture f = new TcpFixture(Map.of("rail_recheck", "200ms"), Map.of())) {
            MemorySegment remote = f.arena.allocate(SIZE);
            TestLocalMemory.Buffer dst = f.registerAtTarget(remote, Permission.READ_WRITE);
            TestLocalMemory.Buffer src = f.registerAtInitiator(f.arena.allocate(SIZE));
            Map<String, String> tcp = new HashMap<>(f.b.segmentAttributes());
            tcp.put(RailAddresses.ATTR_ADDRESSES, "127.0.0.1,127.0.0.2");
            PeerConnection c = f.a.connect(target(f, "machine-a", tcp, dst));
            CountDownLatch added = new CountDownLatch(1);
            c.onPathsAdded(added::countDown);
            try {
                assertEquals(2, c.pathCount(), "the refused rail is left out");
                TcpPeerConnection tc = (TcpPeerConnection) c;
                InitiatorLane first = tc.lane(0);
                InitiatorLane second = tc.lane(1);
                long connects = f.a.laneConnects();
                try (LoopbackRelay relay = new LoopbackRelay(InetAddress.getByName("127.0.0.2"), f.b.port())) {
                    assertTrue(added.await(10, TimeUnit.SECONDS), "the rail that answers again was not added");
                    assertEquals(4, c.pathCount(), "both rails, two lanes each");
                    assertEquals(List.of("127.0.0.1/lane-0", "127.0.0.1/lane-1", "127.0.0.2/lane-0", "127.0.0.2/lane-1"),
                            List.of(c.pathName(0), c.pathName(1), c.pathName(2), c.pathName(3)));
                    assertTrue(c.isOpen(), "adding a rail must not break the connection");
                    assertEquals(connects + 2, f.a.laneConnects(), "only the added rail's two lanes connected");
                    assertSame(first, tc.lane(0), "the old rail's lanes go on");
                    assertSame(second, tc.lane(1), "the old rail's lanes go on");
                    // every path carries intact bytes; the new rail's go through the relay
                    for (int path = 0; path < 4; path++) {
                        long relayed = relay.forwarded.get();
                        fillRandom(src.segment(), 10 + path);
                        TestSlice s = slice(Opcode.WRITE, src, 0, dst, 0, SIZE).onPath(path);
                        c.post(s);
                        awaitDone(s);
                        assertEquals(crc(src.segment()), crc(remote), "bytes over path " + c.pathName(path));
                        assertEquals(path >= 2, relay.forwarded.get() - relayed >= SIZE, "path " + c.pathName(path)
                                + " went over its own rail");
                    }
                    assertTrue(first.alive() && second.alive() && c.isOpen());
                }
            } finally {
                c.close();
            }
        }
    }

    @Test
    void descriptorOfAOneAddressEngineIsUnchanged() {
        try (TcpFixture f = new TcpFixture()) {
            assertEquals(java.util.Set.of("port", "max_frame"), f.a.segmentAttributes().keySet());
            assertNull(f.a.segmentAttributes().get(RailAddresses.ATTR_ADDRESSES));
            assertTrue(f.a.port() > 0);
        }
    }
}
