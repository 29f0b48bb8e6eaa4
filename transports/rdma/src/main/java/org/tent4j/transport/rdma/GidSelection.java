package org.tent4j.transport.rdma;

import java.util.List;

/**
 * Which GID table entry a port sends from when {@code gid_index} is -1 (auto). InfiniBand: index 0 (the port GID,
 * link-local prefix and port GUID; routing uses the LID). RoCE: a RoCE v2 entry with an IPv4-mapped address
 * ({@code ::ffff:a.b.c.d}) first, since that is what routes across L3 RoCE fabrics, then any RoCE v2 entry, then the
 * first non-zero entry (RoCE v1) — the order NCCL and Mooncake use.
 */
final class GidSelection {
    private GidSelection() {
    }

    /** One populated GID table slot. */
    record GidEntry(int index, byte[] gid, int type) {
        GidEntry {
            gid = gid.clone();
        }

        boolean ipv4Mapped() {
            for (int i = 0; i < 10; i++) {
                if (gid[i] != 0) {
                    return false;
                }
            }
            return gid[10] == (byte) 0xFF && gid[11] == (byte) 0xFF;
        }
    }

    /**
     * @param linkLayer {@code ibv_port_attr.link_layer}
     * @param entries   the port's populated GID entries (zero GIDs are skipped)
     * @return the index to use, or -1 if no entry is usable
     */
    static int choose(int linkLayer, List<GidEntry> entries) {
        List<GidEntry> usable = entries.stream().filter(e -> !VerbsValues.isZeroGid(e.gid())).toList();
        if (usable.isEmpty()) {
            return -1;
        }
        if (linkLayer != Verbs.IBV_LINK_LAYER_ETHERNET) {
            return usable.stream().filter(e -> e.index() == 0).findFirst().orElse(usable.getFirst()).index();
        }
        for (GidEntry e : usable) {
            if (e.type() == Verbs.IBV_GID_TYPE_ROCE_V2 && e.ipv4Mapped()) {
                return e.index();
            }
        }
        for (GidEntry e : usable) {
            if (e.type() == Verbs.IBV_GID_TYPE_ROCE_V2) {
                return e.index();
            }
        }
        return usable.getFirst().index();
    }
}
