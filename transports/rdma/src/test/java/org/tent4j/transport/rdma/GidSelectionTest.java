package org.tent4j.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HexFormat;
import java.util.List;

import org.junit.jupiter.api.Test;

class GidSelectionTest {
    private static GidSelection.GidEntry entry(int index, String hex, int type) {
        return new GidSelection.GidEntry(index, HexFormat.of().parseHex(hex), type);
    }

    private static final GidSelection.GidEntry LINK_LOCAL_V1 =
            entry(0, "fe8000000000000002163efffe5a6b7c", Verbs.IBV_GID_TYPE_ROCE_V1);
    private static final GidSelection.GidEntry LINK_LOCAL_V2 =
            entry(1, "fe8000000000000002163efffe5a6b7c", Verbs.IBV_GID_TYPE_ROCE_V2);
    private static final GidSelection.GidEntry IPV4_V1 =
            entry(2, "00000000000000000000ffff0a000102", Verbs.IBV_GID_TYPE_ROCE_V1);
    private static final GidSelection.GidEntry IPV4_V2 =
            entry(3, "00000000000000000000ffff0a000102", Verbs.IBV_GID_TYPE_ROCE_V2);
    private static final GidSelection.GidEntry EMPTY = entry(4, "00000000000000000000000000000000", 0);

    @Test
    void roceUsesV2Ipv4MappedThenAnyV2ThenFirst() {
        int eth = Verbs.IBV_LINK_LAYER_ETHERNET;
        assertEquals(3, GidSelection.choose(eth, List.of(LINK_LOCAL_V1, LINK_LOCAL_V2, IPV4_V1, IPV4_V2)));
        assertEquals(1, GidSelection.choose(eth, List.of(LINK_LOCAL_V1, LINK_LOCAL_V2, IPV4_V1)));
        assertEquals(2, GidSelection.choose(eth, List.of(EMPTY, IPV4_V1)));
        assertEquals(-1, GidSelection.choose(eth, List.of(EMPTY)));
        assertEquals(-1, GidSelection.choose(eth, List.of()));
    }

    @Test
    void infinibandUsesThePortGid() {
        int ib = Verbs.IBV_LINK_LAYER_INFINIBAND;
        GidSelection.GidEntry port = entry(0, "fe800000000000000002c90300a1b2c3", Verbs.IBV_GID_TYPE_IB);
        GidSelection.GidEntry alias = entry(1, "fec00000000000010002c90300a1b2c3", Verbs.IBV_GID_TYPE_IB);
        assertEquals(0, GidSelection.choose(ib, List.of(alias, port)));
        assertEquals(1, GidSelection.choose(ib, List.of(alias)));
    }
}
