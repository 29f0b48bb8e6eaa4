package org.tent4j.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HexFormat;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.tent4j.spi.OptionValues;

/** The RC state transitions produce the reference's masks and values (Mooncake rdma_endpoint.cpp, reference §3.2). */
class QpTransitionsTest {
    private static final byte[] GID = HexFormat.of().parseHex("00000000000000000000ffff0a000102");
    private static final QpTransitions.PathSettings PATH =
            new QpTransitions.PathSettings(1, 3, 0, 0, 14, 7, 7, 16, 16);

    @Test
    void resetToInit() {
        QpTransitions.QpModify m = QpTransitions.init(PATH);
        // IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT
        assertEquals(0x1 | 0x8 | 0x10 | 0x20, m.mask());
        assertEquals(1, m.qpState(), "IBV_QPS_INIT");
        assertEquals(0, m.pkeyIndex());
        assertEquals(1, m.portNum());
        // LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC, as the reference grants
        assertEquals(0xF, m.qpAccessFlags());
    }

    @Test
    void initToReadyToReceiveOverRoce() {
        QpTransitions.QpModify m = QpTransitions.readyToReceive(PATH, Verbs.IBV_MTU_4096,
                new QpTransitions.RemoteQp(0x00abcd, 0x00f00d, 0, Verbs.IBV_MTU_1024, GID));
        // STATE | AV | PATH_MTU | RQ_PSN | MIN_RNR_TIMER | MAX_DEST_RD_ATOMIC | DEST_QPN
        assertEquals(0x1 | 0x80 | 0x100 | 0x1000 | 0x8000 | 0x20000 | 0x100000, m.mask());
        assertEquals(2, m.qpState(), "IBV_QPS_RTR");
        assertEquals(Verbs.IBV_MTU_1024, m.pathMtu(), "the smaller of both sides");
        assertEquals(0x00abcd, m.destQpNum());
        assertEquals(0x00f00d, m.rqPsn(), "the peer's first PSN");
        assertEquals(16, m.maxDestRdAtomic());
        assertEquals(12, m.minRnrTimer());
        assertTrue(m.isGlobal());
        assertArrayEquals(GID, m.dgid());
        assertEquals(3, m.sgidIndex());
        assertEquals(16, m.hopLimit());
        assertEquals(0, m.trafficClass());
        assertEquals(0, m.dlid(), "RoCE has no LID");
        assertEquals(0, m.sl());
        assertEquals(1, m.ahPortNum());
    }

    @Test
    void readyToReceiveOverInfinibandWithoutGidUsesTheLid() {
        QpTransitions.QpModify m = QpTransitions.readyToReceive(new QpTransitions.PathSettings(2, 0, 4, 9, 14, 7, 7,
                16, 16), Verbs.IBV_MTU_2048, new QpTransitions.RemoteQp(77, 5, 0x1234, Verbs.IBV_MTU_4096,
                new byte[16]));
        assertFalse(m.isGlobal());
        assertEquals(0x1234, m.dlid());
        assertEquals(4, m.sl());
        assertEquals(2, m.ahPortNum());
        assertEquals(0, m.hopLimit(), "no GRH");
        assertEquals(Verbs.IBV_MTU_2048, m.pathMtu());
    }

    @Test
    void readyToReceiveToReadyToSend() {
        QpTransitions.QpModify m = QpTransitions.readyToSend(PATH, 0x00beef);
        // STATE | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC | SQ_PSN
        assertEquals(0x1 | 0x200 | 0x400 | 0x800 | 0x2000 | 0x10000, m.mask());
        assertEquals(3, m.qpState(), "IBV_QPS_RTS");
        assertEquals(14, m.timeout());
        assertEquals(7, m.retryCnt());
        assertEquals(7, m.rnrRetry());
        assertEquals(0x00beef, m.sqPsn(), "this side's first PSN, as sent to the peer");
        assertEquals(16, m.maxRdAtomic());
    }

    @Test
    void toErrorFlushes() {
        QpTransitions.QpModify m = QpTransitions.error();
        assertEquals(0x1, m.mask());
        assertEquals(6, m.qpState(), "IBV_QPS_ERR");
    }

    @Test
    void optionsAndDeviceLimitsShapeThePath() {
        RdmaOptions o = RdmaOptions.from(OptionValues.parse(RdmaOptions.PREFIX, RdmaOptions.SPECS,
                Map.of("timeout", "18", "retry_cnt", "5", "rnr_retry", "3", "service_level", "2",
                        "traffic_class", "106", "port", "2")));
        QpTransitions.PathSettings p = QpTransitions.pathSettings(o, 7, 8, 32);
        assertEquals(new QpTransitions.PathSettings(2, 7, 2, 106, 18, 5, 3, 16, 8), p,
                "read depth 16 bounded by the device (max_qp_rd_atom 8, max_qp_init_rd_atom 32)");
        QpTransitions.PathSettings defaults = QpTransitions.pathSettings(RdmaOptions.from(OptionValues.parse(
                RdmaOptions.PREFIX, RdmaOptions.SPECS, Map.of())), 0, 16, 16);
        assertEquals(new QpTransitions.PathSettings(1, 0, 0, 0, 14, 7, 7, 16, 16), defaults, "reference defaults");
    }

    @Test
    void rejectsImpossibleMtus() {
        assertThrows(IllegalArgumentException.class, () -> QpTransitions.readyToReceive(PATH, 0,
                new QpTransitions.RemoteQp(1, 1, 1, Verbs.IBV_MTU_1024, GID)));
        assertThrows(IllegalArgumentException.class, () -> QpTransitions.readyToReceive(PATH, Verbs.IBV_MTU_1024,
                new QpTransitions.RemoteQp(1, 1, 1, 6, GID)));
    }
}
