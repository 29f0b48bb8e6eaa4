package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.tent4j.api.ConfigException;
import org.tent4j.api.Notification;
import org.tent4j.runtime.config.CoreKey;
import org.tent4j.runtime.control.ControlPlaneNode;
import org.tent4j.runtime.metrics.EngineMetrics;
import org.tent4j.spi.OptionValues;

/** Notifications a peer floods in are bounded by bytes, per sender and overall; the excess is dropped and counted. */
class NotificationBoundsTest {
    private static final byte[] LARGEST = "n".repeat(Notification.MAX_MESSAGE_BYTES).getBytes(StandardCharsets.UTF_8);

    private final ExecutorService workers = Executors.newFixedThreadPool(4);
    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        for (AutoCloseable c : open.reversed()) {
            c.close();
        }
        workers.shutdownNow();
    }

    private static OptionValues core(Map<String, String> values) {
        return OptionValues.parse("", CoreKey.ALL, values);
    }

    private ControlPlaneNode node(String name) {
        return node(name, Map.of());
    }

    private ControlPlaneNode node(String name, Map<String, String> settings) {
        ControlPlaneNode n = new ControlPlaneNode("127.0.0.1", 0, workers, ControlPlaneNode.Settings.from(core(settings)));
        open.add(n);
        n.localSegment(name);
        return n;
    }

    private static void notify(ControlPlaneNode from, ControlPlaneNode to, byte[] message) {
        from.call("127.0.0.1", to.port(), Notifications.SERVICE, message, Duration.ofSeconds(10));
    }

    @Test
    void aFloodFromOnePeerStaysWithinItsShareAndOthersAreStillDelivered() {
        // every peer holds the token: the token admits the flooder, the byte bounds are what stop it
        Map<String, String> member = Map.of("security.token", "notification-flood-29");
        ControlPlaneNode target = node("target", member);
        Notifications notifications = new Notifications("target", target, core(Map.of(
                CoreKey.NOTIFICATIONS_MAX_QUEUED_BYTES, "1m", CoreKey.NOTIFICATIONS_MAX_QUEUED_BYTES_PER_PEER, "256k")));
        EngineMetrics metrics = new EngineMetrics("target");
        open.add(metrics);
        notifications.countDrops(metrics);
        ControlPlaneNode flooder = node("flooder", member);
        ControlPlaneNode honest = node("honest", member);

        for (int i = 0; i < 40; i++) {
            notify(flooder, target, LARGEST); // each is answered once it is queued or dropped
        }
        assertEquals(256 << 10, notifications.queuedBytes(), "four of 64 KiB fit the sender's 256 KiB");
        assertEquals(36, notifications.dropped());
        String scrape = metrics.scrape();
        assertTrue(Pattern.compile("(?m)^tent4j_notifications_dropped_total\\{[^}]*why=\"peer_bytes\"[^}]*} 36(\\.0)?$")
                .matcher(scrape).find(), scrape);
        for (int i = 0; i < 3; i++) {
            notify(honest, target, ("honest " + i).getBytes(StandardCharsets.UTF_8));
        }

        List<Notification> taken = notifications.drain();
        assertEquals(4, taken.stream().filter(n -> n.sender().equals("flooder")).count());
        assertEquals(List.of("honest 0", "honest 1", "honest 2"),
                taken.stream().filter(n -> n.sender().equals("honest")).map(Notification::message).toList());
        assertEquals(0, notifications.queuedBytes(), "taking them gives their bytes back");
        notify(flooder, target, LARGEST);
        assertEquals(LARGEST.length, notifications.queuedBytes(), "the flooder has room again once its queue is taken");
        assertEquals(36, notifications.dropped());
        assertEquals(0, target.authFailures(), "both peers were authenticated");
    }

    @Test
    void theOverallBoundHoldsAcrossPeers() {
        ControlPlaneNode target = node("target");
        Notifications notifications = new Notifications("target", target, core(Map.of(
                CoreKey.NOTIFICATIONS_MAX_QUEUED_BYTES, "256k", CoreKey.NOTIFICATIONS_MAX_QUEUED_BYTES_PER_PEER, "128k")));
        for (String name : List.of("p1", "p2", "p3")) {
            ControlPlaneNode peer = node(name);
            for (int i = 0; i < 3; i++) {
                notify(peer, target, LARGEST);
            }
        }
        assertEquals(256 << 10, notifications.queuedBytes());
        assertEquals(5, notifications.dropped(), "p1 and p2 one each over their share, p3 all three over the total");
        assertEquals(4, notifications.drain().size());
    }

    @Test
    void aByteBoundBelowOneNotificationIsRefused() {
        ControlPlaneNode target = node("target");
        ConfigException e = org.junit.jupiter.api.Assertions.assertThrows(ConfigException.class, () -> new Notifications(
                "target", target, core(Map.of(CoreKey.NOTIFICATIONS_MAX_QUEUED_BYTES_PER_PEER, "1k"))));
        assertTrue(e.getMessage().contains(CoreKey.NOTIFICATIONS_MAX_QUEUED_BYTES_PER_PEER), e.getMessage());
    }
}
