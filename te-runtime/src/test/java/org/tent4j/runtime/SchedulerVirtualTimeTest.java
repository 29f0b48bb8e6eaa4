package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.testkit.ManualClock;

/**
 * Path cooldowns follow the engine's clock: with a virtual one, a paused path stays paused however long the test
 * really takes, and is tried again exactly when the clock passes its cooldown (which doubles after a failed probe).
 * Meanwhile its queue moves to the next transport, so every transfer completes.
 */
class SchedulerVirtualTimeTest {
    private final List<TransferEngine> engines = new ArrayList<>();

    @AfterEach
    void close() {
        engines.forEach(TransferEngine::close);
    }

    @Test
    void aPausedPathIsRetriedOnlyWhenVirtualTimePassesItsCooldown() {
        ManualClock clock = new ManualClock();
        TransferEngine target = TransferEngine.create(EngineTest.cfg().build());
        engines.add(target);
        // inproc's only path fails every slice; inproc-b carries what it cannot
        TransferEngineImpl initiator = new TransferEngineImpl(EngineTest.cfg().set("transports.inproc.fail_path", 0).set("paths.max_inflight", 1).set("paths.cooldown", "100ms")
                .set("paths.max_cooldown", "1s").build(), clock);
        engines.add(initiator);
        RegisteredMemory remote = target.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        TransferRequest r = TransferRequest.builder(Opcode.WRITE, local.segment(), seg, remote.address()).build();

        write(initiator, r);
        assertEquals(3, failedOnPath0(initiator), "three failures in a row pause the path");
        write(initiator, r);
        assertEquals(3, failedOnPath0(initiator), "still paused: virtual time has not moved");
        clock.advance(Duration.ofMillis(100));
        write(initiator, r);
        assertEquals(4, failedOnPath0(initiator), "cooldown over: one probe, which fails and pauses it again");
        clock.advance(Duration.ofMillis(100));
        write(initiator, r);
        assertEquals(4, failedOnPath0(initiator), "the second cooldown is twice as long");
        clock.advance(Duration.ofMillis(100));
        write(initiator, r);
        assertEquals(5, failedOnPath0(initiator));
    }

    private static void write(TransferEngine e, TransferRequest r) {
        TransferStatus s = e.transfer(r);
        assertEquals(TransferState.COMPLETED, s.state(), s.toString());
    }

    private static long failedOnPath0(TransferEngineImpl e) {
        Matcher m = Pattern.compile("tent4j_path_slices_total\\{outcome=\"failed\",path=\"p0\"[^}]*} ([0-9.]+)").matcher(e.metrics().scrape());
        return m.find() ? (long) Double.parseDouble(m.group(1)) : -1;
    }
}
