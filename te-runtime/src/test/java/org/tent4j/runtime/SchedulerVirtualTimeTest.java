package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.tent4j.api.Batch;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.runtime.peers.RemoteSegment;
import org.tent4j.runtime.schedule.PathGroup;
import org.tent4j.testkit.ManualClock;

/**
 * The scheduler's view of time is the engine's clock. Path cooldowns: with a virtual clock, a paused path stays paused
 * however long the test really takes, and is tried again exactly when the clock passes its cooldown (which doubles
 * after a failed probe); meanwhile its queue moves to the next transport, so every transfer completes. Path speeds:
 * a transport that holds its slices until the test settles them lets the test say, in virtual time, how long each
 * path takes per slice, so what the scheduler measures, and the choices that follow, do not depend on how loaded the
 * machine running the test is.
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

    @Test
    void aMeasuredSlowPathIsLeftOutWhenTheFastOneDrainsTheBacklogFirst() throws Exception {
        ManualClock clock = new ManualClock();
        TransferEngine target = TransferEngine.create(EngineTest.cfg().build());
        engines.add(target);
        // 1 MiB = 4 slices of 256 KiB; one slice in flight per path, so the fast path is full after every post
        TransferEngineImpl initiator = new TransferEngineImpl(EngineTest.cfg().set("transports.inproc.paths", 2)
                .set("transports.inproc.held", true).set("paths.max_inflight", 1).set("slice.size", "256k").build(), clock);
        engines.add(initiator);
        RegisteredMemory remote = target.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        EngineTest.fill(local.segment(), 17);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        TransferRequest r = TransferRequest.builder(Opcode.WRITE, local.segment(), seg, remote.address()).require("inproc").build();
        VirtualPaths paths = new VirtualPaths(initiator, (RemoteSegment) seg, clock, new long[] {MS, 100 * MS});

        // one slice, alone: it opens the connection and measures p0 (both paths start on the same guess, p0 first)
        paths.transfer(TransferRequest.builder(Opcode.WRITE, local.segment().asSlice(0, 256 << 10), seg, remote.address())
                .require("inproc").build());
        PathGroup g = initiator.router().group((RemoteSegment) seg, "inproc");
        assertEquals(1, (long) g.path(0).completedSlices());
        // p1, unmeasured, is guessed faster than p0 and gets a slice; the rest waits for the faster of the two
        paths.transfer(r);
        assertEquals(1, (long) g.path(1).completedSlices(), "the unmeasured path was not tried");
        assertEquals(4, (long) g.path(0).completedSlices());
        for (int i = 0; i < 5; i++) {
            paths.transfer(r);
        }
        assertEquals(1, (long) g.path(1).completedSlices(), "a path 100 ms per slice slow got slices that the fast path "
                + "(1 ms per slice) would have finished sooner, holding back the end of the transfer");
        assertEquals(24, (long) g.path(0).completedSlices());
        assertEquals(EngineTest.crc(local.segment()), EngineTest.crc(remote.segment()));
    }

    private static final long MS = 1_000_000;

    /**
     * Runs transfers over an inproc connection whose transport holds every slice ({@code held}) and settles them one at
     * a time on the test's thread, each when the virtual clock reaches its post time plus its path's latency, earliest
     * first: a discrete-event simulation of paths of known speed. The scheduler posts the next slices at the virtual
     * time of the settlement, from the settling thread or (the connect, the sweeper) another one, which is waited for
     * when nothing else is held. So the order is exact while at most one slice is in flight at a time, as below.
     */
    private static final class VirtualPaths {
        private final TransferEngineImpl engine;
        private final RemoteSegment seg;
        private final ManualClock clock;
        private final long[] latencyNanos;
        private final BlockingQueue<InProcessTransportProvider.Held> posted;
        private final Map<InProcessTransportProvider.Held, Long> due = new HashMap<>();

        VirtualPaths(TransferEngineImpl engine, RemoteSegment seg, ManualClock clock, long[] latencyNanos) {
            this.engine = engine;
            this.seg = seg;
            this.clock = clock;
            this.latencyNanos = latencyNanos;
            this.posted = InProcessTransportProvider.held("inproc", engine.segmentName());
        }

        void transfer(TransferRequest r) throws Exception {
            try (Batch b = engine.allocateBatch(1)) {
                b.submit(List.of(r));
                CompletableFuture<TransferStatus> done = b.completion(0);
                while (!done.isDone()) {
                    settleNext(done);
                }
                TransferStatus s = done.get();
                assertEquals(TransferState.COMPLETED, s.state(), s.toString());
            }
        }

        private void settleNext(CompletableFuture<?> done) throws InterruptedException {
            awaitPosts(done);
            InProcessTransportProvider.Held next = null;
            for (Map.Entry<InProcessTransportProvider.Held, Long> e : due.entrySet()) {
                if (next == null || e.getValue() < due.get(next)) {
                    next = e.getKey();
                }
            }
            if (next == null) {
                return; // the task ended meanwhile
            }
            long at = due.remove(next);
            clock.advance(Math.max(0, at - clock.nanoTime()));
            next.settle().run();
        }

        /**
         * Takes in what the scheduler posted since the last settlement: it reserves a path before posting there, so
         * once every byte in flight on the paths is held here no post is under way. Waits for the first post of a
         * transfer (the connection may still be opening on a worker), or for the task's end.
         */
        private void awaitPosts(CompletableFuture<?> done) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            for (;;) {
                for (InProcessTransportProvider.Held h; (h = posted.poll()) != null; ) {
                    due.put(h, clock.nanoTime() + latencyNanos[h.slice().path()]);
                }
                long heldBytes = due.keySet().stream().mapToLong(h -> h.slice().length()).sum();
                PathGroup g = engine.router().group(seg, "inproc");
                double reserved = 0;
                for (int i = 0; g != null && i < g.pathCount(); i++) {
                    reserved += g.path(i).inflightBytes();
                }
                if ((heldBytes > 0 && reserved == heldBytes) || done.isDone()) {
                    return;
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError("no post within 10 s: " + heldBytes + " bytes held, " + reserved + " reserved");
                }
                InProcessTransportProvider.Held h = posted.poll(10, TimeUnit.MILLISECONDS);
                if (h != null) {
                    due.put(h, clock.nanoTime() + latencyNanos[h.slice().path()]);
                }
            }
        }
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
