package org.tent4j.transport.rdma;

/**
 * Work completions of one poll, copied out of the native {@code ibv_wc} array into reused Java arrays so the
 * dispatch logic is plain Java (and testable without a device).
 */
final class CompletionBatch {
    final long[] wrId;
    final int[] status;
    final int[] vendorErr;
    final int[] qpNum;

    CompletionBatch(int capacity) {
        wrId = new long[capacity];
        status = new int[capacity];
        vendorErr = new int[capacity];
        qpNum = new int[capacity];
    }

    int capacity() {
        return wrId.length;
    }
}
