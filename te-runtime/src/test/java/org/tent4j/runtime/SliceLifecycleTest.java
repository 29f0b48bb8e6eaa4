package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.tent4j.api.Batch;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.testkit.ManualClock;

/** Pooled slices: a second settlement is detected and ignored; a transport that can cancel is asked to when a task ends. */
class SliceLifecycleTest {
    @RegisterExtension
    final OpenEngines engines = new OpenEngines();

    @Test
    void aSecondSettlementOfARecycledSliceIsCountedAndNeverAppliedToAnotherTask() {
        TransferEngine target = engines.open(EngineTest.cfg());
        // on a clock that stands still no slice leaves its quarantine, so every second settlement, however late the
        // transport's thread gets to it, meets an idle slice: the outcome does not depend on scheduling
        TransferEngine initiator = new TransferEngineImpl(EngineTest.cfg().set("transports.inproc.double_complete", true).build(),
                new ManualClock());
        engines.keep(initiator);
        RegisteredMemory remote = target.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        EngineTest.fill(local.segment(), 9);
        int slices = 0;
        for (int i = 0; i < 4; i++) {
            // each task's slices come from the pool that the previous task's (doubly settled) slices went back to
            TransferStatus s = initiator.transfer(TransferRequest.write(local.segment().asSlice(i * (256L << 10), 256 << 10), seg,
                    remote.address() + i * (256L << 10)));
            assertEquals(TransferState.COMPLETED, s.state(), s.toString());
            assertEquals(256 << 10, s.bytesTransferred(), "a stale settlement was counted as another task's bytes");
            slices += 4;
        }
        assertEquals(EngineTest.crc(local.segment()), EngineTest.crc(remote.segment()));
        // the last slice's second settlement comes after its first ended the transfer, on the transport's thread
        String expected = "tent4j_slice_stale_settlements_total{segment=\"" + initiator.segmentName() + "\"} " + slices + ".0";
        String scrape = ((TransferEngineImpl) initiator).metrics().scrape();
        for (long deadline = System.nanoTime() + 10_000_000_000L; !scrape.contains(expected) && System.nanoTime() < deadline; ) {
            Thread.onSpinWait();
            scrape = ((TransferEngineImpl) initiator).metrics().scrape();
        }
        assertTrue(scrape.contains(expected), scrape);
    }

    @Test
    void endingATaskCancelsItsPostedSlicesOnATransportThatCanCancel() throws Exception {
        TransferEngine target = engines.open(EngineTest.cfg());
        TransferEngine initiator = engines.open(EngineTest.cfg().set("transports.inproc.cancellable", true)
                .set("transports.inproc.slow_delay", "30s"));
        RegisteredMemory remote = target.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        String me = initiator.segmentName();
        Batch b = initiator.allocateBatch(1);
        b.submit(List.of(TransferRequest.read(local.segment().asSlice(0, 512 << 10), seg, remote.address())));
        InProcessTransportProvider.firstPost("inproc", me).get(10, TimeUnit.SECONDS);
        assertTrue(b.cancel(0));
        // each posted slice is held for 30 s; only canceling them lets the task be reported now
        CompletableFuture<TransferStatus> done = b.completion(0);
        TransferStatus s = done.get(10, TimeUnit.SECONDS);
        assertEquals(TransferState.CANCELED, s.state(), s.toString());
        assertEquals(0, InProcessTransportProvider.inFlight("inproc", me));
        assertEquals(0, InProcessTransportProvider.COPIES.getOrDefault("inproc@" + me, new java.util.concurrent.atomic.AtomicLong()).get());
        String scrape = ((TransferEngineImpl) initiator).metrics().scrape();
        assertTrue(scrape.contains("tent4j_slice_stale_settlements_total{segment=\"" + me + "\"} 0.0"), scrape);
        // the paths' in-flight accounting was given back: a new transfer is not held up by ghosts
        assertTrue(scrape.contains("tent4j_path_inflight_bytes{path=\"p0\",peer=\"" + target.segmentName() + "\",segment=\"" + me
                + "\",transport=\"inproc\"} 0.0"), scrape);
    }
}
