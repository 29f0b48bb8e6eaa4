package org.tent4j.store.rpc;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.proto.BatchReplicaListResponse;
import org.tent4j.store.proto.ReplicaListResponse;
import org.tent4j.store.proto.Segment;

/**
 * A batch replica-list answer that names each segment once: the answer carries a table of (segment id, engine
 * segment, host) and every replica is an index into it plus an address. A batch of 32 keys on two segments sends
 * two sets of three strings instead of 32, and the client parses two instead of 32 (the strings were most of the
 * answer's bytes and of its encoding and parsing).
 *
 * <p>The master builds one per answer ({@link #add}, then {@link #segments}); the client checks every index against
 * the table when it {@link #decode}s, since the answer is a peer's bytes.
 */
public final class SegmentTable {
    /** Most segments one answer's table may name: far above any store's mounted segments. */
    public static final int MAX_SEGMENTS = 65_536;
    /**
     * Most replicas one key may come with: far above any replica count a master grants (8 by default), and low enough
     * that an answer within the message limit cannot make the client build millions of locations for one key.
     */
    public static final int MAX_REPLICAS = 1024;

    private final Map<String, Integer> index = new HashMap<>();
    private final List<Segment> segments = new ArrayList<>();

    /** Adds {@code replicas} to {@code item} as table indexes and addresses, adding their segments to the table. */
    public ReplicaListResponse.Builder add(ReplicaListResponse.Builder item, List<ReplicaLocation> replicas) {
        for (ReplicaLocation r : replicas) {
            Integer i = index.get(r.segmentId());
            if (i == null) {
                i = segments.size();
                index.put(r.segmentId(), i);
                Segment.Builder seg = Segment.newBuilder().setId(r.segmentId()).setEngineSegment(r.engineSegment()).setHost(r.host());
                if (r.onDisk()) {
                    seg.setTier(org.tent4j.store.proto.Tier.DISK).setFile(r.file()).setBase(r.address() - r.fileOffset());
                }
                segments.add(seg.build());
            }
            item.addReplicaSegment(i).addReplicaAddress(r.address());
            if (r.onDisk()) {
                item.setCrc32C((int) r.crc32c());
            }
        }
        return item;
    }

    public List<Segment> segments() {
        return segments;
    }

    /**
     * One decoded answer: per key its list (status, size, lease) and its replicas (empty for a failed item).
     *
     * @param items    the master's per-key answers, in the order of the keys asked
     * @param replicas per key, where its replicas lie
     */
    public record Decoded(List<ReplicaListResponse> items, List<List<ReplicaLocation>> replicas) {
    }

    /**
     * Decodes {@code answer} to the replicas of {@code keys}, refusing (RPC_FAIL, naming the master, key and index) an
     * answer with another item count, a table larger than {@link #MAX_SEGMENTS} or than the replicas it serves, a
     * replica index outside the table, a key with over {@link #MAX_REPLICAS} replicas, or an item whose indexes and
     * addresses differ in count. Items in the string
     * form (a master that was not asked for a table) decode too.
     */
    public static Decoded decode(BatchReplicaListResponse answer, List<String> keys, String master) {
        List<ReplicaListResponse> items = answer.getItemsList();
        if (items.size() != keys.size()) {
            throw refused(master, "answered " + items.size() + " items for " + keys.size() + " keys");
        }
        int tableSize = answer.getSegmentsCount();
        long refs = 0;
        for (ReplicaListResponse it : items) {
            refs += it.getReplicaSegmentCount();
        }
        if (tableSize > MAX_SEGMENTS || tableSize > refs) {
            throw refused(master, "sent a segment table of " + tableSize + " entries for " + refs
                    + " replicas (at most one entry per replica and " + MAX_SEGMENTS + " in all)");
        }
        // each entry's strings decoded once, shared by every replica in that segment
        String[][] table = new String[tableSize][];
        long[] diskBase = new long[tableSize];
        for (int s = 0; s < tableSize; s++) {
            Segment seg = answer.getSegments(s);
            table[s] = new String[]{seg.getId(), seg.getEngineSegment(), seg.getHost(), seg.getFile()};
            diskBase[s] = seg.getTier() == org.tent4j.store.proto.Tier.DISK ? seg.getBase() : -1;
        }
        List<List<ReplicaLocation>> replicas = new ArrayList<>(items.size());
        for (int k = 0; k < items.size(); k++) {
            ReplicaListResponse it = items.get(k);
            int n = it.getReplicaSegmentCount();
            if (n != it.getReplicaAddressCount() || (n > 0 && it.getReplicasCount() > 0)) {
                throw refused(master, "sent key '" + keys.get(k) + "' with " + n + " segment indexes, "
                        + it.getReplicaAddressCount() + " addresses and " + it.getReplicasCount() + " named replicas");
            }
            if (Math.max(n, it.getReplicasCount()) > MAX_REPLICAS) {
                throw refused(master, "sent key '" + keys.get(k) + "' with " + Math.max(n, it.getReplicasCount())
                        + " replicas (at most " + MAX_REPLICAS + ")");
            }
            if (n == 0) {
                replicas.add(Wire.replicas(it.getReplicasList()));
                continue;
            }
            List<ReplicaLocation> rs = new ArrayList<>(n);
            for (int j = 0; j < n; j++) {
                int s = it.getReplicaSegment(j);
                if (s < 0 || s >= tableSize) {
                    throw refused(master, "sent replica " + j + " of key '" + keys.get(k) + "' in segment " + (s & 0xFFFFFFFFL)
                            + " of a table of " + tableSize);
                }
                String[] e = table[s];
                long address = it.getReplicaAddress(j);
                if (diskBase[s] == -1) {
                    rs.add(new ReplicaLocation(e[0], e[1], e[2], address, it.getSize()));
                } else if (Long.compareUnsigned(address, diskBase[s]) < 0) {
                    throw refused(master, "sent replica " + j + " of key '" + keys.get(k) + "' at " + address
                            + ", below the base " + diskBase[s] + " of its disk segment " + e[0]);
                } else {
                    rs.add(new ReplicaLocation(e[0], e[1], e[2], address, it.getSize(), org.tent4j.store.Tier.DISK,
                            Integer.toUnsignedLong(it.getCrc32C()), e[3], address - diskBase[s]));
                }
            }
            replicas.add(rs);
        }
        return new Decoded(items, replicas);
    }

    private static StoreException refused(String master, String what) {
        return new StoreException(StoreError.RPC_FAIL, "master " + master + " " + what + " in a BatchGetReplicaList answer");
    }
}
