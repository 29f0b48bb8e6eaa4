package org.tent4j.store.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.Tier;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.testkit.Poll;

/**
 * A put refused because every byte is leased waits for the leases to end and is then stored (issue 28), rather than
 * failing at once, whether single, in a batch or in a session; a refusal that no waiting cures (everything hard-pinned) fails after one try.
 */
class RoomWaitTest {
    private static final int SMALL = 4096;

    @Test
    void aPutIntoAStoreFullOfLeasedObjectsWaitsForTheLeasesToEnd() throws Exception {
        AtomicLong now = new AtomicLong(1_000_000_000L);
        MasterConfig d = MasterConfig.defaults();
        // no eviction ahead of need while the store fills (its evictor would take objects not yet read)
        MasterConfig fullUp = new MasterConfig(d.leaseTtl(), d.defaultSoftPinTtl(), d.maxSoftPinTtl(), 1.0, d.evictionRatio(),
                d.clientTtl(), d.putDiscardTimeout(), d.putReleaseTimeout(), d.placement(), d.maxKeyBytes(), d.maxReplicas(),
                d.shards());
        try (LoopbackStore store = LoopbackStore.start(now::get, fullUp)) {
            StoreMaster master = store.server().master();
            StoreClient client = StoreClient.builder(store.engine(), store.address()).clock(now::get)
                    .heartbeatInterval(Duration.ZERO).stagingBytes(1 << 20).reservationBytes(0) // every put asks the master
                    .rpcTimeout(Duration.ofSeconds(20)).connect();
            try {
                long capacity = client.contribute(1 << 20).size();
                int n = 0;
                while (master.segments().getFirst().used() + SMALL <= capacity) {
                    client.put("small/" + n++, new byte[SMALL], ReplicateConfig.defaults());
                }
                for (int i = 0; i < n; i++) {
                    client.get("small/" + i); // leased: nothing may be evicted for 10 s of the master's clock
                }
                byte[] big = new byte[256 << 10];
                new Random(28).nextBytes(big);
                List<byte[]> parts = List.of(new byte[128 << 10], new byte[128 << 10]);
                parts.forEach(new Random(29)::nextBytes);
                byte[] sessionValue = new byte[128 << 10];
                new Random(30).nextBytes(sessionValue);
                long failuresBefore = master.state().stats().allocationFailures();
                // soft-pinned: once the leases end, the room the three make is the small objects', not each other's
                ReplicateConfig pinned = ReplicateConfig.defaults().withSoftPin(Duration.ofMinutes(1));
                // a single put, a batch and a session, each waiting for room
                CompletableFuture<PutResult> put = CompletableFuture.supplyAsync(() ->
                        client.put("big", big, pinned));
                CompletableFuture<List<Outcome<PutResult>>> batch = CompletableFuture.supplyAsync(() ->
                        client.putBatch(List.of("batch/0", "batch/1"), parts, pinned));
                CompletableFuture<List<Outcome<PutResult>>> session = CompletableFuture.supplyAsync(() -> {
                    RegisteredMemory src = client.engine().allocate(sessionValue.length, Location.CPU, Permission.READ_WRITE);
                    try (PutSession s = client.putSession(List.of("session/0"), List.of((long) sessionValue.length),
                            pinned)) {
                        MemorySegment.copy(sessionValue, 0, src.segment(), ValueLayout.JAVA_BYTE, 0, sessionValue.length);
                        s.write(0, 0, src.segment());
                        return s.end();
                    } finally {
                        client.engine().unregister(src);
                    }
                });
                // each refused about twice (so waiting, not failed) until the master's clock passes the leases
                Poll.until("the waiting puts refused", Duration.ofSeconds(15), Duration.ofMillis(1), () ->
                        master.state().stats().allocationFailures() >= failuresBefore + 6
                                || put.isDone() || batch.isDone() || session.isDone());
                assertFalse(put.isDone(), "the put waits while every byte is leased");
                assertFalse(batch.isDone(), "the batch waits while every byte is leased");
                assertFalse(session.isDone(), "the session's start waits while every byte is leased");
                now.addAndGet(Duration.ofSeconds(11).toNanos());
                assertEquals(PutResult.Status.STORED, put.get(15, TimeUnit.SECONDS).status());
                assertArrayEquals(big, client.get("big"));
                List<Outcome<PutResult>> b = batch.get(15, TimeUnit.SECONDS);
                List<Outcome<PutResult>> ses = session.get(15, TimeUnit.SECONDS);
                for (int i = 0; i < 2; i++) {
                    assertEquals(PutResult.Status.STORED, b.get(i).get().status(), "batch/" + i);
                    assertArrayEquals(parts.get(i), client.get("batch/" + i));
                }
                assertEquals(PutResult.Status.STORED, ses.getFirst().get().status());
                assertArrayEquals(sessionValue, client.get("session/0"));
            } finally {
                client.close();
            }
        }
    }

