package org.tent4j.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.transport.tcp.TcpFixture.awaitDone;
import static org.tent4j.transport.tcp.TcpFixture.crc;
import static org.tent4j.transport.tcp.TcpFixture.fillRandom;
import static org.tent4j.transport.tcp.TcpFixture.finishedWithFailure;
import static org.tent4j.transport.tcp.TcpFixture.slice;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SecuritySettings;
import org.tent4j.spi.TokenHandshake;
import org.tent4j.testkit.Poll;
import org.tent4j.testkit.tls.TestKeys;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;
import org.tent4j.testkit.transport.TestTransportContext;

/**
 * With {@code security.token} set, a peer without the token can neither read nor write, and one with it sees no
 * change; with TLS, transfers run encrypted and plain or untrusted peers are refused.
 */
class TcpSecurityTest {
    private static final byte[] TOKEN = "correct horse battery staple".getBytes();
    private static final int SIZE = 1 << 20;

    @TempDir
    static Path keysDir;
    private static TestKeys cluster;
    private static TestKeys stranger;

    private TcpFixture f;
    private TestLocalMemory.Buffer remote;
    private TestLocalMemory.Buffer local;
    private MemorySegment victim;
    private long victimCrc;

    @BeforeAll
    static void keys() throws Exception {
        var keys = TestKeys.generate(keysDir, "cluster", "stranger");
        cluster = keys.get(0);
        stranger = keys.get(1);
    }

    static SecuritySettings token(byte[] t) {
        return SecuritySettings.builder().token(t).build();
    }

    static SecuritySettings tls(TestKeys k, byte[] t) {
        return SecuritySettings.builder().token(t).tlsCertificate(k.certificate()).tlsPrivateKey(k.privateKey())
                .build();
    }

    private void start(SecuritySettings a, SecuritySettings b) {
        start(a, b, Map.of());
    }

    private void start(SecuritySettings a, SecuritySettings b, Map<String, String> optionsB) {
        f = new TcpFixture(Map.of(), optionsB, Duration.ofSeconds(10), a, b);
        remote = f.registerAtTarget(f.arena.allocate(2 * SIZE, 64), Permission.READ_WRITE);
        local = f.registerAtInitiator(f.arena.allocate(2 * SIZE, 64));
        victim = remote.segment().asSlice(SIZE, SIZE); // honest transfers use the first half only
        fillRandom(victim, 77);
        victimCrc = crc(victim);
    }

    @AfterEach
    void tearDown() {
        if (f != null) {
            try {
                assertEquals(victimCrc, crc(victim), "no refused peer may have written the target's memory");
            } finally {
                f.close();
            }
        }
    }

    /** 1 MiB written and read back through {@code c}, compared by CRC. */
    private void assertRoundTrip(PeerConnection c, long seed) {
        MemorySegment src = local.segment().asSlice(0, SIZE);
        fillRandom(src, seed);
        TestSlice w = slice(Opcode.WRITE, local, 0, remote, 0, SIZE);
        c.post(w);
        awaitDone(w);
        TestSlice r = slice(Opcode.READ, local, SIZE, remote, 0, SIZE);
        c.post(r);
        awaitDone(r);
        assertEquals(crc(src), crc(local.segment().asSlice(SIZE, SIZE)));
    }

    private TcpTransport transport(String name, SecuritySettings security, TestTransportContext[] keep) {
        keep[0] = TcpFixture.context(name, Map.of());
        return (TcpTransport) TcpFixture.PROVIDER.create(new SecuredContext(keep[0], security));
    }

    @Test
    void connectionsThatNeverAuthenticateCannotLockOutATokenHolder() throws Exception {
        start(token(TOKEN), token(TOKEN), Map.of("max_connections", "4"));
        List<java.net.Socket> silent = new ArrayList<>();
        try {
            // five times the limit, each connected and silent: no handshake, no request
            for (int i = 0; i < 20; i++) {
                silent.add(new java.net.Socket("127.0.0.1", f.b.port()));
            }
            // the target registers each accepted connection on its own event loop, so under load a silent one can be
            // registered after the token holder's lane and evict it as the oldest: the flood is what came first, so
            // the honest peer connects once the target has taken in all of it (16 evicted, 4 holding the slots)
            Poll.until("the target took in the 20 silent connections", Duration.ofSeconds(10), Duration.ofMillis(10),
                    () -> f.b.refusedConnections() >= 16);
            try (PeerConnection good = f.connect(remote)) {
                assertRoundTrip(good, 5);
            }
        } finally {
            for (java.net.Socket x : silent) {
                x.close();
            }
        }
    }

