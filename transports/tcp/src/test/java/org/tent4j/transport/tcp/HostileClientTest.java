package org.tent4j.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.transport.tcp.TcpFixture.awaitDone;
import static org.tent4j.transport.tcp.TcpFixture.crc;
import static org.tent4j.transport.tcp.TcpFixture.fillRandom;
import static org.tent4j.transport.tcp.TcpFixture.slice;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Arrays;
import java.util.SplittableRandom;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.PeerConnection;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;

/**
 * Raw-socket clients that break the rules. The target must answer or drop only the offending connection, never write
 * outside registered memory, and keep serving well-behaved peers before and after.
 */
class HostileClientTest {
    private static final int READ = 1;
    private static final int WRITE = 2;
    private static final int STATUS_ADDRESS_NOT_REGISTERED = 2;
    private static final int STATUS_OUT_OF_BOUNDS = 3;
    private static final int STATUS_PROTOCOL = 5;
    private static final int SIZE = 1 << 20;

    private TcpFixture f;
    private TcpFixture.Guarded victim;
    private TestLocalMemory.Buffer victimBuffer;
    private long victimCrc;
    private TestLocalMemory.Buffer scratch;
    private TestLocalMemory.Buffer local;
    private PeerConnection good;

    @BeforeEach
    void setUp() {
        f = new TcpFixture();
        victim = new TcpFixture.Guarded(f.arena, SIZE, 64 << 10);
        victimBuffer = f.registerAtTarget(victim.middle, Permission.READ_WRITE);
        victimCrc = crc(victim.middle);
        scratch = f.registerAtTarget(f.arena.allocate(SIZE, 64), Permission.READ_WRITE);
        local = f.registerAtInitiator(f.arena.allocate(SIZE, 64));
        good = f.connect(victimBuffer, scratch);
        assertGoodClientWorks(1);
    }

    @AfterEach
    void tearDown() {
        try {
            assertGoodClientWorks(2);
            victim.assertGuardsIntact();
            // the last answer's view is released when the write that sent it returns, which may be after the client
            // read its bytes: wait for that release, then insist that nothing holds the buffer
            assertEquals(0, f.b.awaitPinsReleased(victimBuffer, Duration.ofSeconds(10)),
                    "no access may still hold the victim buffer");
        } finally {
            good.close();
            f.close();
        }
    }

    /** A well-behaved transport peer writes and reads back through the same target. */
    private void assertGoodClientWorks(long seed) {
        MemorySegment src = local.segment().asSlice(0, 100_000);
        fillRandom(src, seed);
        TestSlice w = slice(Opcode.WRITE, local, 0, scratch, 7, 100_000);
        good.post(w);
        awaitDone(w);
        TestSlice r = slice(Opcode.READ, local, 200_000, scratch, 7, 100_000);
        good.post(r);
        awaitDone(r);
        assertEquals(-1, src.mismatch(local.segment().asSlice(200_000, 100_000)));
        assertTrue(good.isOpen(), "the well-behaved connection survives whatever the hostile one did");
    }

    @Test
    void rawClientFollowingTheDocumentedProtocolIsServedWithPipelining() throws IOException {
        try (RawClient c = new RawClient(f.b.port())) {
            byte[] payload = new byte[5000];
            new SplittableRandom(9).nextBytes(payload);
            long addr = victimBuffer.address() + 123;
            // WRITE, then two READs, sent back to back before reading any answer
            c.send(concat(RawClient.header(RawClient.MAGIC, 1, WRITE, 0, 41, addr, payload.length), payload,
                    RawClient.header(RawClient.MAGIC, 1, READ, 0, 42, addr, payload.length),
                    RawClient.header(RawClient.MAGIC, 1, READ, 0, 43, addr + 1000, 10)));
            assertEquals(new RawClient.Response(RawClient.RESPONSE_MAGIC, 0, 41), c.response());
            assertEquals(new RawClient.Response(RawClient.RESPONSE_MAGIC, 0, 42), c.response());
            assertArrayEquals(payload, c.bytes(payload.length));
            assertEquals(new RawClient.Response(RawClient.RESPONSE_MAGIC, 0, 43), c.response());
            assertArrayEquals(Arrays.copyOfRange(payload, 1000, 1010), c.bytes(10));
        }
        // put the victim back the way the guards expect
        victimCrc = crc(victim.middle);
    }

    @Test
    void writesOutsideRegistrationsAreAnsweredAndTheirPayloadIsDropped() throws IOException {
        byte[] payload = new byte[4096];
        Arrays.fill(payload, (byte) 0x5A);
        try (RawClient c = new RawClient(f.b.port())) {
            // just before the registered middle (in the guard), then starting inside and running past its end
            c.send(concat(RawClient.header(RawClient.MAGIC, 1, WRITE, 0, 1, victim.beforeAddress(), 4096), payload));
            c.send(concat(RawClient.header(RawClient.MAGIC, 1, WRITE, 0, 2,
                    victimBuffer.address() + SIZE - 100, 4096), payload));
            // an address far from anything
            c.send(concat(RawClient.header(RawClient.MAGIC, 1, WRITE, 0, 3, 0x10, 4096), payload));
            RawClient.Response r1 = c.response();
            assertEquals(STATUS_ADDRESS_NOT_REGISTERED, r1.status());
            assertEquals(1, r1.id());
            String m1 = c.errorMessage();
            assertTrue(m1.contains("segment 'b'") && m1.contains(Long.toHexString(victim.beforeAddress())), m1);
            RawClient.Response r2 = c.response();
            assertEquals(STATUS_OUT_OF_BOUNDS, r2.status());
            assertTrue(c.errorMessage().contains("runs past the end"));
            assertEquals(STATUS_ADDRESS_NOT_REGISTERED, c.response().status());
            c.errorMessage();
            // the dropped payloads were not taken for headers: the stream is still in sync
            c.request(READ, 4, victimBuffer.address(), 16);
            assertEquals(new RawClient.Response(RawClient.RESPONSE_MAGIC, 0, 4), c.response());
            c.bytes(16);
        }
        assertEquals(victimCrc, crc(victim.middle), "a rejected WRITE must not land anywhere");
    }

