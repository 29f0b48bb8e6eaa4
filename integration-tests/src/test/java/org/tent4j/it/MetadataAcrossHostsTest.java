package org.tent4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import org.tent4j.testkit.net.Host;
import org.tent4j.testkit.net.Link;
import org.tent4j.testkit.net.TestNetwork;
import org.tent4j.testkit.servers.EtcdServer;
import org.tent4j.testkit.servers.RedisServer;

/**
 * Metadata servers on hosts of their own (issue 24): etcd in host e, Redis in host r, a target engine in host t and
 * initiators in host i, all on one bridged link of a {@link TestNetwork}. An initiator that already holds the target's
 * descriptor keeps transferring when etcd goes silent for it; a new engine on that host, given {@code etcd,redis},
 * still finds the target through Redis. Every transfer is CRC-checked against the target's memory.
 */
class MetadataAcrossHostsTest {
    private static final long SIZE = 8 << 20;
    private static final Duration WAIT = Duration.ofSeconds(60);

    private static TargetProcess.Child engine(Host h, String log, String metadata, String name, String... more) throws Exception {
        List<String> config = new ArrayList<>(List.of("control.host=" + h.address(), "transports.enabled=tcp",
                "transfer.timeout=3000ms", "metadata.uri=" + metadata, "segment.name=" + name));
        config.addAll(List.of(more));
        return new TargetProcess.Child(h.jvm(TargetProcess.class).stderr(Path.of("target", "MetadataAcrossHosts-" + log + ".log")),
                SIZE, config.toArray(String[]::new));
    }

    /** SIZE bytes filled with {@code seed} written by {@code initiator} over the start of the target, intact. */
    private static void intact(TargetProcess.Child initiator, TargetProcess.Child target, int seed) throws Exception {
        assertEquals("FILLED", initiator.jvm.ask("FILL " + seed, WAIT));
        initiator.jvm.send("WRITE " + target.address + " " + SIZE);
        initiator.jvm.awaitLine("SUBMITTED", WAIT);
        String[] done = initiator.jvm.awaitLine("DONE ", WAIT).split(" ", 6);
        assertEquals("COMPLETED", done[1], String.join(" ", done));
        assertEquals(Long.parseLong(done[3]), target.crc(0, SIZE), "the target holds what was sent");
    }

    @Test
    void anInitiatorCutOffFromEtcdKeepsTransferringAndANewOneFindsTheTargetThroughRedis() throws Exception {
        try (TestNetwork net = TestNetwork.create()) {
            Host t = net.addHost("t");
            Host i = net.addHost("i");
            Host e = net.addHost("e");
            Host r = net.addHost("r");
            Link lan = net.addLink("lan", t, i, e, r);
            try (EtcdServer etcd = EtcdServer.launchIn(e);
                 RedisServer redis = RedisServer.builder().in(r).launch()) {
                String both = etcd.uri() + "," + redis.uri();
                try (TargetProcess.Child target = engine(t, "target", both, "target");
                     TargetProcess.Child first = engine(i, "first", etcd.uri(), "first")) {
                    assertEquals("OPENED", first.jvm.ask("OPEN target", WAIT));
                    intact(first, target, 1);

                    // etcd goes silent for host i, both ways, no reset: the cached descriptor carries on
                    lan.drop(i, e);
                    lan.drop(e, i);
                    intact(first, target, 2);

                    // a new engine on host i with both stores: etcd does not answer it, Redis does
                    // (its probe and each call wait 1 s for the silent etcd, not the default 5 s)
                    try (TargetProcess.Child second = engine(i, "second", both, "second",
                            "metadata.etcd.connect-timeout=1s", "metadata.etcd.timeout=1s")) {
                        assertEquals("OPENED", second.jvm.ask("OPEN target", WAIT));
                        intact(second, target, 3);
                    }
                }
            }
        }
    }
}
