package org.tent4j.runtime.control;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.runtime.config.CoreKey;
import org.tent4j.spi.OptionValues;

/** Replies count only on their call's connection, ids are not guessable, and a caller name is bound to one connection. */
class ControlPlaneTrustTest {
    private final ExecutorService workers = Executors.newFixedThreadPool(2);
    private final ListAppender<ILoggingEvent> logged = new ListAppender<>();
    private ControlPlaneNode node;

    static ControlPlaneNode.Settings settings(Map<String, String> core) {
        return ControlPlaneNode.Settings.from(OptionValues.parse("", CoreKey.ALL, core));
    }

    @BeforeEach
    void setUp() {
        node = new ControlPlaneNode("127.0.0.1", 0, workers, settings(Map.of()));
        node.localSegment("a");
        node.serve("whoami", (caller, req) -> caller.getBytes(StandardCharsets.UTF_8));
        logged.start();
        ((Logger) LoggerFactory.getLogger(ControlPlaneNode.class)).addAppender(logged);
    }

    @AfterEach
    void tearDown() {
        ((Logger) LoggerFactory.getLogger(ControlPlaneNode.class)).detachAppender(logged);
        node.close();
        workers.shutdownNow();
    }

    @Test
    void forgedRepliesFromASecondConnectionAreIgnoredAndLogged() throws Exception {
        try (ServerSocket peerB = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            CompletableFuture<byte[]> call = node.callAsync("127.0.0.1", peerB.getLocalPort(), "segment.get", new byte[0]);
            try (RawControlClient b = new RawControlClient(peerB.accept());
                 RawControlClient attacker = new RawControlClient(node.port())) {
                RawControlClient.Frame request = b.read();
                assertEquals(RawControlClient.REQUEST, request.kind());
                assertEquals("a", request.caller());
                // the attacker knows the id (the worst case) and answers first, from its own connection
                attacker.send(RawControlClient.REPLY, request.id(), "segment.get", "b", "forged".getBytes());
                attacker.send(RawControlClient.ERROR, request.id(), "segment.get", "b", new byte[] {0});
                // frames of one connection are handled in order: once this is answered, the forgeries were seen
                attacker.send(RawControlClient.REQUEST, 1, "whoami", "mallory", new byte[0]);
                assertEquals("mallory", attacker.read().text());
                assertFalse(call.isDone(), "a reply from another connection must not complete the call");
                assertEquals(2, node.strayReplies());
                assertTrue(logged.list.stream().anyMatch(e -> e.getFormattedMessage().contains("ignoring a 'segment.get' reply")
                        && e.getFormattedMessage().contains("another connection")), "forged replies are logged");

                b.send(RawControlClient.REPLY, request.id(), "segment.get", "b", "genuine".getBytes());
                assertArrayEquals("genuine".getBytes(), call.get(10, TimeUnit.SECONDS));
            }
        }
    }

    @Test
    void correlationIdsAreNotGuessable() throws Exception {
        try (ServerSocket peerB = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            node.callAsync("127.0.0.1", peerB.getLocalPort(), "x", new byte[0]);
            node.callAsync("127.0.0.1", peerB.getLocalPort(), "x", new byte[0]);
            try (RawControlClient b = new RawControlClient(peerB.accept())) {
                long first = b.read().id();
                long second = b.read().id();
                assertNotEquals(first + 1, second);
                assertNotEquals(first - 1, second);
                assertTrue(Math.abs(first) > 1 << 20 || Math.abs(second) > 1 << 20, "ids are not small counters");
            }
        }
    }

    @Test
    void aCallerNameIsBoundToTheConnectionThatClaimedIt() throws Exception {
        // a short call timeout, so the attacker's claim waits half a second for the victim's connection to close
        node.close();
        node = new ControlPlaneNode("127.0.0.1", 0, workers, settings(Map.of(CoreKey.CONTROL_CALL_TIMEOUT, "1s")));
        node.serve("whoami", (caller, req) -> caller.getBytes(StandardCharsets.UTF_8));
        try (RawControlClient victim = new RawControlClient(node.port());
             RawControlClient attacker = new RawControlClient(node.port())) {
            victim.send(RawControlClient.REQUEST, 1, "whoami", "victim", new byte[0]);
            assertEquals("victim", victim.read().text());

            attacker.send(RawControlClient.REQUEST, 2, "whoami", "victim", new byte[0]);
            RawControlClient.Frame refused = attacker.read();
            assertEquals(ErrorCode.PERMISSION_DENIED.ordinal(), refused.errorOrdinal());
            assertTrue(refused.text().contains("bound to another live connection"), refused.text());

            // nor may a connection change its name once it has one
            victim.send(RawControlClient.REQUEST, 3, "whoami", "someone-else", new byte[0]);
            assertEquals(ErrorCode.PERMISSION_DENIED.ordinal(), victim.read().errorOrdinal());
            victim.send(RawControlClient.REQUEST, 4, "whoami", "victim", new byte[0]);
            assertEquals("victim", victim.read().text());
            assertEquals(2, node.refusedCallers());
            assertEquals(1, node.heldClaims());
        }
    }

    @Test
    void aRestartedPeersNewConnectionIsServedOnceItsOldConnectionCloses() throws Exception {
        RawControlClient before = new RawControlClient(node.port());
        try (RawControlClient after = new RawControlClient(node.port())) {
            before.send(RawControlClient.REQUEST, 1, "whoami", "b", new byte[0]);
            assertEquals("b", before.read().text());

            // the restarted peer's requests arrive while the node still sees its old connection open
            after.send(RawControlClient.REQUEST, 2, "whoami", "b", new byte[0]);
            after.send(RawControlClient.REQUEST, 3, "whoami", "b", "second".getBytes());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (node.heldClaims() == 0 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertEquals(1, node.heldClaims(), "the new connection's claim waits for the old connection");

            before.close();
            // both held requests are served (workers answer them, so in either order), neither refused
            RawControlClient.Frame first = after.read();
            RawControlClient.Frame second = after.read();
            assertEquals(java.util.Set.of(2L, 3L), java.util.Set.of(first.id(), second.id()));
            assertEquals(RawControlClient.REPLY, first.kind(), first.text());
            assertEquals(RawControlClient.REPLY, second.kind(), second.text());
            assertEquals("b", first.text());
            assertEquals("b", second.text());
            assertEquals(0, node.refusedCallers());
        }
    }
}
