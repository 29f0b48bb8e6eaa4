package org.tent4j.runtime.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.tent4j.api.ErrorCode;

/** Whatever size or count a peer chooses, the control plane holds a bounded amount for it and keeps serving others. */
class ControlPlaneLimitsTest {
    private final ExecutorService workers = Executors.newFixedThreadPool(4);
    private ControlPlaneNode node;

    private ControlPlaneNode start(Map<String, String> core) {
        node = new ControlPlaneNode("127.0.0.1", 0, workers, ControlPlaneTrustTest.settings(core));
        node.localSegment("a");
        node.serve("echo", (caller, req) -> req);
        return node;
    }

    @AfterEach
    void tearDown() {
        if (node != null) {
            node.close();
        }
        workers.shutdownNow();
    }

    private void assertHonestCallWorks() {
        byte[] reply = node.call("127.0.0.1", node.port(), "echo", "still here".getBytes(), Duration.ofSeconds(10));
        assertEquals("still here", new String(reply, StandardCharsets.UTF_8));
    }

    @Test
    void connectionsThatNeverAuthenticateCannotLockOutPeersThatDo() throws Exception {
        String token = "a token for the limits test";
        start(Map.of("security.token", token, "control.max_connections", "4"));
        List<java.net.Socket> silent = new ArrayList<>();
        try (ControlPlaneNode honest = new ControlPlaneNode("127.0.0.1", 0, workers,
                ControlPlaneTrustTest.settings(Map.of("security.token", token)))) {
            honest.localSegment("b");
            // five times the limit, each connected and silent: no handshake, no frame
            for (int i = 0; i < 20; i++) {
                silent.add(new java.net.Socket("127.0.0.1", node.port()));
            }
            byte[] reply = honest.call("127.0.0.1", node.port(), "echo", "served".getBytes(), Duration.ofSeconds(10));
            assertEquals("served", new String(reply, StandardCharsets.UTF_8));
            assertEquals(1, node.inboundConnections(), "only the connection that authenticated counts");
            assertTrue(node.refusedConnections() >= 16, "the oldest unauthenticated connections made room: "
                    + node.refusedConnections());
        } finally {
            for (java.net.Socket s : silent) {
                s.close();
            }
        }
    }

    @Test
    void framesAboveMaxFrameCloseTheirConnection() throws Exception {
        start(Map.of());
        for (int i = 0; i < 4; i++) {
            try (RawControlClient c = new RawControlClient(node.port())) {
                // a 16 MiB notify frame: the length alone is enough to refuse it; nothing is buffered for it
                byte[] head = ByteBuffer.allocate(4 + 64).putInt(16 << 20).array();
                c.sendRaw(head);
                try {
                    c.sendRaw(new byte[1 << 20]);
                } catch (IOException e) {
                    // the node may already have closed: that is the point
                }
                assertTrue(c.closedByPeer());
            }
        }
        assertEquals(4, node.badFrames());
        assertHonestCallWorks();
    }

    @Test
    void requestsAboveTheirServiceLimitAreRefusedOnArrival() throws Exception {
        start(Map.of());
        AtomicInteger handled = new AtomicInteger();
        node.serve("notify", 64 << 10, (caller, req) -> {
            handled.incrementAndGet();
            return new byte[0];
        });
        try (RawControlClient c = new RawControlClient(node.port())) {
            c.send(RawControlClient.REQUEST, 5, "notify", "x", new byte[(64 << 10) + 1]);
            RawControlClient.Frame f = c.read();
            assertEquals(ErrorCode.INVALID_ARGUMENT.ordinal(), f.errorOrdinal());
            assertTrue(f.text().contains("exceeds its limit of 65536"), f.text());
            c.send(RawControlClient.REQUEST, 6, "notify", "x", new byte[64 << 10]);
            assertEquals(RawControlClient.REPLY, c.read().kind());
        }
        assertEquals(1, handled.get());
        assertEquals(1, node.refusedRequests());
    }

    @Test
    void requestsBeyondTheWorkerQueueLimitAreAnsweredTooManyRequests() throws Exception {
        start(Map.of("control.max_requests_per_connection", "8", "control.max_requests", "8"));
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch started = new CountDownLatch(4);
        node.serve("slow", (caller, req) -> {
            started.countDown();
            release.await();
            return req;
        });
        try (RawControlClient c = new RawControlClient(node.port())) {
            c.sendRequests(20, "slow", "x", i -> new byte[] {(byte) i});
            // 8 wait for workers; the other 12 are refused at once, while the 8 still hang
            for (int i = 0; i < 12; i++) {
                RawControlClient.Frame f = c.read();
                assertEquals(ErrorCode.TOO_MANY_REQUESTS.ordinal(), f.errorOrdinal(), f.text());
                assertTrue(f.id() > 8, "request " + f.id() + " should have been admitted");
            }
            started.await();
            release.countDown();
            Set<Long> answered = new HashSet<>();
            for (int i = 0; i < 8; i++) {
                RawControlClient.Frame f = c.read();
                assertEquals(RawControlClient.REPLY, f.kind());
                answered.add(f.id());
            }
            assertEquals(Set.of(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L), answered);
        }
        assertEquals(12, node.refusedRequests());
        assertHonestCallWorks();
    }

