package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.tent4j.api.Batch;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;

/**
 * A task is not reported ended while any of its slices can still write local memory, and unregister never frees
 * memory a slice is still posted on.
 */
class MemorySafetyTest {
    @RegisterExtension
    final OpenEngines engines = new OpenEngines();

    private record Pair(TransferEngine initiator, RegisteredMemory local, RegisteredMemory remote, SegmentHandle seg) {
    }

    /**
     * Path 0 of the initiator's inproc transport holds each slice for a while; path 1 denies every slice at once. The
     * first slice of a task goes to path 0 (both paths look alike then), so a denial always finds a sibling held.
     */
    private Pair pair(String slowDelay, String transferTimeout) {
        TransferEngine target = engines.open(EngineTest.cfg());
        TransferEngine initiator = engines.open(EngineTest.cfg().set(EngineConfig.TRANSFER_TIMEOUT, transferTimeout)
                .set("transports.inproc.paths", 2).set("transports.inproc.deny_path", 1)
                .set("transports.inproc.slow_path", 0).set("transports.inproc.slow_delay", slowDelay));
        RegisteredMemory remote = target.allocate(512 << 10, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(512 << 10, Location.CPU, Permission.READ_WRITE);
        return new Pair(initiator, local, remote, initiator.openSegment(target.segmentName()));
    }

    @Test
    void aTaskWhoseSliceWasDeniedIsReportedOnlyOnceItsSiblingsLeftTheTransport() throws Exception {
        Pair p = pair("150ms", "30s");
        String me = p.initiator().segmentName();
        CompletableFuture<Long> inFlightAtReport = new CompletableFuture<>();
        CompletableFuture<TransferStatus> f = p.initiator().submit(TransferRequest.builder(Opcode.READ, p.local().segment(), p.seg(),
                p.remote().address()).require("inproc").build());
        f.whenComplete((s, e) -> inFlightAtReport.complete(InProcessTransportProvider.inFlight("inproc", me)));
        TransferStatus s = f.get(10, TimeUnit.SECONDS);
        assertEquals(TransferState.FAILED, s.state(), s.toString());
        assertEquals(ErrorCode.PERMISSION_DENIED, s.error());
        assertEquals(0, inFlightAtReport.get(), "slices were still in the transport when the task was reported failed");
        assertTrue(InProcessTransportProvider.posts("inproc", me) >= 2, "both paths must have carried slices");
    }

    @Test
    void cancelAndBatchCloseReportOnlyOnceNothingIsInTheTransport() throws Exception {
        TransferEngine target = engines.open(EngineTest.cfg());
        TransferEngine initiator = engines.open(EngineTest.cfg().set("transports.inproc.slow_delay", "100ms"));
        RegisteredMemory remote = target.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        String me = initiator.segmentName();
        Batch a = initiator.allocateBatch(1);
        a.submit(List.of(TransferRequest.read(local.segment().asSlice(0, 512 << 10), seg, remote.address())));
        CompletableFuture<Long> atCancel = new CompletableFuture<>();
        a.completion(0).whenComplete((s, e) -> atCancel.complete(InProcessTransportProvider.inFlight("inproc", me)));
        InProcessTransportProvider.firstPost("inproc", me).get(10, TimeUnit.SECONDS);
        // canceled while its slices are in the transport (each is held 100 ms): reported only after they left it
        assertTrue(a.cancel(0));
        assertEquals(TransferState.CANCELED, a.completion(0).get(10, TimeUnit.SECONDS).state());
        assertEquals(0, atCancel.get(10, TimeUnit.SECONDS), "slices were in the transport when the canceled task was reported");

        Batch b = initiator.allocateBatch(2);
        b.submit(List.of(TransferRequest.read(local.segment().asSlice(0, 512 << 10), seg, remote.address()),
                TransferRequest.read(local.segment().asSlice(512 << 10, 512 << 10), seg, remote.address())));
        CompletableFuture<Long> atClose = new CompletableFuture<>();
        b.completion().whenComplete((s, e) -> atClose.complete(InProcessTransportProvider.inFlight("inproc", me)));
        b.close();
        TransferStatus all = b.completion().get(10, TimeUnit.SECONDS);
        assertEquals(TransferState.CANCELED, all.state(), all.toString());
        assertEquals(0, atClose.get(10, TimeUnit.SECONDS), "slices were in the transport when the closed batch completed");
    }

    @Test
    void unregisterWaitsForPostedSlicesAndRefusesToFreeWhatIsStillInFlight() throws Exception {
        Pair p = pair("600ms", "200ms");
        // one slice: it goes to path 0, which holds it for 600 ms, longer than unregister waits (transfer.timeout)
        CompletableFuture<TransferStatus> f = p.initiator().submit(TransferRequest.builder(Opcode.READ, p.local().segment().asSlice(0, 64 << 10),
                p.seg(), p.remote().address()).require("inproc").build());
        // wait until the transport holds a slice of it
        InProcessTransportProvider.firstPost("inproc", p.initiator().segmentName()).get(10, TimeUnit.SECONDS);
        if (!f.isDone()) {
            TransferException e = assertThrows(TransferException.class, () -> p.initiator().unregister(p.local()));
            assertEquals(ErrorCode.TIMEOUT, e.code());
            assertTrue(e.getMessage().contains("still posted") && e.getMessage().contains("memory stays allocated"), e.getMessage());
            // still alive: reading it does not fault, and it accepts no new request
            p.local().segment().get(ValueLayout.JAVA_BYTE, 0);
            TransferStatus again = p.initiator().transfer(TransferRequest.read(p.local().segment().asSlice(0, 4096), p.seg(), p.remote().address()));
            assertEquals(ErrorCode.ADDRESS_NOT_REGISTERED, again.error(), again.toString());
            f.get(10, TimeUnit.SECONDS);
        }
        assertEquals(0, InProcessTransportProvider.inFlight("inproc", p.initiator().segmentName()));
        p.initiator().unregister(p.local()); // nothing in flight now: it frees
        assertThrows(IllegalStateException.class, () -> p.local().segment().get(ValueLayout.JAVA_BYTE, 0));
    }

    @Test
    void unregisterFailsAndKeepsTheMemoryWhileATransportCannotFenceItAndRetrySucceeds() {
        TransferEngine e = engines.open(EngineTest.cfg().set("transports.inproc.refuse_unregister", 1));
        RegisteredMemory m = e.allocate(64 << 10, Location.CPU, Permission.READ_WRITE);
        TransferException refused = assertThrows(TransferException.class, () -> e.unregister(m));
        assertEquals(ErrorCode.TIMEOUT, refused.code(), refused.getMessage());
        assertTrue(refused.getMessage().contains("transport 'inproc' could not fence it off")
                && refused.getMessage().contains("memory stays allocated"), refused.getMessage());
        m.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) 1); // still alive
        assertTrue(e.segmentInfo(e.localSegment()).buffers().isEmpty(), "withdrawn from the descriptor all the same");
        e.unregister(m); // the transport lets go now: freed
        assertThrows(IllegalStateException.class, () -> m.segment().get(ValueLayout.JAVA_BYTE, 0));
    }
}
