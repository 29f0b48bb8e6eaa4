package org.tent4j.transport.rdma;

import java.lang.foreign.MemorySegment;

/** The verbs calls on one queue pair. */
interface QueuePairVerbs {
    int qpNum();

    /** {@code ibv_modify_qp}: 0, or the errno value. */
    int modify(QpTransitions.QpModify modify);

    /** {@code ibv_post_send} of one prepared request: 0, or the errno value. Allocation-free. */
    int postSend(MemorySegment request, MemorySegment badRequest);

    /** {@code ibv_destroy_qp}. */
    void destroy();
}
