package org.tent4j.transport.rdma;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The RC queue-pair state machine RESET → INIT → RTR → RTS (and → ERR to flush), as pure functions from the exchanged
 * peer values and local settings to the {@code ibv_qp_attr} values and attribute mask {@code ibv_modify_qp} takes.
 * Values follow Mooncake's RDMA endpoint (reference §3.2): RTR with GRH, hop limit 16, max_dest_rd_atomic 16,
 * min_rnr_timer 12; RTS with timeout 14, retry_cnt 7, rnr_retry 7, max_rd_atomic 16 (the last two bounded by what
 * the device supports). One difference: PSNs are exchanged in the handshake instead of fixed at 0, so a stale packet
 * of an earlier QP that reused the number cannot match.
 */
final class QpTransitions {
    /** GRH hop limit of the reference. */
    static final int HOP_LIMIT = 16;
    /** RNR NAK timer code 12 (0.64 ms) of the reference; unused by one-sided traffic but required in RTR. */
    static final int MIN_RNR_TIMER = 12;
    /** Reference value of both RDMA READ depths. */
    static final int RD_ATOMIC = 16;
    /** Access the QP grants incoming requests; the memory region's own flags still decide per buffer. */
    static final int QP_ACCESS = Verbs.IBV_ACCESS_LOCAL_WRITE | Verbs.IBV_ACCESS_REMOTE_READ
            | Verbs.IBV_ACCESS_REMOTE_WRITE | Verbs.IBV_ACCESS_REMOTE_ATOMIC;

    static final int INIT_MASK = Verbs.IBV_QP_STATE | Verbs.IBV_QP_PKEY_INDEX | Verbs.IBV_QP_PORT
            | Verbs.IBV_QP_ACCESS_FLAGS;
    static final int RTR_MASK = Verbs.IBV_QP_STATE | Verbs.IBV_QP_AV | Verbs.IBV_QP_PATH_MTU | Verbs.IBV_QP_DEST_QPN
            | Verbs.IBV_QP_RQ_PSN | Verbs.IBV_QP_MAX_DEST_RD_ATOMIC | Verbs.IBV_QP_MIN_RNR_TIMER;
    static final int RTS_MASK = Verbs.IBV_QP_STATE | Verbs.IBV_QP_TIMEOUT | Verbs.IBV_QP_RETRY_CNT
            | Verbs.IBV_QP_RNR_RETRY | Verbs.IBV_QP_SQ_PSN | Verbs.IBV_QP_MAX_QP_RD_ATOMIC;

    private QpTransitions() {
    }

    /**
     * Local settings that shape a path, from options and the device's limits.
     *
     * @param port            HCA port number
     * @param sgidIndex       local GID table index the GRH is sent from
     * @param serviceLevel    IB service level
     * @param trafficClass    GRH traffic class
     * @param timeout         local ACK timeout code (4.096 µs × 2^timeout)
     * @param retryCount      transport retries before IBV_WC_RETRY_EXC_ERR
     * @param rnrRetry        RNR retries (7 = infinite)
     * @param maxRdAtomic     outstanding RDMA READs this QP may issue
     * @param maxDestRdAtomic outstanding RDMA READs this QP may serve
     */
    record PathSettings(int port, int sgidIndex, int serviceLevel, int trafficClass, int timeout, int retryCount,
                        int rnrRetry, int maxRdAtomic, int maxDestRdAtomic) {
    }

    /** What the peer sent for one QP (see {@link HandshakeMessage.Endpoint}). */
    record RemoteQp(int qpNum, int psn, int lid, int mtu, byte[] gid) {
        RemoteQp {
            gid = gid.clone();
        }
    }