    @Test
    void withATokenAPeerWithoutItCanNeitherReadNorWriteAndOneWithItSeesNoChange() throws Exception {
        start(token(TOKEN), token(TOKEN));
        try (PeerConnection good = f.connect(remote)) {
            assertRoundTrip(good, 1);
        }
        long victimAddress = remote.address() + SIZE;
        // a raw client speaking the data protocol without the handshake: it gets the target's hello, then EOF
        try (RawClient c = new RawClient(f.b.port())) {
            c.request(1, 1, victimAddress, 4096);
            assertArrayEquals("T4JA".getBytes(), Arrays.copyOf(c.bytes(TokenHandshake.HELLO_BYTES), 4));
            assertEquals(0, c.drainToEnd(), "nothing but the hello before the connection is closed");
        }
        try (RawClient c = new RawClient(f.b.port())) {
            byte[] payload = new byte[4096];
            Arrays.fill(payload, (byte) 0x66);
            c.request(2, 2, victimAddress, payload.length);
            c.send(payload);
            c.drainToEnd();
        }
        // an engine without the token: its connection opens, but every slice fails and nothing lands
        TestTransportContext[] ctx = new TestTransportContext[1];
        try (TcpTransport plain = transport("c", SecuritySettings.NONE, ctx)) {
            PeerConnection c = plain.connect(f.targetDescriptor(remote));
            TestSlice w = slice(Opcode.WRITE, local, 0, remote, SIZE, 4096);
            c.post(w);
            assertTrue(finishedWithFailure(w));
            TestSlice r = slice(Opcode.READ, local, 0, remote, SIZE, 4096);
            c.post(r);
            assertTrue(finishedWithFailure(r));
            c.close();
        } finally {
            ctx[0].close();
        }
        // an engine with another token cannot even connect
        try (TcpTransport wrong = transport("d", token("not the token".getBytes()), ctx)) {
            TransferException e = assertThrows(TransferException.class, () -> wrong.connect(f.targetDescriptor(remote)));
            assertEquals(ErrorCode.PERMISSION_DENIED, e.code());
            assertTrue(e.getMessage().contains("token handshake failed"), e.getMessage());
        } finally {
            ctx[0].close();
        }
        // the documented handshake, spoken by hand with the token, is served
        try (RawClient c = new RawClient(f.b.port())) {
            TokenHandshake h = token(TOKEN).handshake(true);
            c.send(h.hello());
            c.send(h.proof(c.bytes(TokenHandshake.HELLO_BYTES)));
            assertTrue(h.verify(c.bytes(TokenHandshake.PROOF_BYTES)));
            c.request(1, 9, victimAddress, 16);
            assertEquals(new RawClient.Response(RawClient.RESPONSE_MAGIC, 0, 9), c.response());
            assertArrayEquals(victim.asSlice(0, 16).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE), c.bytes(16));
        }
        assertTrue(f.b.authFailures() >= 3, "failed handshakes are counted: " + f.b.authFailures());
        try (PeerConnection good = f.connect(remote)) {
            assertRoundTrip(good, 2);
        }
    }

    @Test
    void tlsCarriesTransfersAndRefusesPlainAndUntrustedPeers() throws Exception {
        start(tls(cluster, null), tls(cluster, null));
        try (PeerConnection good = f.connect(remote)) {
            assertRoundTrip(good, 3);
        }
        try (RawClient c = new RawClient(f.b.port())) {
            c.request(1, 1, remote.address() + SIZE, 4096);
            byte[] got = new byte[0];
            try {
                got = c.bytes(16);
            } catch (IOException closed) {
                // closed without a word is fine too
            }
            assertTrue(got.length == 0 || got[0] != 'T', "a plain request must not be answered in plain");
            c.drainToEnd();
        }
        TestTransportContext[] ctx = new TestTransportContext[1];
        try (TcpTransport untrusted = transport("e", tls(stranger, null), ctx)) {
            TransferException e = assertThrows(TransferException.class,
                    () -> untrusted.connect(f.targetDescriptor(remote)));
            assertEquals(ErrorCode.PERMISSION_DENIED, e.code());
            assertTrue(e.getMessage().contains("TLS"), e.getMessage());
        } finally {
            ctx[0].close();
        }
    }

    @Test
    void tlsAndTokenTogether() {
        start(tls(cluster, TOKEN), tls(cluster, TOKEN));
        try (PeerConnection good = f.connect(remote)) {
            assertRoundTrip(good, 4);
            assertRoundTrip(good, 5);
        }
    }
}
