package org.tent4j.transport.rdma;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Native {@code ibv_send_wr} + {@code ibv_sge} (+ the {@code bad_wr} out-pointer) for every slot of a
 * {@link SlotTable}, allocated once. Posting a slice rewrites the few fields that change in the slot's request, so the
 * data path allocates nothing; slot indexes are unique while in flight, so no two posts share a request. The provider
 * copies a request into its send queue inside {@code ibv_post_send}, so the memory is free again when that returns.
 */
final class WorkRequests implements AutoCloseable {
    private static final long SGE_OFFSET = Verbs.IBV_SEND_WR.byteSize();
    private static final long BAD_WR_OFFSET = SGE_OFFSET + Verbs.IBV_SGE.byteSize();
    static final long SLOT_BYTES = BAD_WR_OFFSET + ADDRESS.byteSize();

    private final Arena arena = Arena.ofShared();
    private final MemorySegment[] requests;
    private final MemorySegment[] scatterGather;
    private final MemorySegment[] badRequests;

    WorkRequests(int capacity) {
        MemorySegment block = arena.allocate(SLOT_BYTES * capacity, 64);
        requests = new MemorySegment[capacity];
        scatterGather = new MemorySegment[capacity];
        badRequests = new MemorySegment[capacity];
        for (int i = 0; i < capacity; i++) {
            MemorySegment slot = block.asSlice(SLOT_BYTES * i, SLOT_BYTES);
            MemorySegment wr = slot.asSlice(0, Verbs.IBV_SEND_WR.byteSize());
            MemorySegment sge = slot.asSlice(SGE_OFFSET, Verbs.IBV_SGE.byteSize());
            wr.set(ADDRESS, Verbs.SEND_WR_NEXT, MemorySegment.NULL);
            wr.set(ADDRESS, Verbs.SEND_WR_SG_LIST, sge);
            wr.set(JAVA_INT, Verbs.SEND_WR_NUM_SGE, 1);
            // every request is signaled: its completion is what frees the slot and finishes the slice
            wr.set(JAVA_INT, Verbs.SEND_WR_SEND_FLAGS, Verbs.IBV_SEND_SIGNALED);
            requests[i] = wr;
            scatterGather[i] = sge;
            badRequests[i] = slot.asSlice(BAD_WR_OFFSET, ADDRESS.byteSize());
        }
    }

    /**
     * Writes one RDMA READ or WRITE into slot {@code index} and returns the request to post.
     *
     * @param opcode {@link Verbs#IBV_WR_RDMA_READ} or {@link Verbs#IBV_WR_RDMA_WRITE}
     */
    MemorySegment fill(int index, long wrId, int opcode, long localAddress, int length, int lkey, long remoteAddress,
                       int rkey) {
        MemorySegment wr = requests[index];
        wr.set(JAVA_LONG, Verbs.SEND_WR_WR_ID, wrId);
        wr.set(JAVA_INT, Verbs.SEND_WR_OPCODE, opcode);
        wr.set(JAVA_LONG, Verbs.SEND_WR_RDMA_REMOTE_ADDR, remoteAddress);
        wr.set(JAVA_INT, Verbs.SEND_WR_RDMA_RKEY, rkey);
        MemorySegment sge = scatterGather[index];
        sge.set(JAVA_LONG, Verbs.SGE_ADDR, localAddress);
        sge.set(JAVA_INT, Verbs.SGE_LENGTH, length);
        sge.set(JAVA_INT, Verbs.SGE_LKEY, lkey);
        return wr;
    }

    MemorySegment badRequest(int index) {
        return badRequests[index];
    }

    MemorySegment scatterGather(int index) {
        return scatterGather[index];
    }

    @Override
    public void close() {
        arena.close();
    }
}
