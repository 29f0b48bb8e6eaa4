package org.tent4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import org.tent4j.testkit.Poll;

import org.tent4j.testkit.net.Host;
import org.tent4j.testkit.net.Link;
import org.tent4j.testkit.net.TestNetwork;

/**
 * Multi-rail tcp between two hosts joined by two links (issue 24): each engine lists both interfaces
 * ({@code transports.tcp.interfaces=l0,l1}), so the initiator has one rail per link, two lanes each. A link that comes up
 * while a transfer runs on the other joins the open connection: the other rail's lanes are not reconnected
 * ({@code tent4j_transport_tcp_lane_connects}) and the transfer's slices spread onto it. With one link at a tenth of the
 * other's rate, the slices spread over the rails by their speed (the runtime's per-path counters); with one link taken
 * down mid-transfer, the task completes with every byte intact (its slices move to the other rail), and once the link is
 * back the rail is found again and carries bytes.
 */
class MultiRailAcrossHostsTest {
    static final long SIZE = 128L << 20;
    static final Duration WAIT = Duration.ofSeconds(60);
    static final String SLICES = "tent4j_path_slices_total{outcome=\"completed\",path=\"";
    static final String LANE_CONNECTS = "tent4j_transport_tcp_lane_connects";

    static String[] config(Host h) {
        return new String[] {"control.host=" + h.address(), "transports.enabled=tcp", "transfer.timeout=20s",
                "transports.tcp.interfaces=l0,l1", "transports.tcp.rail_recheck=1s", "metrics.port=9464",
                // a rail that goes silent (a link down: no reset) is noticed within 3 s, well before transfer.timeout
                "transports.tcp.keepalive_idle=1s", "transports.tcp.keepalive_interval=1s", "transports.tcp.keepalive_count=2"};
    }

    /** Slices the initiator completed over the rail of {@code link} (both lanes), on its current connection. */
    static long slicesOver(TargetProcess.Child initiator, Link link, Host target) throws Exception {
        return initiator.metric(SLICES + link.name() + "->" + target.address(link) + "/");
    }

    @Test
    void aLinkUpMidTransferJoinsTheConnectionSlicesFollowEachRailsSpeedAndALinkDownLosesNoByte() throws Exception {
        try (TestNetwork net = TestNetwork.create()) {
            Host a = net.addHost("a");
            Host b = net.addHost("b");
            Link l0 = net.addLink("l0", a, b);
            Link l1 = net.addLink("l1", a, b);
            try (TargetProcess.Child target = new TargetProcess.Child(a.jvm(TargetProcess.class), SIZE, config(a));
                 TargetProcess.Child initiator = new TargetProcess.Child(b.jvm(TargetProcess.class), SIZE, config(b))) {
                assertEquals("OPENED", initiator.jvm.ask("OPEN " + target.segment, WAIT));

                // l1 down when the first transfer connects: the connection has the rail over l0 alone (two lanes),
                // slow enough (128 MiB alone would take 21 s) that the transfer still runs when l1 comes up, also on a
                // loaded machine; l1's rail joins the open connection and carries most of the rest
                l1.down();
                l0.rate(50_000_000);
                long[] seen = new long[3];
                write(initiator, target, 4, () -> {
                    try {
                        Poll.until("the first slices over l0", WAIT, Duration.ofMillis(20),
                                () -> slicesOver(initiator, l0, a) > 0);
                        seen[0] = initiator.metric(LANE_CONNECTS);
                        l1.up();
                        Poll.until("slices over l1 while the transfer runs", WAIT, Duration.ofMillis(20),
                                () -> slicesOver(initiator, l1, a) > 0);
                        seen[1] = slicesOver(initiator, l0, a);
                        seen[2] = initiator.metric(LANE_CONNECTS);
                    } catch (Exception e) {
                        throw new AssertionError(e);
                    }
                });
                assertEquals(2, seen[0], "the first connect has l0's two lanes only");
                assertEquals(4, seen[2], "l1's two lanes joined; l0's were not reconnected (a reopen connects all six)");
                assertEquals(4, initiator.metric(LANE_CONNECTS), "no reconnect until the transfer ended");
                long joinedL0 = slicesOver(initiator, l0, a);
                long joinedL1 = slicesOver(initiator, l1, a);
                assertTrue(joinedL0 >= seen[1], "l0's path counters went on (" + joinedL0 + " after " + seen[1] + ")");
                assertEquals(SIZE >> 20, joinedL0 + joinedL1, "every 1 MiB slice went over the connection's two rails");

                // l1 at a tenth of l0's rate: its share of the slices follows
                l0.rate(400_000_000);
                l1.rate(40_000_000);
                write(initiator, target, 1, () -> { });
                long fast = slicesOver(initiator, l0, a) - joinedL0;
                long slow = slicesOver(initiator, l1, a) - joinedL1;
                double share = (double) slow / (fast + slow);
                assertEquals(SIZE >> 20, fast + slow, "every 1 MiB slice went over one of the two rails");
                assertTrue(share > 0.02 && share < 0.25, "the slow rail (1/10 of the rate) carried " + slow + " of "
                        + (fast + slow) + " slices");

                // both links at one rate; l1 goes down once it carried bytes: the task still completes intact
                l1.rate(200_000_000);
                l0.rate(200_000_000);
                long before = slicesOver(initiator, l1, a);
                long[] downAfterMs = {0};
                write(initiator, target, 2, () -> {
                    long start = System.nanoTime();
                    try {
                        long deadline = start + 10_000_000_000L;
                        while (slicesOver(initiator, l1, a) == before && System.nanoTime() < deadline) {
                            Thread.sleep(20); // polling an observable count, with a deadline
                        }
                    } catch (Exception e) {
                        throw new AssertionError(e);
                    }
                    l1.down();
                    downAfterMs[0] = (System.nanoTime() - start) / 1_000_000;
                });

                // back up: the rail answers the background re-try and joins the open connection, which uses it again
                l1.up();
                long deadline = System.nanoTime() + 20_000_000_000L;
                int seed = 3;
                while (slicesOver(initiator, l1, a) == 0 && System.nanoTime() < deadline) {
                    write(initiator, target, seed++, () -> { });
                }
                assertTrue(slicesOver(initiator, l1, a) > 0, "the rail over l1 was not used again after the link came up");
                System.out.printf("l1 joined after %d of %d slices and carried %d; ", seen[1], joinedL0 + joinedL1, joinedL1);
                System.out.printf("slow rail share %.3f (%d of %d slices); l1 down %d ms into the transfer; "
                        + "l1 used again after %d more writes%n", share, slow, fast + slow, downAfterMs[0], seed - 3);
            }
        }
    }

    /** Writes SIZE bytes filled from {@code seed} to the target; COMPLETED and CRC-intact, or the test fails. */
    static void write(TargetProcess.Child initiator, TargetProcess.Child target, int seed, Runnable whileRunning)
            throws Exception {
        assertEquals("FILLED", initiator.jvm.ask("FILL " + seed, WAIT));
        initiator.jvm.send("WRITE " + target.address + " " + SIZE);
        initiator.jvm.awaitLine("SUBMITTED", WAIT);
        whileRunning.run();
        String[] done = initiator.jvm.awaitLine("DONE ", WAIT).split(" ", 6);
        assertEquals("COMPLETED", done[1], String.join(" ", done));
        assertEquals(Long.parseLong(done[3]), target.crc(0, SIZE), "bytes of write " + seed);
    }
}
