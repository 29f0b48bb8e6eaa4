package org.tent4j.store.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;

import org.junit.jupiter.api.Test;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ManualClock;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.MasterState;
import org.tent4j.store.rpc.MasterServer;

/**
 * A write flood several times the pool's size: after every housekeeping round usage is back under the high
 * watermark, and leased, hard-pinned and soft-pinned objects are all still there with their bytes.
 */
class EvictionFloodTest {

    @Test
    void floodStaysUnderTheWatermarkAndKeepsLeasedAndPinnedObjects() throws Exception {
        ManualClock clock = new ManualClock();
        try (MasterServer server = MasterServer.start(MasterConfig.defaults(), clock, "127.0.0.1", 0, 0);
             TransferEngine e1 = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1").build());
             TransferEngine e2 = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1").build())) {
            String address = "127.0.0.1:" + server.port();
            StoreClient node = StoreClient.builder(e1, address).stagingBytes(1 << 20).connect();
            StoreClient writer = StoreClient.builder(e2, address).stagingBytes(1 << 20).connect();
            try {
                node.contribute(2 << 20);
                node.contribute(2 << 20);
                long capacity = 4 << 20;
                byte[] hard = value(64 << 10, 1);
                byte[] soft = value(64 << 10, 2);
                byte[] leased = value(64 << 10, 3);
                writer.put("hard", hard, ReplicateConfig.defaults().withHardPin());
                writer.put("soft", soft, ReplicateConfig.defaults().withSoftPin(null));
                writer.put("leased", leased, ReplicateConfig.defaults());
                assertArrayEquals(leased, writer.get("leased")); // takes a 10 s lease; virtual time stands still
                long maxAfterRound = 0;
                for (int i = 0; i < 160; i++) { // 10 MiB into 4 MiB
                    writer.put("flood/" + i, value(64 << 10, 100 + i), ReplicateConfig.defaults());
                    server.master().tick();
                    long used = server.master().segments().stream().mapToLong(MasterState.SegmentView::used).sum();
                    maxAfterRound = Math.max(maxAfterRound, used);
                    assertTrue(used <= 0.90 * capacity, "after put " + i + " and a housekeeping round " + used + " of " + capacity + " bytes used");
                }
                assertTrue(server.master().state().stats().evictedObjects() > 100, "the flood was evicted");
                assertArrayEquals(hard, writer.get("hard"));
                assertArrayEquals(soft, writer.get("soft"));
                assertArrayEquals(leased, writer.get("leased"));
                assertArrayEquals(value(64 << 10, 100 + 159), writer.get("flood/159"));
            } finally {
                writer.close();
                node.close();
            }
        }
    }

    private static byte[] value(int n, long seed) {
        byte[] v = new byte[n];
        new Random(seed).nextBytes(v);
        return v;
    }
}
