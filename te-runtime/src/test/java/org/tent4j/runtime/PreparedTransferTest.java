package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.PreparedTransfer;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.testkit.ManualClock;

/** Prepare once, post many: every post moves every byte, a stale settlement never reaches a later post, misuse is refused. */
class PreparedTransferTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** 100 KiB: two slices of the tests' 64 KiB slice size, the second one short. */
    private static final long BLOCK = 100 << 10;
    private static final int REQUESTS = 8;

    @RegisterExtension
    final OpenEngines engines = new OpenEngines();

    private static List<TransferRequest> requests(Opcode op, RegisteredMemory local, SegmentHandle seg, RegisteredMemory remote) {
        List<TransferRequest> out = new ArrayList<>();
        for (int i = 0; i < REQUESTS; i++) {
            out.add(TransferRequest.builder(op, local.segment().asSlice(i * BLOCK, BLOCK), seg, remote.address() + i * BLOCK).build());
        }
        return out;
    }

    @Test
    void repostingManyTimesMovesEveryByteEveryTime() throws Exception {
        TransferEngine target = engines.open(EngineTest.cfg());
        TransferEngine initiator = engines.open(EngineTest.cfg());
        RegisteredMemory remote = target.allocate(REQUESTS * BLOCK, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(REQUESTS * BLOCK, Location.CPU, Permission.READ_WRITE);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        PreparedTransfer write = initiator.prepare(requests(Opcode.WRITE, local, seg, remote));
        PreparedTransfer read = initiator.prepare(requests(Opcode.READ, local, seg, remote));
        assertEquals(TransferState.INITIAL, write.state());
        for (int round = 1; round <= 60; round++) {
            // new bytes every round, so a post that moved nothing (or an earlier post's bytes) fails the checksum
            EngineTest.fill(local.segment(), round);
            assertEquals(round, write.post());
            assertEquals(TransferState.COMPLETED, write.await(WAIT), () -> write.status(0).toString());
            assertEquals(REQUESTS * BLOCK, write.bytesCompleted());
            assertEquals(EngineTest.crc(local.segment()), EngineTest.crc(remote.segment()), "WRITE post " + round);

            EngineTest.fill(remote.segment(), 1000 + round);
            local.segment().fill((byte) 0);
            assertEquals(round, read.post());
            assertEquals(TransferState.COMPLETED, read.await(WAIT), () -> read.status(0).toString());
            for (int i = 0; i < REQUESTS; i++) {
                TransferStatus s = read.status(i);
                assertEquals(TransferState.COMPLETED, s.state(), s.toString());
                assertEquals(BLOCK, s.bytesTransferred());
            }
            assertEquals(EngineTest.crc(remote.segment()), EngineTest.crc(local.segment()), "READ post " + round);
        }
    }

    @Test
    void aLateSettlementAfterARepostIsDetectedAndNeverCountsTowardTheNewPost() throws Exception {
        TransferEngine target = engines.open(EngineTest.cfg());
        // a clock that stands still keeps every settled slice in the pool's quarantine, so each late settlement meets
        // an idle slice, however the threads run
        TransferEngineImpl initiator = engines.keep(new TransferEngineImpl(EngineTest.cfg()
                .set("transports.inproc.late_settle", true).build(), new ManualClock()));
        RegisteredMemory remote = target.allocate(REQUESTS * BLOCK, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(REQUESTS * BLOCK, Location.CPU, Permission.READ_WRITE);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        String me = initiator.segmentName();
        PreparedTransfer write = initiator.prepare(requests(Opcode.WRITE, local, seg, remote));
        int slicesPerPost = REQUESTS * 2;
        for (int round = 1; round <= 5; round++) {
            EngineTest.fill(local.segment(), round);
            write.post();
            if (round > 1) {
                // as many slices as a post has settle a second time while this post runs (or just after it ended)
                InProcessTransportProvider.settleLate("inproc", me, slicesPerPost);
            }
            assertEquals(TransferState.COMPLETED, write.await(WAIT), () -> write.status(0).toString());
            for (int i = 0; i < REQUESTS; i++) {
                assertEquals(BLOCK, write.status(i).bytesTransferred(), "a stale settlement was counted in post " + round);
            }
            assertEquals(EngineTest.crc(local.segment()), EngineTest.crc(remote.segment()));
        }
        InProcessTransportProvider.settleLate("inproc", me, slicesPerPost);
        long late = 5L * slicesPerPost; // every slice of every post settled twice
        String scrape = initiator.metrics().scrape();
        assertTrue(scrape.contains("tent4j_slice_stale_settlements_total{segment=\"" + me + "\"} " + late + ".0"), scrape);
        // and the prepared transfer is still usable: nothing stale is left in it
        write.post();
        assertEquals(TransferState.COMPLETED, write.await(WAIT));
    }

    @Test
    void postingWhileAPostIsInFlightIsRefusedAndLeavesThatPostAlone() throws Exception {
        TransferEngine target = engines.open(EngineTest.cfg());
        // every slice is held for 30 s unless canceled: a post stays in flight for as long as the test needs
        TransferEngine initiator = engines.open(EngineTest.cfg().set("transports.inproc.cancellable", true)
                .set("transports.inproc.slow_delay", "30s"));
        RegisteredMemory remote = target.allocate(REQUESTS * BLOCK, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(REQUESTS * BLOCK, Location.CPU, Permission.READ_WRITE);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        String me = initiator.segmentName();
        PreparedTransfer write = initiator.prepare(requests(Opcode.WRITE, local, seg, remote));

        assertEquals(1, write.post());
        InProcessTransportProvider.firstPost("inproc", me).get(10, TimeUnit.SECONDS);
        TransferException e = assertThrows(TransferException.class, write::post);
        assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
        assertTrue(e.getMessage().contains("post 1 of this prepared transfer") && e.getMessage().contains("still in flight"),
                e.getMessage());
        assertEquals(TransferState.PENDING, write.state());
        assertEquals(TransferState.PENDING, write.await(Duration.ofMillis(1)), "the refused post disturbed the running one");

        write.cancel();
        assertEquals(TransferState.CANCELED, write.await(WAIT));
        assertEquals(0, InProcessTransportProvider.inFlight("inproc", me));

        // two threads post at once: exactly one post starts, the other is told why
        CountDownLatch go = new CountDownLatch(1);
        List<CompletableFuture<Object>> racers = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            CompletableFuture<Object> r = new CompletableFuture<>();
            racers.add(r);
            Thread.ofPlatform().start(() -> {
                try {
                    go.await();
                    r.complete(write.post());
                } catch (Throwable t) {
                    r.complete(t);
                }
            });
        }
        go.countDown();
        Object a = racers.get(0).get(10, TimeUnit.SECONDS);
        Object b = racers.get(1).get(10, TimeUnit.SECONDS);
        Object won = a instanceof Long ? a : b;
        Object lost = a instanceof Long ? b : a;
        assertEquals(2L, won, a + " / " + b);
        assertTrue(lost instanceof TransferException t && t.code() == ErrorCode.INVALID_ARGUMENT
                && t.getMessage().contains("still in flight"), String.valueOf(lost));

        write.close();
        assertEquals(TransferState.CANCELED, write.await(WAIT));
        assertEquals(0, InProcessTransportProvider.inFlight("inproc", me));
        TransferException closed = assertThrows(TransferException.class, write::post);
        assertTrue(closed.getMessage().contains("is closed"), closed.getMessage());
    }

    @Test
    void aBadRequestIsRefusedAtPrepareNamingItAndOneThatStopsResolvingEndsInvalidInItsPost() throws Exception {
        TransferEngine target = engines.open(EngineTest.cfg());
        TransferEngine initiator = engines.open(EngineTest.cfg());
        RegisteredMemory remote = target.allocate(REQUESTS * BLOCK, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(REQUESTS * BLOCK, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory other = initiator.allocate(BLOCK, Location.CPU, Permission.READ_WRITE);
        SegmentHandle seg = initiator.openSegment(target.segmentName());

        List<TransferRequest> bad = new ArrayList<>(requests(Opcode.WRITE, local, seg, remote));
        bad.set(3, TransferRequest.write(local.segment().asSlice(0, BLOCK), seg, remote.address() + REQUESTS * BLOCK));
        TransferException e = assertThrows(TransferException.class, () -> initiator.prepare(bad));
        assertEquals(ErrorCode.OUT_OF_BOUNDS, e.code(), e.getMessage());
        assertTrue(e.getMessage().startsWith("request 3 of " + REQUESTS + " cannot be prepared"), e.getMessage());

        List<TransferRequest> mixed = new ArrayList<>(requests(Opcode.WRITE, local, seg, remote));
        mixed.set(0, TransferRequest.write(other.segment(), seg, remote.address()));
        PreparedTransfer write = initiator.prepare(mixed);
        write.post();
        assertEquals(TransferState.COMPLETED, write.await(WAIT));
        // the local buffer of request 0 goes away: that request is resolved again, fails, and only it ends INVALID
        initiator.unregister(other);
        write.post();
        assertEquals(TransferState.INVALID, write.await(WAIT));
        TransferStatus s0 = write.status(0);
        assertEquals(ErrorCode.ADDRESS_NOT_REGISTERED, s0.error(), s0.toString());
        for (int i = 1; i < REQUESTS; i++) {
            assertEquals(TransferState.COMPLETED, write.status(i).state());
        }
        assertEquals((REQUESTS - 1) * BLOCK, write.bytesCompleted());
    }
}