    @Test
    void addressPlusLengthOverflowClosesThatConnection() throws IOException {
        try (RawClient c = new RawClient(f.b.port())) {
            c.request(WRITE, 7, 0xFFFF_FFFF_FFFF_F000L, 0x2000);
            RawClient.Response r = c.response();
            assertEquals(STATUS_PROTOCOL, r.status());
            assertEquals(7, r.id());
            assertTrue(c.errorMessage().contains("overflows"));
            assertTrue(c.closedByServer());
        }
        try (RawClient c = new RawClient(f.b.port())) {
            c.request(READ, 8, victimBuffer.address(), Long.MAX_VALUE);
            assertEquals(STATUS_PROTOCOL, c.response().status());
            assertTrue(c.errorMessage().contains("max_frame"));
            assertTrue(c.closedByServer());
        }
        try (RawClient c = new RawClient(f.b.port())) {
            c.request(READ, 9, victimBuffer.address(), -1L); // u64 2^64-1
            assertEquals(STATUS_PROTOCOL, c.response().status());
            c.errorMessage();
            assertTrue(c.closedByServer());
        }
    }

    @Test
    void garbageBytesCloseThatConnection() throws IOException {
        byte[] garbage = new byte[4096];
        new SplittableRandom(3).nextBytes(garbage);
        try (RawClient c = new RawClient(f.b.port())) {
            c.send(garbage);
            RawClient.Response r = c.response();
            assertEquals(RawClient.RESPONSE_MAGIC, r.magic());
            assertEquals(STATUS_PROTOCOL, r.status());
            assertTrue(c.errorMessage().contains("bad magic"));
            assertTrue(c.closedByServer());
        }
        try (RawClient c = new RawClient(f.b.port())) {
            c.send("GET / HTTP/1.1\r\nHost: b\r\n\r\n".getBytes());
            assertEquals(STATUS_PROTOCOL, c.response().status());
            c.errorMessage();
            assertTrue(c.closedByServer());
        }
    }

    @ParameterizedTest(name = "version {0}, opcode {1}, flags {2}, length {3}")
    @CsvSource({"2, 1, 0, 16", "1, 0, 0, 16", "1, 3, 0, 16", "1, 255, 0, 16", "1, 1, 1, 16", "1, 2, 0, 0",
            "1, 1, 0, 67108865"})
    void malformedHeadersCloseThatConnection(int version, int op, int flags, long length) throws IOException {
        try (RawClient c = new RawClient(f.b.port())) {
            c.send(RawClient.header(RawClient.MAGIC, version, op, flags, 77, victimBuffer.address(), length));
            RawClient.Response r = c.response();
            assertEquals(STATUS_PROTOCOL, r.status());
            assertEquals(77, r.id());
            String m = c.errorMessage();
            assertTrue(m.contains("protocol violation"), m);
            assertTrue(c.closedByServer());
        }
    }

    @Test
    void connectionDroppedInTheMiddleOfAWritePayload() throws IOException {
        MemorySegment before = f.arena.allocate(SIZE);
        before.copyFrom(victim.middle);
        byte[] part = new byte[300 << 10];
        Arrays.fill(part, (byte) 0x3C);
        try (RawClient c = new RawClient(f.b.port())) {
            c.request(WRITE, 1, victimBuffer.address(), SIZE);
            c.send(part);
            c.abort(); // RST
        }
        try (RawClient c = new RawClient(f.b.port())) {
            c.request(WRITE, 2, victimBuffer.address() + (500 << 10), 1000);
            c.send(Arrays.copyOf(part, 10));
        } // FIN after 10 of 1000 bytes
        awaitNoPins();
        // what arrived may have landed, but only where the dropped WRITEs pointed
        for (long i = 0; i < SIZE; i++) {
            byte now = victim.middle.get(ValueLayout.JAVA_BYTE, i);
            byte was = before.get(ValueLayout.JAVA_BYTE, i);
            boolean targeted = i < part.length || (i >= (500 << 10) && i < (500 << 10) + 10);
            if (now != was && !(targeted && now == 0x3C)) {
                throw new AssertionError("byte +" + i + " changed from " + was + " to " + now);
            }
        }
        victimCrc = crc(victim.middle);
    }

    private void awaitNoPins() {
        assertEquals(0, f.b.awaitPinsReleased(victimBuffer, Duration.ofSeconds(10)),
                "a dropped connection must give back the memory it was writing");
    }

    private static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        byte[] all = new byte[n];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, all, at, p.length);
            at += p.length;
        }
        return all;
    }
}
