package org.tent4j.store.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.rpc.Wire;

/** Get sessions and batch replica lists against a real master and real engines (one JVM, loopback). */
class GetSessionTest {
    private static LoopbackStore store;
    private static StoreClient nodeA;
    private static StoreClient nodeB;
    private static String address;
    private static final List<String> keys = new ArrayList<>();
    private static final List<byte[]> values = new ArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        store = LoopbackStore.start();
        address = store.address();
        nodeA = store.client(1 << 20);
        nodeB = store.client(1 << 20);
        nodeA.contribute(8 << 20);
        nodeB.contribute(8 << 20);
        Random r = new Random(11);
        for (int i = 0; i < 24; i++) {
            byte[] v = new byte[1000 + 97 * i];
            r.nextBytes(v);
            keys.add("gs/" + i);
            values.add(v);
            nodeA.put("gs/" + i, v, ReplicateConfig.replicas(i % 2 == 0 ? 2 : 1));
        }
    }

    @AfterAll
    static void stop() {
        for (StoreClient c : new StoreClient[]{nodeA, nodeB}) {
            if (c != null) {
                c.close();
            }
        }
        if (store != null) {
            store.close();
        }
    }

    @Test
    void batchReplicaListsDecodeToWhatEachKeyAloneAnswers() {
        List<String> asked = new ArrayList<>(keys);
        asked.add("gs/missing");
        var answer = nodeA.master().batchGetReplicaList(asked);
        for (int i = 0; i < keys.size(); i++) {
            List<ReplicaLocation> alone = Wire.replicas(nodeA.master().getReplicaList(keys.get(i)).getReplicasList());
            assertEquals(alone.size(), answer.replicas().get(i).size(), keys.get(i));
            assertTrue(answer.replicas().get(i).containsAll(alone), keys.get(i) + ": " + answer.replicas().get(i) + " vs " + alone);
            assertEquals(values.get(i).length, answer.items().get(i).getSize());
        }
        assertEquals(StoreError.OBJECT_NOT_FOUND.code(), answer.items().getLast().getStatus().getCode());
        assertTrue(answer.replicas().getLast().isEmpty());
    }

    @Test
    void readBatchReadsEveryValueUntilTheLeaseEndsThenRenewReadsAgain() {
        AtomicLong now = new AtomicLong();
        StoreClient reader = StoreClient.builder(store.engine(), address).clock(now::get).heartbeatInterval(Duration.ZERO).connect();
        RegisteredMemory buf = reader.engine().allocate(keys.size() * 4096L, Location.CPU, Permission.READ_WRITE);
        try {
            List<MemorySegment> dsts = new ArrayList<>();
            for (int i = 0; i < keys.size(); i++) {
                dsts.add(buf.segment().asSlice(i * 4096L, 4096));
            }
            List<String> asked = new ArrayList<>(keys);
            asked.add("gs/missing");
            GetSession s = reader.getSession(asked);
            assertFalse(s.leaseEnded());
            List<Outcome<Long>> got = s.readBatch(0, dsts);
            for (int i = 0; i < keys.size(); i++) {
                assertEquals(values.get(i).length, got.get(i).get(), keys.get(i));
                assertArrayEquals(values.get(i), dsts.get(i).asSlice(0, values.get(i).length).toArray(ValueLayout.JAVA_BYTE), keys.get(i));
            }
            // a window in the middle, and the missing key's own error
            List<Outcome<Long>> tail = s.readBatch(20, List.of(dsts.get(0), dsts.get(1), dsts.get(2), dsts.get(3), dsts.get(4)));
            assertEquals(values.get(23).length, tail.get(3).get());
            assertEquals(StoreError.OBJECT_NOT_FOUND, tail.get(4).error().error());
            StoreException outside = assertThrows(StoreException.class, () -> s.readBatch(24, List.of(dsts.get(0), dsts.get(1))));
            assertEquals(StoreError.INVALID_PARAMS, outside.error());
            assertTrue(outside.getMessage().contains("[24, 26) are outside a session of 25 keys"), outside.getMessage());
            List<Outcome<Long>> small = s.readBatch(23, List.of(dsts.get(0).asSlice(0, 10)));
            assertEquals(StoreError.INVALID_PARAMS, small.getFirst().error().error());

            now.addAndGet(Duration.ofSeconds(10).toNanos());
            assertTrue(s.leaseEnded());
            List<Outcome<Long>> late = s.readBatch(0, dsts.subList(0, 3));
            late.forEach(o -> assertEquals(StoreError.LEASE_EXPIRED, o.error().error()));
            assertTrue(late.getFirst().error().getMessage().contains("renew the session"), late.getFirst().error().getMessage());

            GetSession fresh = s.renew();
            assertFalse(fresh.leaseEnded());
            dsts.forEach(d -> d.fill((byte) 0));
            List<Outcome<Long>> again = fresh.readBatch(0, dsts);
            for (int i = 0; i < keys.size(); i++) {
                assertArrayEquals(values.get(i), dsts.get(i).asSlice(0, again.get(i).get()).toArray(ValueLayout.JAVA_BYTE), keys.get(i));
            }
        } finally {
            reader.engine().unregister(buf);
            reader.close();
        }
    }

    @Test
    void aBatchReadThatFinishesAfterTheLeaseIsDiscarded() {
        AtomicLong now = new AtomicLong();
        // every look at the clock is 6 s later: the fetch at 6 s (lease to 16 s), the reads start at 12 s and end at 18 s
        StoreClient reader = StoreClient.builder(store.engine(), address).clock(() -> now.addAndGet(6_000_000_000L))
                .heartbeatInterval(Duration.ZERO).connect();
        RegisteredMemory buf = reader.engine().allocate(2 * 4096L, Location.CPU, Permission.READ_WRITE);
        try {
            GetSession s = reader.getSession(keys.subList(0, 2));
            List<Outcome<Long>> got = s.readBatch(0, List.of(buf.segment().asSlice(0, 4096), buf.segment().asSlice(4096, 4096)));
            got.forEach(o -> assertEquals(StoreError.LEASE_EXPIRED, o.error().error()));
            assertTrue(got.getFirst().error().getMessage().contains("finished after its session's lease ended"));
            assertEquals(2, reader.leaseExpiredReads());
        } finally {
            reader.engine().unregister(buf);
            reader.close();
        }
    }
}
