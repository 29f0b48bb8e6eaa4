package org.tent4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import org.tent4j.testkit.net.Host;
import org.tent4j.testkit.net.Link;
import org.tent4j.testkit.net.TestNetwork;

/**
 * Two engines on two hosts of a {@link TestNetwork} (a target in host a, an initiator in host b, tcp between their
 * 198.51.100.x addresses): a transfer arrives intact; a silent partition (both directions dropped, no reset) mid-transfer
 * ends the task TIMEOUT within transfer.timeout and a second; once healed, the same two engines transfer again.
 */
class NetworkPartitionTest {
    static final long SIZE = 64 << 20;
    static final long TIMEOUT_MS = 3000;
    static final Duration WAIT = Duration.ofSeconds(60);

    static String[] config(Host h) {
        return new String[] {"control.host=" + h.address(), "transports.enabled=tcp", "transfer.timeout=" + TIMEOUT_MS + "ms"};
    }

    /**
     * Writes the first {@code length} bytes of the initiator's buffer to the target's ({@code deadline} "" for
     * transfer.timeout, else " <ms>"), running {@code onSubmitted} once the task is under way; the child's DONE line:
     * DONE, state, ms from submit, crc of what it sent, error code, message.
     */
    static String[] write(TargetProcess.Child initiator, TargetProcess.Child target, long length, String deadline,
                          Runnable onSubmitted) throws Exception {
        initiator.jvm.send("WRITE " + target.address + " " + length + deadline);
        initiator.jvm.awaitLine("SUBMITTED", WAIT);
        onSubmitted.run();
        return initiator.jvm.awaitLine("DONE ", WAIT).split(" ", 6);
    }

    /** A transfer of the whole buffer, filled with {@code seed}, arrives intact; returns how long it took (ms). */
    static long intact(TargetProcess.Child initiator, TargetProcess.Child target, int seed) throws Exception {
        assertEquals("FILLED", initiator.jvm.ask("FILL " + seed, WAIT));
        String[] done = write(initiator, target, SIZE, "", () -> { });
        assertEquals("COMPLETED", done[1], String.join(" ", done));
        assertEquals(Long.parseLong(done[3]), target.crc(0, SIZE));
        return Long.parseLong(done[2]);
    }

    /**
     * Partitions {@code link} silently once a 32 MiB write is under way (at 100 Mbit/s it would take 2.7 s) and returns
     * the task's DONE line, after checking that it ended with error TIMEOUT within the timeout and a second.
     */
    static String[] partitioned(TargetProcess.Child initiator, TargetProcess.Child target, Link link, String deadline)
            throws Exception {
        link.rate(100_000_000);
        String[] cut = write(initiator, target, 32 << 20, deadline, link::partition);
        assertEquals("TIMEOUT", cut[4], String.join(" ", cut));
        long tookMs = Long.parseLong(cut[2]);
        assertTrue(tookMs <= TIMEOUT_MS + 1000, "the partitioned task ended after " + tookMs + " ms: " + String.join(" ", cut));
        link.heal();
        link.rate(0);
        return cut;
    }

    @Test
    void aSilentPartitionMidTransferTimesOutInTimeAndTheHealedLinkCarriesTheNextTransfer() throws Exception {
        try (TestNetwork net = TestNetwork.create()) {
            Host a = net.addHost("a");
            Host b = net.addHost("b");
            Link link = net.addLink("l0", a, b);
            try (TargetProcess.Child target = new TargetProcess.Child(a.jvm(TargetProcess.class), SIZE, config(a));
                 TargetProcess.Child initiator = new TargetProcess.Child(b.jvm(TargetProcess.class), SIZE, config(b))) {
                assertTrue(target.segment.startsWith(a.address() + ":"), target.segment);
                assertEquals("OPENED", initiator.jvm.ask("OPEN " + target.segment, WAIT));
                long first = intact(initiator, target, 7);

                // under transfer.timeout (no deadline of its own) the task ends FAILED with error TIMEOUT
                String[] byTimeout = partitioned(initiator, target, link, "");
                assertEquals("FAILED", byTimeout[1], String.join(" ", byTimeout));
                long healed = intact(initiator, target, 8);

                // with a deadline of its own it ends TIMEOUT
                String[] byDeadline = partitioned(initiator, target, link, " " + TIMEOUT_MS);
                assertEquals("TIMEOUT", byDeadline[1], String.join(" ", byDeadline));
                long healedAgain = intact(initiator, target, 9);
                System.out.printf("64 MiB in %d ms; partitioned: ended %s after %s ms (transfer.timeout), %s after %s ms"
                        + " (deadline); healed: 64 MiB in %d ms, then %d ms%n", first, byTimeout[1], byTimeout[2],
                        byDeadline[1], byDeadline[2], healed, healedAgain);
            }
        }
    }
}
