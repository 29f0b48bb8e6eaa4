package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;

/**
 * A peer that goes silent (no answer, no reset) ends its tasks with TIMEOUT by their deadline, whatever the transport's
 * connect timeout: neither a slice that timed out on the dead connection nor one queued while a reconnect into the
 * silence hangs waits for that connect (issue 24: with transfer.timeout 3 s over tcp, 8.1 s and PEER_UNREACHABLE after
 * the 5 s connect timeout). The scripted transport's connect hangs 5 s, as tcp's does into a silent link.
 */
class SilentPeerTest {
    static final long TIMEOUT_MS = 300;

    @RegisterExtension
    final OpenEngines engines = new OpenEngines();

    @Test
    void tasksToASilentPeerEndTimeoutByTheirDeadlineNotAfterAHangingReconnect() throws Exception {
        TransferEngine target = engines.open(EngineTest.cfg().set("transports.scripted.on", true));
        RegisteredMemory remote = target.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        long untouched = EngineTest.crc(remote.segment());
        TransferEngine initiator = engines.open(EngineTest.cfg().set("transports.scripted.on", true)
                .set("transports.scripted.mode", "silent").set(EngineConfig.TRANSFER_TIMEOUT, TIMEOUT_MS + "ms"));
        RegisteredMemory local = initiator.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        EngineTest.fill(local.segment(), 5);
        SegmentHandle seg = initiator.openSegment(target.segmentName());

        // the first connection takes the slices and goes silent: they time out on it; the second task finds it
        // closed and waits for a reconnect that hangs; the third carries a deadline of its own
        assertTimesOut(initiator, local, seg, remote, null, TransferState.FAILED, "first, on the silent connection");
        assertTimesOut(initiator, local, seg, remote, null, TransferState.FAILED, "second, while reconnecting");
        assertTimesOut(initiator, local, seg, remote, Duration.ofMillis(TIMEOUT_MS), TransferState.TIMEOUT,
                "third, with a deadline of its own");
        assertEquals(untouched, EngineTest.crc(remote.segment()), "a silent peer received bytes");
    }

    private static void assertTimesOut(TransferEngine initiator, RegisteredMemory local, SegmentHandle seg,
                                       RegisteredMemory remote, Duration deadline, TransferState state, String which)
            throws Exception {
        TransferRequest.Builder b = TransferRequest.builder(Opcode.WRITE, local.segment(), seg, remote.address())
                .require("scripted");
        if (deadline != null) {
            b.timeout(deadline);
        }
        long start = System.nanoTime();
        TransferStatus s = initiator.submit(b.build()).get(30, TimeUnit.SECONDS);
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertEquals(ErrorCode.TIMEOUT, s.error(), which + ": " + s);
        assertEquals(state, s.state(), which + ": " + s);
        assertTrue(ms <= TIMEOUT_MS + 1000, which + ": the task ended after " + ms + " ms: " + s);
    }
}