    /**
     * One {@code ibv_modify_qp} call: the attribute values and the mask of those that count. Fields outside the mask
     * are zero.
     */
    record QpModify(int mask, int qpState, int pkeyIndex, int portNum, int qpAccessFlags, int pathMtu, int destQpNum,
                    int rqPsn, int maxDestRdAtomic, int minRnrTimer, int dlid, int sl, int srcPathBits,
                    boolean isGlobal, int ahPortNum, byte[] dgid, int sgidIndex, int hopLimit, int trafficClass,
                    int flowLabel, int sqPsn, int timeout, int retryCnt, int rnrRetry, int maxRdAtomic) {
        QpModify {
            dgid = dgid.clone();
        }

        /** Writes these values into a zeroed {@code struct ibv_qp_attr}. */
        void writeTo(MemorySegment attr) {
            attr.asSlice(0, Verbs.IBV_QP_ATTR.byteSize()).fill((byte) 0);
            attr.set(JAVA_INT, Verbs.QP_ATTR_QP_STATE, qpState);
            attr.set(JAVA_SHORT, Verbs.QP_ATTR_PKEY_INDEX, (short) pkeyIndex);
            attr.set(JAVA_BYTE, Verbs.QP_ATTR_PORT_NUM, (byte) portNum);
            attr.set(JAVA_INT, Verbs.QP_ATTR_QP_ACCESS_FLAGS, qpAccessFlags);
            attr.set(JAVA_INT, Verbs.QP_ATTR_PATH_MTU, pathMtu);
            attr.set(JAVA_INT, Verbs.QP_ATTR_DEST_QP_NUM, destQpNum);
            attr.set(JAVA_INT, Verbs.QP_ATTR_RQ_PSN, rqPsn);
            attr.set(JAVA_BYTE, Verbs.QP_ATTR_MAX_DEST_RD_ATOMIC, (byte) maxDestRdAtomic);
            attr.set(JAVA_BYTE, Verbs.QP_ATTR_MIN_RNR_TIMER, (byte) minRnrTimer);
            attr.set(JAVA_SHORT, Verbs.QP_ATTR_AH_DLID, (short) dlid);
            attr.set(JAVA_BYTE, Verbs.QP_ATTR_AH_SL, (byte) sl);
            attr.set(JAVA_BYTE, Verbs.QP_ATTR_AH_SRC_PATH_BITS, (byte) srcPathBits);
            attr.set(JAVA_BYTE, Verbs.QP_ATTR_AH_IS_GLOBAL, (byte) (isGlobal ? 1 : 0));
            attr.set(JAVA_BYTE, Verbs.QP_ATTR_AH_PORT_NUM, (byte) ahPortNum);
            MemorySegment.copy(MemorySegment.ofArray(dgid), 0, attr, Verbs.QP_ATTR_AH_DGID, 16);
            attr.set(JAVA_BYTE, Verbs.QP_ATTR_AH_SGID_INDEX, (byte) sgidIndex);
            attr.set(JAVA_BYTE, Verbs.QP_ATTR_AH_HOP_LIMIT, (byte) hopLimit);
            attr.set(JAVA_BYTE, Verbs.QP_ATTR_AH_TRAFFIC_CLASS, (byte) trafficClass);
            attr.set(JAVA_INT, Verbs.QP_ATTR_AH_FLOW_LABEL, flowLabel);
            attr.set(JAVA_INT, Verbs.QP_ATTR_SQ_PSN, sqPsn);
            attr.set(JAVA_BYTE, Verbs.QP_ATTR_TIMEOUT, (byte) timeout);
            attr.set(JAVA_BYTE, Verbs.QP_ATTR_RETRY_CNT, (byte) retryCnt);
            attr.set(JAVA_BYTE, Verbs.QP_ATTR_RNR_RETRY, (byte) rnrRetry);
            attr.set(JAVA_BYTE, Verbs.QP_ATTR_MAX_RD_ATOMIC, (byte) maxRdAtomic);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof QpModify m && mask == m.mask && qpState == m.qpState && pkeyIndex == m.pkeyIndex
                    && portNum == m.portNum && qpAccessFlags == m.qpAccessFlags && pathMtu == m.pathMtu
                    && destQpNum == m.destQpNum && rqPsn == m.rqPsn && maxDestRdAtomic == m.maxDestRdAtomic
                    && minRnrTimer == m.minRnrTimer && dlid == m.dlid && sl == m.sl && srcPathBits == m.srcPathBits
                    && isGlobal == m.isGlobal && ahPortNum == m.ahPortNum && Arrays.equals(dgid, m.dgid)
                    && sgidIndex == m.sgidIndex && hopLimit == m.hopLimit && trafficClass == m.trafficClass
                    && flowLabel == m.flowLabel && sqPsn == m.sqPsn && timeout == m.timeout && retryCnt == m.retryCnt
                    && rnrRetry == m.rnrRetry && maxRdAtomic == m.maxRdAtomic;
        }

        @Override
        public int hashCode() {
            return 31 * Integer.hashCode(mask) + Arrays.hashCode(dgid) + qpState;
        }
    }

