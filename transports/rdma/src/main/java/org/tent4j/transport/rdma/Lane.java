package org.tent4j.transport.rdma;

/**
 * A send queue that slices are posted on, as the completion path sees it: a connected RC queue pair in production, a
 * scripted stand-in in tests of the slot and completion logic.
 */
interface Lane {
    /** A work request posted on this lane finished in any status; its send-queue credit is free again. */
    void creditReturned();

    /**
     * A completion reported an error: the hardware has moved the queue pair to the error state, so it takes no more
     * work and everything still queued on it will be flushed.
     *
     * @param cause the first error, for the messages of slices that are flushed after it
     */
    void broken(String cause);

    /** A work request outlived its slice's deadline: the queue pair is stuck and is moved to the error state. */
    void timedOut(String cause);

    /** Why the lane broke, or {@code null} while it works. */
    String brokenCause();

    /** Names device, queue pair and peer for messages, e.g. {@code mlx5_0 qp 0x1a2 -> 'node-b' mlx5_1 qp 0x3c4}. */
    String describe();
}
