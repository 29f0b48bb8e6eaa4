package org.tent4j.transport.rdma;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** {@link DeviceVerbs} over libibverbs: a context, its protection domain and its completion queue. */
final class NativeDeviceVerbs implements DeviceVerbs {
    private final VerbsLibrary verbs;
    private final String name;
    private final MemorySegment context;
    private final MemorySegment pd;
    private final MemorySegment cq;

    NativeDeviceVerbs(VerbsLibrary verbs, String name, MemorySegment context, MemorySegment pd, MemorySegment cq) {
        this.verbs = verbs;
        this.name = name;
        this.context = context;
        this.pd = pd;
        this.cq = cq;
    }

    @Override
    public RdmaDevice.MemoryRegion register(long address, long length, int access, String what) {
        MemorySegment mr = verbs.regMr(pd, address, length, access, what);
        return new RdmaDevice.MemoryRegion(mr, mr.get(JAVA_INT, Verbs.MR_LKEY), mr.get(JAVA_INT, Verbs.MR_RKEY));
    }

    @Override
    public void deregister(RdmaDevice.MemoryRegion region) {
        verbs.deregMr(region.handle());
    }

    @Override
    public QueuePairVerbs createQueuePair(int sendQueueDepth, int maxSge) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment init = a.allocate(Verbs.IBV_QP_INIT_ATTR);
            init.set(ADDRESS, Verbs.QP_INIT_ATTR_SEND_CQ, cq);
            init.set(ADDRESS, Verbs.QP_INIT_ATTR_RECV_CQ, cq);
            init.set(JAVA_INT, Verbs.QP_INIT_ATTR_MAX_SEND_WR, sendQueueDepth);
            // one-sided only: nothing is ever received, but providers reject a zero-depth receive queue
            init.set(JAVA_INT, Verbs.QP_INIT_ATTR_MAX_RECV_WR, 1);
            init.set(JAVA_INT, Verbs.QP_INIT_ATTR_MAX_SEND_SGE, maxSge);
            init.set(JAVA_INT, Verbs.QP_INIT_ATTR_MAX_RECV_SGE, 1);
            init.set(JAVA_INT, Verbs.QP_INIT_ATTR_QP_TYPE, Verbs.IBV_QPT_RC);
            // every request this transport posts asks for its own completion
            init.set(JAVA_INT, Verbs.QP_INIT_ATTR_SQ_SIG_ALL, 0);
            return new NativeQueuePair(verbs, verbs.createQp(pd, init, name));
        }
    }

    @Override
    public void close() {
        RdmaDevice.quietly(() -> verbs.destroyCq(cq));
        RdmaDevice.quietly(() -> verbs.deallocPd(pd));
        RdmaDevice.quietly(() -> verbs.closeDevice(context));
    }

    /** A {@code struct ibv_qp *}, posting through {@code qp->context->ops.post_send} read once. */
    static final class NativeQueuePair implements QueuePairVerbs {
        private final VerbsLibrary verbs;
        private final MemorySegment qp;
        private final MemorySegment postSend;
        private final int qpNum;

        NativeQueuePair(VerbsLibrary verbs, MemorySegment qp) {
            this.verbs = verbs;
            this.qp = qp;
            this.postSend = VerbsLibrary.postSendFunction(qp);
            this.qpNum = qp.get(JAVA_INT, Verbs.QP_QP_NUM);
        }

        @Override
        public int qpNum() {
            return qpNum;
        }

        @Override
        public int modify(QpTransitions.QpModify modify) {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment attr = a.allocate(Verbs.IBV_QP_ATTR);
                modify.writeTo(attr);
                return verbs.modifyQp(qp, attr, modify.mask());
            }
        }

        @Override
        public int postSend(MemorySegment request, MemorySegment badRequest) {
            return verbs.postSend(postSend, qp, request, badRequest);
        }

        @Override
        public void destroy() {
            verbs.destroyQp(qp);
        }
    }
}
