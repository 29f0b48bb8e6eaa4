package org.tent4j.transport.rdma;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** A verbs CQ as a {@link CompletionSource}: {@code ibv_poll_cq} into a preallocated {@code ibv_wc} array. */
final class VerbsCompletionQueue implements CompletionSource {
    private static final long WC_BYTES = Verbs.IBV_WC.byteSize();

    private final VerbsLibrary verbs;
    private final MemorySegment cq;
    private final MemorySegment pollFunction;
    private final MemorySegment completions;
    private final int capacity;

    VerbsCompletionQueue(VerbsLibrary verbs, MemorySegment cq, int capacity, Arena arena) {
        this.verbs = verbs;
        this.cq = cq;
        this.capacity = capacity;
        this.pollFunction = VerbsLibrary.pollCqFunction(cq);
        this.completions = arena.allocate(WC_BYTES * capacity, 8);
    }

    @Override
    public int poll(CompletionBatch batch) {
        int n = verbs.pollCq(pollFunction, cq, Math.min(capacity, batch.capacity()), completions);
        for (int i = 0; i < n; i++) {
            long base = WC_BYTES * i;
            batch.wrId[i] = completions.get(JAVA_LONG, base + Verbs.WC_WR_ID);
            batch.status[i] = completions.get(JAVA_INT, base + Verbs.WC_STATUS);
            batch.vendorErr[i] = completions.get(JAVA_INT, base + Verbs.WC_VENDOR_ERR);
            batch.qpNum[i] = completions.get(JAVA_INT, base + Verbs.WC_QP_NUM);
        }
        return n;
    }
}
