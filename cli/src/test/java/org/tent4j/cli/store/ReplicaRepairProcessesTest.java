package org.tent4j.cli.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.cli.store.NodeProcess.okLong;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.tent4j.testkit.ChildJvm;
import org.tent4j.testkit.Poll;

/**
 * Replica repair with real processes: a master and three nodes, objects put with two replicas; one node SIGKILLed.
 * After its client TTL the master counts the objects that lost a replica as under-replicated; repair (one copy at a
 * time, so the count is seen above zero) brings every one back to two replicas on distinct live segments, through
 * the surviving nodes' engines, and each survivor reads every object back CRC-intact from its own replica.
 */
@Timeout(120)
class ReplicaRepairProcessesTest {
    private static final int SIZE = 64 * 1024;
    private static final int KEYS = 30;
    private static final Duration REPAIR_LIMIT = Duration.ofSeconds(60);
    private final List<AutoCloseable> closeLater = new ArrayList<>();
    private MasterProcess master;

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : closeLater.reversed()) {
            c.close();
        }
        if (master != null) {
            master.close();
        }
    }

    @Test
    void aKilledNodesObjectsAreRepairedToTwoReplicasOnTheSurvivors() throws Exception {
        long t0 = System.nanoTime();
        master = new MasterProcess("--client-ttl", "3s", "--tick", "50ms", "--repairs-in-flight", "1",
                "--repairs-per-node", "1");
        String address = master.address;
        NodeProcess.Node[] nodes = NodeProcess.Node.start(address, 16 << 20, 3);
        closeLater.addAll(List.of(nodes));
        long[] crcs = new long[KEYS];
        for (int i = 0; i < KEYS; i++) {
            crcs[i] = okLong(nodes[i % 3].call("PUT r/" + i + " " + SIZE + " " + (100 + i) + " 2"));
        }
        // the victim: the node whose segment holds the most replicas
        int victim = 0;
        int most = -1;
        for (int n = 0; n < 3; n++) {
            int held = 0;
            for (int i = 0; i < KEYS; i++) {
                held += segments("r/" + i).contains(nodes[n].segmentId) ? 1 : 0;
            }
            if (held > most) {
                most = held;
                victim = n;
            }
        }
        assertTrue(most > 1, "the victim holds replicas: " + most);
        assertEquals(0, master.metric("store_objects_under_replicated"));
        NodeProcess.Node dead = nodes[victim];
        List<NodeProcess.Node> alive = new ArrayList<>(List.of(nodes));
        alive.remove(dead);

        long killedAt = System.nanoTime();
        dead.kill();
        master.jvm.awaitLine("EXPIRED " + dead.clientId, ChildJvm.DEFAULT_TIMEOUT);
        long under = master.metric("store_objects_under_replicated");
        assertTrue(under > 0 && under <= most, "after the TTL the objects that lost a replica count (" + most
                + " had one on the dead node): " + under);

        long expiredAt = System.nanoTime();
        Poll.until("repair brings the under-replicated count to 0", REPAIR_LIMIT, Duration.ofMillis(50),
                () -> master.metric("store_objects_under_replicated") == 0);
        assertTrue(master.metric("store_repairs_total{result=\"completed\"}") >= most,
                "every lost replica was repaired by a copy the node reported");
        System.err.printf("start and puts %d ms, expiry %d ms after the kill, %d objects repaired in %d ms%n",
                (killedAt - t0) / 1_000_000, (expiredAt - killedAt) / 1_000_000, under, (System.nanoTime() - expiredAt) / 1_000_000);
        Set<String> live = Set.of(alive.get(0).segmentId, alive.get(1).segmentId);
        for (int i = 0; i < KEYS; i++) {
            List<String> segs = segments("r/" + i);
            assertEquals(2, segs.size(), "r/" + i + " has its two replicas back: " + segs);
            assertEquals(live, Set.copyOf(segs), "r/" + i + " on distinct live segments: " + segs);
            assertFalse(segs.contains(dead.segmentId));
            // each survivor holds one of the two replicas and reads its own: every replica's bytes are checked
            for (NodeProcess.Node n : alive) {
                assertEquals("OK " + crcs[i] + " " + SIZE, n.call("GET r/" + i), "r/" + i + " read by " + n.clientId);
            }
        }
        String page = master.get("/");
        assertTrue(page.contains("under-replicated objects"), "the status page has the repair card");
    }

    private List<String> segments(String key) throws Exception {
        String body = master.get("/key?key=" + URLEncoder.encode(key, StandardCharsets.UTF_8));
        assertTrue(body.contains("\"askedReplicas\":2"), body);
        List<String> out = new ArrayList<>();
        Matcher m = Pattern.compile("\\{\"segment\":\"([^\"]+)\"").matcher(body);
        while (m.find()) {
            out.add(m.group(1));
        }
        return out;
    }
}