    private static final byte[] NO_GID = new byte[16];

    /** RESET → INIT: port, partition key index 0, and what incoming requests may do. */
    static QpModify init(PathSettings path) {
        return new QpModify(INIT_MASK, Verbs.IBV_QPS_INIT, 0, path.port(), QP_ACCESS, 0, 0, 0, 0, 0, 0, 0, 0, false, 0,
                NO_GID, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    }

    /**
     * INIT → RTR: where the peer QP is. The path MTU is the smaller of both sides' MTUs; the GRH is used whenever the
     * peer has a GID (always on RoCE, where the LID is 0).
     *
     * @param localMtu this side's {@code ibv_mtu} (the port's active MTU bounded by the option)
     */
    static QpModify readyToReceive(PathSettings path, int localMtu, RemoteQp remote) {
        checkMtu(localMtu);
        checkMtu(remote.mtu());
        int mtu = Math.min(localMtu, remote.mtu());
        boolean global = !VerbsValues.isZeroGid(remote.gid());
        return new QpModify(RTR_MASK, Verbs.IBV_QPS_RTR, 0, 0, 0, mtu, remote.qpNum(), remote.psn(),
                path.maxDestRdAtomic(), MIN_RNR_TIMER, remote.lid(), path.serviceLevel(), 0, global, path.port(),
                global ? remote.gid() : NO_GID, global ? path.sgidIndex() : 0, global ? HOP_LIMIT : 0,
                global ? path.trafficClass() : 0, 0, 0, 0, 0, 0, 0);
    }

    /** RTR → RTS: this side's send PSN and retry behaviour. */
    static QpModify readyToSend(PathSettings path, int localPsn) {
        return new QpModify(RTS_MASK, Verbs.IBV_QPS_RTS, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false, 0, NO_GID, 0, 0, 0, 0,
                localPsn, path.timeout(), path.retryCount(), path.rnrRetry(), path.maxRdAtomic());
    }

    /** Any state → ERR: every outstanding work request completes with IBV_WC_WR_FLUSH_ERR. */
    static QpModify error() {
        return new QpModify(Verbs.IBV_QP_STATE, Verbs.IBV_QPS_ERR, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false, 0, NO_GID, 0,
                0, 0, 0, 0, 0, 0, 0, 0);
    }

    /**
     * The path settings for a device: the reference's read depth of 16 bounded by what the device supports.
     */
    static PathSettings pathSettings(RdmaOptions options, int sgidIndex, int deviceMaxQpRdAtom,
                                     int deviceMaxQpInitRdAtom) {
        return new PathSettings(options.port(), sgidIndex, options.serviceLevel(), options.trafficClass(),
                options.timeout(), options.retryCount(), options.rnrRetry(),
                clampRdAtomic(deviceMaxQpInitRdAtom), clampRdAtomic(deviceMaxQpRdAtom));
    }

    private static int clampRdAtomic(int deviceLimit) {
        return Math.max(1, Math.min(RD_ATOMIC, deviceLimit));
    }

    private static void checkMtu(int mtu) {
        if (mtu < Verbs.IBV_MTU_256 || mtu > Verbs.IBV_MTU_4096) {
            throw new IllegalArgumentException("not an ibv_mtu value: " + mtu);
        }
    }
}
