package org.tent4j.store.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.Tier;
import org.tent4j.store.rpc.Wire;

/**
 * A put says how many replicas it stored, where, and how many it asked for: two nodes, one with a segment of 8 MiB and
 * one with 64 KiB, so a value over 64 KiB asking two replicas finds room on one segment only.
 */
class PutReplicasTest {
    private static LoopbackStore store;
    private static StoreClient big;
    private static StoreClient small;
    private static StoreClient user;
    private static SegmentSpec bigSeg;
    private static SegmentSpec smallSeg;

    @BeforeAll
    static void start() throws Exception {
        store = LoopbackStore.start();
        big = store.client(1 << 20);
        small = store.client(1 << 20);
        user = store.client(4 << 20);
        bigSeg = big.contribute(8 << 20);
        smallSeg = small.contribute(64 << 10);
    }

    @AfterAll
    static void stop() {
        for (StoreClient c : new StoreClient[]{user, small, big}) {
            if (c != null) {
                c.close();
            }
        }
        if (store != null) {
            store.close();
        }
    }

    /** The segments the master lists for {@code key}: what a reader will see. */
    private static Set<String> masterSegments(String key) {
        return user.master().getReplicaList(key).getReplicasList().stream().map(Wire::replica)
                .map(ReplicaLocation::segmentId).collect(Collectors.toSet());
    }

    private static Set<String> segments(PutResult r) {
        return r.locations().stream().map(PutResult.Replica::segmentId).collect(Collectors.toSet());
    }

    @Test
    void twoAskedWithRoomOnOneSegmentIsStoredWithOneReplicaAndSaysSo() {
        byte[] v = StoreClientTest.random(256 << 10, 1);
        PutResult r = user.put("rep/one-of-two", v, ReplicateConfig.replicas(2));
        assertEquals(PutResult.Status.STORED, r.status(), r.toString());
        assertEquals(1, r.replicas(), r.toString());
        assertEquals(2, r.asked(), r.toString());
        assertTrue(r.underReplicated(), r.toString());
        assertEquals(List.of(new PutResult.Replica(bigSeg.id(), Tier.MEMORY)), r.locations());
        assertEquals(masterSegments("rep/one-of-two"), segments(r), "the result names where the master keeps it");
        assertEquals(StoreClientTest.crc(v), StoreClientTest.crc(user.get("rep/one-of-two")));
    }

    @Test
    void batchResultsCountReplicasPerKey() {
        // two 4 KiB values fit both segments, two 200 KiB values only the large one; one call, two-call path
        List<String> keys = List.of("rep/b/small0", "rep/b/big0", "rep/b/small1", "rep/b/big1");
        List<byte[]> values = List.of(StoreClientTest.random(4096, 10), StoreClientTest.random(200 << 10, 11),
                StoreClientTest.random(4096, 12), StoreClientTest.random(200 << 10, 13));
        RegisteredMemory src = user.engine().allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        try {
            List<MemorySegment> srcs = new ArrayList<>();
            long off = 0;
            for (byte[] v : values) {
                srcs.add(src.segment().asSlice(off, v.length).copyFrom(MemorySegment.ofArray(v)));
                off += v.length;
            }
            List<Outcome<PutResult>> out = user.putBatchFrom(keys, srcs, ReplicateConfig.replicas(2));
            for (int i = 0; i < keys.size(); i++) {
                PutResult r = out.get(i).get();
                boolean fitsBoth = values.get(i).length == 4096;
                assertEquals(PutResult.Status.STORED, r.status(), keys.get(i));
                assertEquals(2, r.asked(), keys.get(i));
                assertEquals(fitsBoth ? 2 : 1, r.replicas(), keys.get(i) + ": " + r);
                assertEquals(fitsBoth ? Set.of(bigSeg.id(), smallSeg.id()) : Set.of(bigSeg.id()), segments(r), keys.get(i));
                assertEquals(masterSegments(keys.get(i)), segments(r), keys.get(i));
                assertEquals(StoreClientTest.crc(values.get(i)), StoreClientTest.crc(user.get(keys.get(i))), keys.get(i));
            }
        } finally {
            user.engine().unregister(src);
        }
    }

    @Test
    void reservedPutAndSessionCountTheirReplicas() {
        // one replica asked of a small value: the one-round-trip path through a reservation
        PutResult r = user.put("rep/reserved", StoreClientTest.random(1000, 20), ReplicateConfig.replicas(1));
        assertEquals(1, r.replicas(), r.toString());
        assertEquals(1, r.asked());
        assertFalse(r.underReplicated());
        assertEquals(masterSegments("rep/reserved"), segments(r));
        PutResult again = user.put("rep/reserved", StoreClientTest.random(10, 21), ReplicateConfig.replicas(1));
        assertEquals(PutResult.Status.ALREADY_EXISTS, again.status());
        assertEquals(0, again.replicas(), "this put stored nothing");

        RegisteredMemory src = user.engine().allocate(300 << 10, Location.CPU, Permission.READ_WRITE);
        try (PutSession s = user.putSession(List.of("rep/session"), List.of(300L << 10), ReplicateConfig.replicas(2))) {
            byte[] v = StoreClientTest.random(300 << 10, 22);
            s.write(0, 0, src.segment().copyFrom(MemorySegment.ofArray(v)));
            PutResult e = s.end().getFirst().get();
            assertEquals(1, e.replicas(), e.toString());
            assertEquals(2, e.asked());
            assertEquals(Set.of(bigSeg.id()), segments(e));
            assertEquals(StoreClientTest.crc(v), StoreClientTest.crc(user.get("rep/session")));
        } finally {
            user.engine().unregister(src);
        }
    }
}
