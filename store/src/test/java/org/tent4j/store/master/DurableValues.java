package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.client.PutResult;
import org.tent4j.store.client.StoreClient;

/** Values put before a master stops and read back after it started again, for the durable master's tests. */
final class DurableValues {
    private DurableValues() {
    }

    /** A fresh engine on loopback, added to {@code engines} for the caller to close. */
    static TransferEngine engine(List<TransferEngine> engines) {
        TransferEngine e = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1").build());
        engines.add(e);
        return e;
    }

    /** Puts {@code n} random values of up to 32 KiB as {@code prefix0..}, each acknowledged STORED. */
    static List<byte[]> put(StoreClient user, String prefix, int n, long seed) {
        return put(user, prefix, n, seed, ReplicateConfig.replicas(1));
    }

    /** As above, with {@code config}: each acknowledged STORED with as many replicas as it asks. */
    static List<byte[]> put(StoreClient user, String prefix, int n, long seed, ReplicateConfig config) {
        Random rnd = new Random(seed);
        List<byte[]> values = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            byte[] v = new byte[1 + rnd.nextInt(32 << 10)];
            rnd.nextBytes(v);
            values.add(v);
            PutResult r = user.put(prefix + i, v, config);
            assertEquals(PutResult.Status.STORED, r.status(), prefix + i);
            assertEquals(config.replicas(), r.replicas(), prefix + i + ": " + r.locations());
            if (!config.preferredSegments().isEmpty()) {
                assertEquals(config.preferredSegments().get(0), r.locations().get(0).segmentId(), prefix + i);
            }
        }
        return values;
    }

    /** Every value reads back whole: CRC-equal (a short message when not) and byte-equal. */
    static void assertReadBack(StoreClient user, String prefix, List<byte[]> values) {
        for (int i = 0; i < values.size(); i++) {
            byte[] got = user.get(prefix + i);
            assertEquals(crc(values.get(i)), crc(got), prefix + i);
            assertArrayEquals(values.get(i), got);
        }
    }

    private static long crc(byte[] b) {
        CRC32 c = new CRC32();
        c.update(b);
        return c.getValue();
    }
}