    @Test
    void requestBytesWaitingForWorkersAreBoundedWhileOtherPeersAreServed() throws Exception {
        start(Map.of("control.max_frame", "64k", "control.max_request_bytes", "200k"));
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch started = new CountDownLatch(3);
        node.serve("slow", (caller, req) -> {
            started.countDown();
            release.await();
            return java.util.Arrays.copyOf(req, 8);
        });
        int big = 60 << 10;
        try (RawControlClient flood = new RawControlClient(node.port());
             RawControlClient other = new RawControlClient(node.port())) {
            flood.sendRequests(6, "slow", "flood", i -> {
                byte[] payload = new byte[big];
                payload[0] = (byte) i;
                return payload;
            });
            // three fit in 200 KiB and hold the workers; the rest are refused at once, far below the count limits
            for (int i = 0; i < 3; i++) {
                RawControlClient.Frame f = flood.read();
                assertEquals(ErrorCode.TOO_MANY_REQUESTS.ordinal(), f.errorOrdinal(), f.text());
                assertTrue(f.id() > 3, "request " + f.id() + " should have been admitted");
                assertTrue(f.text().contains("'slow' request of " + big + " bytes does not fit")
                        && f.text().contains("control.max_request_bytes"), f.text());
            }
            started.await();
            assertEquals(3L * big, node.requestBytesInFlight());
            assertEquals(3, node.requestBudgetRefusals());
            // another peer's small request fits in what is left, and the fourth worker answers it
            other.send(RawControlClient.REQUEST, 1, "echo", "other", "small".getBytes(StandardCharsets.UTF_8));
            RawControlClient.Frame small = other.read();
            assertEquals(RawControlClient.REPLY, small.kind(), small.text());
            assertEquals("small", small.text());
            release.countDown();
            Set<Long> answered = new HashSet<>();
            for (int i = 0; i < 3; i++) {
                RawControlClient.Frame f = flood.read();
                assertEquals(RawControlClient.REPLY, f.kind());
                answered.add(f.id());
            }
            assertEquals(Set.of(1L, 2L, 3L), answered);
        }
        // a worker gives its request's bytes back once it has answered, which the peer may see first
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (node.requestBytesInFlight() != 0 && System.nanoTime() < deadline) {
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        }
        assertEquals(0, node.requestBytesInFlight());
        assertEquals(3, node.refusedRequests());
        assertHonestCallWorks();
    }

    @Test
    void aRequestByteBudgetBelowOneFrameIsRefusedAtConfiguration() {
        org.tent4j.api.ConfigException e = org.junit.jupiter.api.Assertions.assertThrows(org.tent4j.api.ConfigException.class,
                () -> ControlPlaneTrustTest.settings(Map.of("control.max_frame", "64k", "control.max_request_bytes", "32k")));
        assertTrue(e.getMessage().contains("control.max_request_bytes") && e.getMessage().contains("65536"), e.getMessage());
    }

    @Test
    void connectionsBeyondTheLimitAreClosedAtOnce() throws Exception {
        start(Map.of("control.max_connections", "50"));
        List<RawControlClient> open = new ArrayList<>();
        try {
            for (int i = 0; i < 50; i++) {
                RawControlClient c = new RawControlClient(node.port());
                open.add(c);
                c.send(RawControlClient.REQUEST, i, "echo", "c" + i, new byte[] {1});
                assertEquals(RawControlClient.REPLY, c.read().kind());
            }
            for (int i = 0; i < 20; i++) {
                try (RawControlClient c = new RawControlClient(node.port())) {
                    assertTrue(c.closedByPeer(), "connection " + (50 + i) + " exceeds control.max_connections");
                }
            }
            assertEquals(20, node.refusedConnections());
        } finally {
            for (RawControlClient c : open) {
                c.close();
            }
        }
    }

    @Test
    void idleConnectionsAreClosed() throws Exception {
        start(Map.of("control.idle_timeout", "200ms"));
        try (RawControlClient c = new RawControlClient(node.port())) {
            c.send(RawControlClient.REQUEST, 1, "echo", "x", new byte[] {1});
            c.read();
            assertTrue(c.closedByPeer(), "an idle connection is closed after control.idle_timeout");
        }
        assertHonestCallWorks();
    }
}
