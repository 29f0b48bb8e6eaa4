package org.tent4j.store.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * The copying batch puts ({@code putBatch} of arrays, {@code putBatchBuffers} of buffers) stage values through a client's
 * staging memory, here 64 KiB against batches several times larger, and answer per key; every byte is CRC-checked on
 * the way back.
 */
class CopyingBatchPutTest {
    private static final int STAGING = 64 << 10;
    private static LoopbackStore store;
    private static StoreClient node;
    private static StoreClient user;

    @BeforeAll
    static void start() throws Exception {
        store = LoopbackStore.start();
        node = store.client(1 << 20);
        node.contribute(16 << 20);
        user = store.client(STAGING);
    }

    @AfterAll
    static void stop() {
        for (StoreClient c : new StoreClient[]{user, node}) {
            if (c != null) {
                c.close();
            }
        }
        if (store != null) {
            store.close();
        }
    }

    private static List<String> keys(String prefix, int n) {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            keys.add(prefix + i);
        }
        return keys;
    }

    private static void assertStoredIntact(List<String> keys, List<byte[]> values, List<Outcome<PutResult>> out) {
        assertEquals(keys.size(), out.size());
        for (int i = 0; i < keys.size(); i++) {
            PutResult r = out.get(i).get();
            assertEquals(PutResult.Status.STORED, r.status(), keys.get(i));
            assertEquals(1, r.replicas(), keys.get(i));
            assertEquals(StoreClientTest.crc(values.get(i)), StoreClientTest.crc(user.get(keys.get(i))), keys.get(i));
        }
    }

    @Test
    void arraysLargerTogetherThanTheStagingMemoryAreStoredIntact() {
        // 40 values of 1 to 20 KiB, about 400 KiB together: several staged groups, plus one value larger than staging
        List<String> keys = keys("copy/arr/", 41);
        List<byte[]> values = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            values.add(StoreClientTest.random(1024 + i * 487, i));
        }
        values.add(StoreClientTest.random(STAGING + 4096, 99));
        assertStoredIntact(keys, values, user.putBatch(keys, values, ReplicateConfig.defaults()));
        assertEquals(PutResult.Status.ALREADY_EXISTS, user.putBatch(List.of(keys.get(3)), List.of(new byte[]{1}),
                ReplicateConfig.defaults()).getFirst().get().status(), "the first value is kept");
        assertEquals(StoreClientTest.crc(values.get(3)), StoreClientTest.crc(user.get(keys.get(3))));
    }

    @Test
    void buffersHeapDirectAndReadOnlyAreStoredFromPositionToLimitAndLeftAsTheyWere() {
        List<String> keys = keys("copy/buf/", 12);
        List<byte[]> values = new ArrayList<>();
        List<ByteBuffer> buffers = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            byte[] v = StoreClientTest.random(16 << 10, 100 + i);
            values.add(v);
            ByteBuffer b = switch (i % 3) {
                case 0 -> ByteBuffer.allocateDirect(v.length).put(v).flip();
                // a value in the middle of a larger array: position 7, limit 7 + length
                case 1 -> ByteBuffer.wrap(concat(new byte[7], v, new byte[5]), 7, v.length);
                default -> ByteBuffer.wrap(v).asReadOnlyBuffer();
            };
            buffers.add(b);
        }
        List<Integer> positions = buffers.stream().map(ByteBuffer::position).toList();
        assertStoredIntact(keys, values, user.putBatchBuffers(keys, buffers, ReplicateConfig.defaults()));
        assertEquals(positions, buffers.stream().map(ByteBuffer::position).toList(), "positions untouched");
    }

    @Test
    void mismatchedOrNullValuesAreRefusedBeforeAnythingIsStored() {
        StoreException e = assertThrows(StoreException.class, () -> user.putBatch(List.of("copy/bad/a", "copy/bad/b"),
                List.of(new byte[8]), ReplicateConfig.defaults()));
        assertEquals(StoreError.INVALID_PARAMS, e.error());
        assertTrue(e.getMessage().contains("2 keys but 1 values"), e.getMessage());
        List<byte[]> withNull = Arrays.asList(new byte[8], null);
        e = assertThrows(StoreException.class, () -> user.putBatch(List.of("copy/bad/a", "copy/bad/b"), withNull,
                ReplicateConfig.defaults()));
        assertEquals(StoreError.INVALID_PARAMS, e.error());
        assertTrue(e.getMessage().contains("copy/bad/b"), e.getMessage());
        assertFalse(user.exists("copy/bad/a"), "nothing was stored");
        assertFalse(user.exists("copy/bad/b"));
    }

    private static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        byte[] out = new byte[n];
        int off = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, off, p.length);
            off += p.length;
        }
        return out;
    }
}
