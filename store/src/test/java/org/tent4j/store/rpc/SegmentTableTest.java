package org.tent4j.store.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.proto.BatchReplicaListResponse;
import org.tent4j.store.proto.ReplicaListResponse;
import org.tent4j.store.proto.Segment;

/** The segment table's encoding as the master builds it, and the client's checks on answers a peer could send. */
class SegmentTableTest {
    private static final ReplicaLocation A1 = new ReplicaLocation("seg-a", "127.0.0.1:7001", "hostA", 4096, 100);
    private static final ReplicaLocation B1 = new ReplicaLocation("seg-b", "127.0.0.1:7002", "hostB", 8192, 100);

    private static BatchReplicaListResponse encode(List<List<ReplicaLocation>> perKey) {
        SegmentTable t = new SegmentTable();
        BatchReplicaListResponse.Builder b = BatchReplicaListResponse.newBuilder();
        for (List<ReplicaLocation> rs : perKey) {
            b.addItems(t.add(ReplicaListResponse.newBuilder().setSize(100).setLeaseTtlMs(10_000), rs));
        }
        return b.addAllSegments(t.segments()).build();
    }

    @Test
    void eachSegmentIsSentOnceAndDecodesToTheReplicas() throws Exception {
        List<List<ReplicaLocation>> perKey = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 32; i++) {
            ReplicaLocation a = new ReplicaLocation("seg-a", "127.0.0.1:7001", "hostA", 4096 + i * 128L, 100);
            ReplicaLocation b = new ReplicaLocation("seg-b", "127.0.0.1:7002", "hostB", 8192 + i * 128L, 100);
            perKey.add(i % 3 == 0 ? List.of(b, a) : List.of(a));
            keys.add("k/" + i);
        }
        BatchReplicaListResponse wire = BatchReplicaListResponse.parseFrom(encode(perKey).toByteArray());
        assertEquals(2, wire.getSegmentsCount(), "two segments, named once each");
        assertTrue(wire.getItems(0).getReplicasList().isEmpty(), "no replica named in full");
        SegmentTable.Decoded d = SegmentTable.decode(wire, keys, "m:1");
        assertEquals(perKey, d.replicas());
        assertEquals(32, d.items().size());
        // the string form: one Replica message (three strings) per replica, what the table replaces
        BatchReplicaListResponse.Builder named = BatchReplicaListResponse.newBuilder();
        perKey.forEach(rs -> named.addItems(ReplicaListResponse.newBuilder().setSize(100).setLeaseTtlMs(10_000)
                .addAllReplicas(rs.stream().map(Wire::replica).toList())));
        assertTrue(wire.getSerializedSize() * 3 < named.build().getSerializedSize(),
                wire.getSerializedSize() + " bytes with the table against " + named.build().getSerializedSize());
        assertEquals(perKey, SegmentTable.decode(named.build(), keys, "m:1").replicas(), "the string form still decodes");
    }

    @Test
    void failedItemsCarryTheirStatusAndNoReplicas() {
        BatchReplicaListResponse wire = BatchReplicaListResponse.newBuilder()
                .addItems(ReplicaListResponse.newBuilder().setStatus(org.tent4j.store.proto.Status.newBuilder()
                        .setCode(StoreError.OBJECT_NOT_FOUND.code()).setMessage("key 'x' not found")))
                .build();
        SegmentTable.Decoded d = SegmentTable.decode(wire, List.of("x"), "m:1");
        assertEquals(List.of(List.of()), d.replicas());
        assertEquals(StoreError.OBJECT_NOT_FOUND.code(), d.items().getFirst().getStatus().getCode());
    }

    private static void refused(BatchReplicaListResponse wire, List<String> keys, String... parts) {
        StoreException e = assertThrows(StoreException.class, () -> SegmentTable.decode(wire, keys, "master-host:50051"));
        assertEquals(StoreError.RPC_FAIL, e.error());
        assertTrue(e.getMessage().contains("master-host:50051"), e.getMessage());
        for (String p : parts) {
            assertTrue(e.getMessage().contains(p), "'" + p + "' in: " + e.getMessage());
        }
    }

    private static Segment seg(String id) {
        return Segment.newBuilder().setId(id).setEngineSegment("e-" + id).setHost("h").build();
    }

    @Test
    void aReplicaIndexOutsideTheTableIsRefusedNamingKeyAndIndex() {
        BatchReplicaListResponse good = encode(List.of(List.of(A1), List.of(A1, B1)));
        BatchReplicaListResponse outside = good.toBuilder().setItems(1, good.getItems(1).toBuilder().setReplicaSegment(1, 2)).build();
        refused(outside, List.of("k0", "k1"), "replica 1 of key 'k1'", "segment 2 of a table of 2");
        // uint32 on the wire: an index of 2^31 and above arrives negative in Java
        BatchReplicaListResponse huge = good.toBuilder().setItems(0, good.getItems(0).toBuilder().setReplicaSegment(0, -1)).build();
        refused(huge, List.of("k0", "k1"), "key 'k0'", "segment 4294967295");
        BatchReplicaListResponse noTable = good.toBuilder().clearSegments().build();
        refused(noTable, List.of("k0", "k1"), "key 'k0'", "of a table of 0");
    }

    @Test
    void anOversizedTableIsRefused() {
        BatchReplicaListResponse good = encode(List.of(List.of(A1)));
        BatchReplicaListResponse padded = good.toBuilder().addSegments(seg("extra")).build();
        refused(padded, List.of("k0"), "segment table of 2 entries for 1 replicas");
        BatchReplicaListResponse.Builder flood = BatchReplicaListResponse.newBuilder();
        ReplicaListResponse.Builder item = ReplicaListResponse.newBuilder().setSize(1);
        for (int s = 0; s <= SegmentTable.MAX_SEGMENTS; s++) {
            flood.addSegments(seg("s" + s));
            item.addReplicaSegment(s).addReplicaAddress(64L * s);
        }
        refused(flood.addItems(item).build(), List.of("k0"), "segment table of " + (SegmentTable.MAX_SEGMENTS + 1) + " entries");
    }

    @Test
    void aKeyWithMoreReplicasThanAnyMasterGrantsIsRefused() {
        ReplicaListResponse.Builder item = ReplicaListResponse.newBuilder().setSize(1);
        for (int j = 0; j <= SegmentTable.MAX_REPLICAS; j++) {
            item.addReplicaSegment(0).addReplicaAddress(64L * j);
        }
        refused(BatchReplicaListResponse.newBuilder().addSegments(seg("s")).addItems(item).build(), List.of("k0"),
                "key 'k0' with " + (SegmentTable.MAX_REPLICAS + 1) + " replicas");
        ReplicaListResponse.Builder named = ReplicaListResponse.newBuilder().setSize(1);
        for (int j = 0; j <= SegmentTable.MAX_REPLICAS; j++) {
            named.addReplicas(Wire.replica(A1));
        }
        refused(BatchReplicaListResponse.newBuilder().addItems(named).build(), List.of("k0"), "key 'k0' with 1025 replicas");
    }

    @Test
    void mismatchedCountsAreRefused() {
        BatchReplicaListResponse good = encode(List.of(List.of(A1), List.of(B1)));
        refused(good, List.of("k0"), "answered 2 items for 1 keys");
        BatchReplicaListResponse noAddress = good.toBuilder().setItems(1, good.getItems(1).toBuilder().clearReplicaAddress()).build();
        refused(noAddress, List.of("k0", "k1"), "key 'k1' with 1 segment indexes, 0 addresses");
        BatchReplicaListResponse both = good.toBuilder().setItems(0, good.getItems(0).toBuilder().addReplicas(Wire.replica(B1))).build();
        refused(both, List.of("k0", "k1"), "key 'k0'", "1 named replicas");
    }
}
