package org.tent4j.store.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.StoreMaster;

/**
 * A put refused because every byte is leased waits for the leases to end and is then stored (issue 28), rather than
 * failing at once; a refusal that no waiting cures (everything hard-pinned) fails after one try.
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
                long failuresBefore = master.state().stats().allocationFailures();
                CompletableFuture<PutResult> put = CompletableFuture.supplyAsync(() ->
                        client.put("big", big, ReplicateConfig.defaults()));
                // refused twice (so waiting, not failed) until the master's clock passes the leases
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
                while (master.state().stats().allocationFailures() < failuresBefore + 2 && !put.isDone()
                        && System.nanoTime() < deadline) {
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
                }
                assertFalse(put.isDone(), "the put waits while every byte is leased");
                now.addAndGet(Duration.ofSeconds(11).toNanos());
                assertEquals(PutResult.Status.STORED, put.get(15, TimeUnit.SECONDS).status());
                assertArrayEquals(big, client.get("big"));
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
}
