package org.tent4j.runtime.control;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Notification;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.spi.TokenHandshake;
import org.tent4j.testkit.tls.TestKeys;

/**
 * With {@code security.token} set, a peer without it cannot fetch a descriptor or publish a notification, and one
 * with it sees no change; with TLS, plain and untrusted peers are refused.
 */
class ControlPlaneSecurityTest {
    private static final String TOKEN = "correct horse battery staple";

    @TempDir
    static Path dir;
    private static TestKeys cluster;
    private static TestKeys stranger;

    private final ExecutorService workers = Executors.newFixedThreadPool(4);
    private final List<AutoCloseable> open = new ArrayList<>();

    @BeforeAll
    static void keys() throws Exception {
        var keys = TestKeys.generate(dir, "cluster", "stranger");
        cluster = keys.get(0);
        stranger = keys.get(1);
    }

    @AfterEach
    void tearDown() throws Exception {
        for (AutoCloseable c : open.reversed()) {
            c.close();
        }
        workers.shutdownNow();
    }

    private ControlPlaneNode node(String name, Map<String, String> core, AtomicInteger served) {
        ControlPlaneNode n = new ControlPlaneNode("127.0.0.1", 0, workers, ControlPlaneTrustTest.settings(core));
        open.add(n);
        n.localSegment(name);
        n.serve("echo", (caller, req) -> {
            served.incrementAndGet();
            return req;
        });
        return n;
    }

    private static byte[] call(ControlPlaneNode from, ControlPlaneNode to, String text) {
        return from.call("127.0.0.1", to.port(), "echo", text.getBytes(), Duration.ofSeconds(10));
    }

    @Test
    void withATokenOnlyPeersHoldingItAreServed() throws Exception {
        AtomicInteger served = new AtomicInteger();
        Map<String, String> withToken = Map.of("security.token", TOKEN);
        ControlPlaneNode a = node("a", withToken, served);
        ControlPlaneNode b = node("b", withToken, new AtomicInteger());
        assertArrayEquals("hi".getBytes(), call(b, a, "hi"));
        assertEquals(1, served.get());

        ControlPlaneNode plain = node("plain", Map.of(), new AtomicInteger());
        TransferException e = assertThrows(TransferException.class, () -> call(plain, a, "let me in"));
        assertEquals(ErrorCode.PEER_FAILED, e.code(), e.getMessage());

        ControlPlaneNode wrong = node("wrong", Map.of("security.token", "guess"), new AtomicInteger());
        e = assertThrows(TransferException.class, () -> call(wrong, a, "let me in"));
        assertEquals(ErrorCode.PERMISSION_DENIED, e.code(), e.getMessage());

        try (RawControlClient raw = new RawControlClient(a.port())) {
            raw.send(RawControlClient.REQUEST, 1, "echo", "b", "i am b".getBytes());
            byte[] hello = raw.socket.getInputStream().readNBytes(TokenHandshake.HELLO_BYTES);
            assertArrayEquals("T4JA".getBytes(), Arrays.copyOf(hello, 4));
            assertTrue(raw.closedByPeer());
        }
        assertEquals(1, served.get(), "no request of a peer without the token reached a handler");
        assertTrue(a.authFailures() >= 3, "failed handshakes are counted: " + a.authFailures());
        assertArrayEquals("again".getBytes(), call(b, a, "again"));
    }

    @Test
    void tlsRefusesPlainAndUntrustedPeers() throws Exception {
        AtomicInteger served = new AtomicInteger();
        Map<String, String> tls = Map.of("security.tls.certificate", cluster.certificate().toString(),
                "security.tls.private_key", cluster.privateKey().toString());
        ControlPlaneNode a = node("a", tls, served);
        ControlPlaneNode b = node("b", tls, new AtomicInteger());
        assertArrayEquals("hi".getBytes(), call(b, a, "hi"));

        ControlPlaneNode untrusted = node("u", Map.of("security.tls.certificate", stranger.certificate().toString(),
                "security.tls.private_key", stranger.privateKey().toString()), new AtomicInteger());
        assertEquals(ErrorCode.PERMISSION_DENIED,
                assertThrows(TransferException.class, () -> call(untrusted, a, "x")).code());
        ControlPlaneNode plain = node("p", Map.of(), new AtomicInteger());
        assertThrows(TransferException.class, () -> call(plain, a, "x"));
        assertEquals(1, served.get());

        Map<String, String> both = new java.util.HashMap<>(tls);
        both.put("security.token", TOKEN);
        ControlPlaneNode c = node("c", both, new AtomicInteger());
        ControlPlaneNode d = node("d", both, new AtomicInteger());
        assertArrayEquals("both".getBytes(), call(c, d, "both"));
    }

    @Test
    void enginesWithTheTokenFetchDescriptorsAndNotifyAndOthersCannot() throws Exception {
        Path tokenFile = dir.resolve("token");
        Files.writeString(tokenFile, TOKEN + "\n");
        TransferEngine a = engine(Map.of("security.token_file", tokenFile.toString()));
        TransferEngine b = engine(Map.of("security.token", TOKEN));
        TransferEngine stranger = engine(Map.of());

        SegmentHandle seenFromB = b.openSegment(a.segmentName());
        b.sendNotification(seenFromB, "from b").get();
        Notification n = a.awaitNotification(Duration.ofSeconds(10));
        assertNotNull(n);
        assertEquals("from b", n.message());

        TransferException e = assertThrows(TransferException.class, () -> stranger.openSegment(a.segmentName()));
        assertEquals(ErrorCode.UNKNOWN_SEGMENT, e.code());
        int port = Integer.parseInt(a.segmentName().substring(a.segmentName().lastIndexOf(':') + 1));
        try (RawControlClient raw = new RawControlClient(port)) {
            raw.send(RawControlClient.REQUEST, 1, "engine.notify", b.segmentName(), "forged".getBytes(StandardCharsets.UTF_8));
            raw.send(RawControlClient.REQUEST, 2, "segment.get", b.segmentName(), new byte[0]);
            raw.socket.getInputStream().readNBytes(TokenHandshake.HELLO_BYTES);
            assertTrue(raw.closedByPeer());
        }
        assertNull(a.awaitNotification(Duration.ZERO), "nothing was published without the token");
    }

    private TransferEngine engine(Map<String, String> keys) {
        EngineConfig.Builder cfg = EngineConfig.builder().environment(Map.of()).set(EngineConfig.CONTROL_HOST, "127.0.0.1");
        keys.forEach(cfg::set);
        TransferEngine e = TransferEngine.create(cfg.build());
        open.add(e);
        return e;
    }
}