    @Test
    void aRefusalThatNoWaitCuresFailsAtOnce() throws Exception {
        AtomicLong now = new AtomicLong(1_000_000_000L);
        try (LoopbackStore store = LoopbackStore.start(now::get)) {
            StoreMaster master = store.server().master();
            StoreClient client = StoreClient.builder(store.engine(), store.address()).clock(now::get)
                    .heartbeatInterval(Duration.ZERO).stagingBytes(1 << 20).reservationBytes(0).connect();
            try {
                long capacity = client.contribute(1 << 20).size();
                for (int i = 0; master.segments().getFirst().used() + 64 * SMALL <= capacity; i++) {
                    client.put("pinned/" + i, new byte[64 * SMALL], ReplicateConfig.defaults().withHardPin());
                }
                long failuresBefore = master.state().stats().allocationFailures();
                StoreException e = assertThrows(StoreException.class, () ->
                        client.put("big", new byte[512 << 10], ReplicateConfig.defaults()));
                assertEquals(StoreError.NO_AVAILABLE_HANDLE, e.error(), e.getMessage());
                assertTrue(e.getMessage().contains("pinned") && !e.isTransient(), e.getMessage());
                assertEquals(1, master.state().stats().allocationFailures() - failuresBefore, "asked once: " + e.getMessage());
            } finally {
                client.close();
            }
        }
    }

    @Test
    void aPutWaitingOnAStalledNodesOffloadGivesUpAtTheClientsBoundNamingTheNode() throws Exception {
        AtomicLong now = new AtomicLong(1_000_000_000L);
        try (LoopbackStore store = LoopbackStore.start(now::get)) {
            StoreMaster master = store.server().master();
            // the only disk is a node's that never polls for its tasks: an offload to it stays in flight until its
            // deadline (30 s of the master's clock, which this test never moves)
            master.mount("stalled", new SegmentSpec("stalled-disk", "stalled", "h", 1L << 50, 4 << 20, Tier.DISK,
                    "/d/stalled"), 1L);
            StoreClient client = StoreClient.builder(store.engine(), store.address()).clock(now::get)
                    .heartbeatInterval(Duration.ZERO).stagingBytes(1 << 20).reservationBytes(0)
                    .rpcTimeout(Duration.ofSeconds(2)).connect();
            try {
                long capacity = client.contribute(1 << 20).size();
                for (int i = 0; master.segments().getFirst().used() + 64 * SMALL <= capacity; i++) {
                    client.put("v/" + i, new byte[64 * SMALL], ReplicateConfig.defaults());
                }
                long t0 = System.nanoTime();
                StoreException e = assertThrows(StoreException.class, () ->
                        client.put("big", new byte[64 * SMALL], ReplicateConfig.defaults()));
                long waitedMillis = (System.nanoTime() - t0) / 1_000_000;
                assertEquals(StoreError.NO_AVAILABLE_HANDLE, e.error(), e.getMessage());
                assertTrue(e.getMessage().contains("waited") && e.getMessage().contains("runs on node 'stalled'")
                        && e.getMessage().contains("given up in 30000 ms"), e.getMessage());
                assertTrue(waitedMillis >= 1_500 && waitedMillis < 20_000, "gave up at the client's bound: " + waitedMillis);
                assertFalse(master.state().exists("big"), "nothing stored");
                assertEquals(1, master.state().stats().tiering().offloadsStarted(), "its tries started one offload");
            } finally {
                client.close();
            }
        }
    }
}
