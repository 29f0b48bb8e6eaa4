package org.tent4j.testkit.net;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.tent4j.testkit.ChildJvm;

/**
 * The test bed itself: two hosts on one link talk TCP from JVMs inside them; a link taken down fails a connect at
 * once; silent drops (both ways, answers only, 100 % loss) make it time out instead; a rate limit slows it; a bridge
 * joins three hosts; nothing is left behind by close(), by a JVM stopped with SIGTERM, or by a dead run (swept).
 */
class TestNetworkTest {
    static final Duration WAIT = Duration.ofSeconds(30);
    static TestNetwork net;
    static Host a;
    static Host b;
    static Link l0;
    static ChildJvm server;
    static ChildJvm client;
    static int port;

    @BeforeAll
    static void build() throws Exception {
        net = TestNetwork.create();
        a = net.addHost("a");
        b = net.addHost("b");
        l0 = net.addLink("l0", a, b);
        server = a.jvm(NetProbe.class).heap("64m").start();
        client = b.jvm(NetProbe.class).heap("64m").start();
        server.awaitLine("READY", WAIT);
        client.awaitLine("READY", WAIT);
        port = Integer.parseInt(server.ask("LISTEN 0.0.0.0", WAIT).split(" ")[1]);
    }

    @AfterEach
    void restore() {
        l0.heal();
        l0.up();
        l0.rate(0);
    }

    @AfterAll
    static void tearDown() throws Exception {
        for (AutoCloseable c : new AutoCloseable[] {client, server, net}) {
            if (c != null) {
                c.close();
            }
        }
    }

    static String connect(int timeoutMs, int bytes) throws Exception {
        return client.ask("CONNECT " + a.address() + " " + port + " " + timeoutMs + " " + bytes, WAIT);
    }

    static long ms(String reply) {
        return Long.parseLong(reply.split(" ")[reply.startsWith("OK") ? 1 : 2]);
    }

    @Test
    void twoHostsOnOneLinkTalkTcpAndKnowTheirAddresses() throws Exception {
        assertEquals(List.of("198.51.100.1"), a.addresses());
        assertEquals("198.51.100.2", b.address(l0));
        assertTrue(a.exec("ip", "-o", "-4", "addr", "show", "dev", "l0").contains("198.51.100.1/28"));
        assertTrue(connect(5000, 1 << 20).startsWith("OK"));
    }

    @Test
    void aLinkDownFailsAConnectAtOnce() throws Exception {
        l0.down();
        String r = connect(5000, 16);
        assertTrue(r.startsWith("FAIL") && !r.contains("SocketTimeoutException") && ms(r) < 2000, r);
        l0.up();
        assertTrue(connect(5000, 16).startsWith("OK"));
    }

    @Test
    void silentDropsMakeAConnectTimeOutWithoutAReset() throws Exception {
        l0.partition();
        String both = connect(1500, 16);
        assertTrue(both.startsWith("FAIL SocketTimeoutException") && ms(both) >= 1400, both);
        l0.heal();
        assertTrue(connect(5000, 16).startsWith("OK"));
        l0.drop(a, b); // the SYN arrives, the SYN-ACK does not
        String answersLost = connect(1500, 16);
        assertTrue(answersLost.startsWith("FAIL SocketTimeoutException"), answersLost);
        l0.heal();
        l0.loss(100);
        String lost = connect(1500, 16);
        assertTrue(lost.startsWith("FAIL SocketTimeoutException"), lost);
        assertTrue(b.exec("nft", "list", "ruleset").contains("iifname \"l0\" drop"));
        l0.heal();
        assertFalse(b.exec("nft", "list", "ruleset").contains("drop"));
        assertTrue(connect(5000, 16).startsWith("OK"));
    }

    @Test
    void aRateLimitSlowsTheLink() throws Exception {
        l0.rate(8_000_000); // 1 MB/s each way
        String r = connect(10_000, 512 << 10);
        assertTrue(r.startsWith("OK") && ms(r) >= 350, "512 KiB echoed at 1 MB/s: " + r);
        assertTrue(a.exec("tc", "qdisc", "show", "dev", "l0").contains("tbf"));
    }

    @Test
    void aBridgeJoinsThreeHosts() throws Exception {
        try (TestNetwork lan = TestNetwork.create()) {
            Host x = lan.addHost("x");
            Host y = lan.addHost("y");
            Host z = lan.addHost("z");
            Link l = lan.addLink("lan", x, y, z);
            lan.addLink("side", y, z);
            assertEquals(List.of("198.51.100.3", "198.51.100.18"), z.addresses());
            assertTrue(l.bridgeNamespace() != null && TestNetwork.namespaceNames().contains(l.bridgeNamespace()));
            // y listens with bash's /dev/tcp on the bridge; z reaches it, and x reaches it too
            String reach = "exec 3<>/dev/tcp/%s/22 || exit 7";
            String refused = z.execAllowingFailure("timeout", "5", "bash", "-c", reach.formatted(y.address(l)));
            assertTrue(refused.contains("Connection refused"), refused); // a reset: the packet got there
            assertTrue(x.execAllowingFailure("timeout", "5", "bash", "-c", reach.formatted(z.address(l))).contains("Connection refused"));
            assertTrue(z.execAllowingFailure("timeout", "5", "bash", "-c", reach.formatted(y.address(lan.link("side"))))
                    .contains("Connection refused"));
        }
    }

    @Test
    void closeLeavesNoNamespaceBehind() {
        List<String> before = TestNetwork.namespaceNames();
        TestNetwork n = TestNetwork.create();
        n.addLink("l0", n.addHost("p"), n.addHost("q"));
        n.addLink("l1", n.host("p"), n.host("q"), n.addHost("r"));
        assertEquals(4, n.namespaces().size());
        assertTrue(TestNetwork.namespaceNames().containsAll(n.namespaces()));
        n.close();
        List<String> after = TestNetwork.namespaceNames();
        assertTrue(after.stream().noneMatch(s -> s.startsWith(n.runId() + "-")), after.toString());
        assertTrue(before.containsAll(after.stream().filter(s -> !s.startsWith(net.runId())).toList()), before + " then " + after);
    }

    @Test
    void aStaleNamespaceOfADeadRunIsSwept() throws Exception {
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        String stale = TestNetwork.PREFIX + gone.pid() + "-0-old";
        TestNetwork.run(List.of("ip", "netns", "add", stale));
        assertTrue(TestNetwork.namespaceNames().contains(stale));
        TestNetwork.create().close();
        assertFalse(TestNetwork.namespaceNames().contains(stale));
        assertTrue(TestNetwork.namespaceNames().containsAll(net.namespaces()), "a live run's namespaces stay");
    }

    @Test
    void aTestJvmStoppedWithSigtermRemovesItsNetwork() throws Exception {
        ChildJvm holder = ChildJvm.builder(NetworkHolder.class).heap("64m").start();
        List<String> made = List.of(holder.awaitLine("UP ", WAIT).substring(3).split(" "));
        assertEquals(2, made.size());
        assertTrue(TestNetwork.namespaceNames().containsAll(made));
        holder.terminate();
        List<String> after = TestNetwork.namespaceNames();
        assertTrue(after.stream().noneMatch(made::contains), after + "; exit " + holder.process().exitValue() + "; the holder's stderr:\n" + holder.stderrTail());
    }
}
