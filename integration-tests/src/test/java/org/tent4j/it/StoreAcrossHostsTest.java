package org.tent4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import org.tent4j.cli.Tent4jCommand;
import org.tent4j.testkit.ChildJvm;
import org.tent4j.testkit.Poll;
import org.tent4j.testkit.net.Host;
import org.tent4j.testkit.net.Link;
import org.tent4j.testkit.net.TestNetwork;

/**
 * The store across hosts (issue 24): a master in host m, three nodes in hosts n1-n3 and a client in host c, all real
 * processes on one bridged link. Node n3 goes silent (every packet to and from it dropped, no reset): reads of objects
 * with a replica on it fail over to the other replica within the client's transfer timeout, the master drops n3 at the
 * client TTL, objects whose only replica was on n3 are gone, and once the link heals n3 remounts an empty segment: the
 * bytes still in its memory are never served again. Every object read is CRC-checked.
 */
class StoreAcrossHostsTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final long TRANSFER_TIMEOUT_MS = 2000;
    private static final int SIZE = 256 << 10;
    private static final int SHARED = 4;
    private static final int LONELY = 3;

    @Test
    void aSilentNodeIsFailedOverDroppedAtItsTtlAndRemountsEmptyAfterHealing() throws Exception {
        try (TestNetwork net = TestNetwork.create()) {
            Host m = net.addHost("m");
            Host c = net.addHost("c");
            List<Host> n = List.of(net.addHost("n1"), net.addHost("n2"), net.addHost("n3"));
            List<Host> all = new ArrayList<>(n);
            all.add(m);
            all.add(c);
            Link lan = net.addLink("lan", all.toArray(Host[]::new));
            String master = m.address() + ":50051";
            String admin = "http://" + m.address() + ":9003";
            ChildJvm mp = m.jvm(Tent4jCommand.class).args("store", "master", "--host", m.address(), "--port", "50051",
                    "--admin-port", "9003", "--client-ttl", "3s", "--tick", "100ms").start();
            try {
                mp.awaitLine("LISTENING ", WAIT);
                List<ChildJvm> nodes = new ArrayList<>();
                try {
                    for (Host h : n) {
                        nodes.add(h.jvm(Tent4jCommand.class).args("store", "node", "--master", master,
                                "--control-host", h.address(), "--segment-size", "8m").start());
                    }
                    // the client starts while the nodes do; it puts once they are all mounted
                    try (StoreDriver.Child client = new StoreDriver.Child(c.jvm(StoreDriver.class)
                            .stderr(Path.of("target", "StoreAcrossHosts-client.log"))
                            .args(master, "control.host=" + c.address(), "transports.enabled=tcp",
                                    "transfer.timeout=" + TRANSFER_TIMEOUT_MS + "ms"))) {
                        List<String[]> ready = new ArrayList<>();
                        for (ChildJvm node : nodes) {
                            ready.add(node.awaitLine("READY ", WAIT).split(" "));
                        }
                        String victimClient = ready.get(2)[1];
                        String victim = ready.get(2)[2];
                        long[] shared = new long[SHARED];
                        for (int i = 0; i < SHARED; i++) {
                            shared[i] = ok(client.ask("PUT s" + i + " " + SIZE + " " + i + " 2 " + victim + "," + ready.get(i % 2)[2]));
                            assertTrue(c.exec("curl", "-sf", admin + "/key?key=s" + i).contains(victim), "s" + i + " has a replica on n3");
                        }
                        for (int i = 0; i < LONELY; i++) {
                            ok(client.ask("PUT l" + i + " " + SIZE + " " + (100 + i) + " 1 " + victim));
                            assertTrue(c.exec("curl", "-sf", admin + "/key?key=l" + i).contains(victim), "l" + i + " lives on n3 only");
                        }

                        // n3 goes silent both ways: no reset, no answer
                        for (Host h : all) {
                            if (h != n.get(2)) {
                                lan.drop(n.get(2), h);
                                lan.drop(h, n.get(2));
                            }
                        }
                        for (int i = 0; i < SHARED; i++) {
                            String[] got = client.ask("GET s" + i);
                            assertEquals("OK", got[0], String.join(" ", got));
                            assertEquals(shared[i], Long.parseLong(got[1]), "s" + i + " read back intact from its other replica");
                            long ms = Long.parseLong(got[3]);
                            assertTrue(ms <= TRANSFER_TIMEOUT_MS + 2000, "s" + i + " failed over in " + ms + " ms");
                        }

                        // the master hears nothing from n3 for its TTL and drops it with its segment and lone objects
                        assertEquals("EXPIRED " + victimClient, mp.awaitLine("EXPIRED ", WAIT));
                        assertFalse(c.exec("curl", "-sf", admin + "/segments").contains(victim), "n3's segment dropped");
                        for (int i = 0; i < LONELY; i++) {
                            String[] got = client.ask("GET l" + i);
                            assertEquals("ERR", got[0], String.join(" ", got));
                            assertEquals("OBJECT_NOT_FOUND", got[1], String.join(" ", got));
                        }

                        lan.heal();
                        Poll.until("n3 remounted its segment after the link healed", WAIT, Duration.ofMillis(100),
                                () -> c.exec("curl", "-sf", admin + "/segments").contains(victim));
                        // its memory still holds the lone objects' bytes; the master knows they are gone
                        for (int i = 0; i < LONELY; i++) {
                            String[] got = client.ask("GET l" + i);
                            assertEquals("OBJECT_NOT_FOUND", got[1], "l" + i + " never served from n3's stale memory: " + String.join(" ", got));
                        }
                        for (int i = 0; i < SHARED; i++) {
                            String[] got = client.ask("GET s" + i);
                            assertEquals(shared[i], Long.parseLong(got[1]), "s" + i + " intact after healing: " + String.join(" ", got));
                        }
                        long fresh = ok(client.ask("PUT fresh " + SIZE + " 7 1 " + victim));
                        assertTrue(c.exec("curl", "-sf", admin + "/key?key=fresh").contains(victim), "n3 takes new objects again");
                        String[] got = client.ask("GET fresh");
                        assertEquals(fresh, Long.parseLong(got[1]), "the new object on n3 reads back intact: " + String.join(" ", got));
                    }
                } finally {
                    for (ChildJvm node : nodes) {
                        node.kill();
                    }
                }
            } finally {
                mp.terminate(); // SIGTERM: the master reads no commands, so close()'s EXIT would wait 10 s
            }
        }
    }

    private static long ok(String[] answer) {
        assertEquals("OK", answer[0], String.join(" ", answer));
        return Long.parseLong(answer[1]);
    }
}
