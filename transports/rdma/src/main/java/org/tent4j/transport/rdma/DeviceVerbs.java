package org.tent4j.transport.rdma;

/**
 * The verbs objects of one opened device that the transport drives once the device is open: memory registration in
 * its protection domain, queue pairs on its completion queue, and teardown. {@link NativeDeviceVerbs} is libibverbs;
 * tests of the transport's own logic (handshake, pairing, keys, queueing, close) put a test double here.
 */
interface DeviceVerbs {
    /** {@code ibv_reg_mr}. @throws VerbsException naming {@code what} and the errno */
    RdmaDevice.MemoryRegion register(long address, long length, int access, String what);

    /** {@code ibv_dereg_mr}. */
    void deregister(RdmaDevice.MemoryRegion region);

    /** {@code ibv_create_qp}: an RC QP in RESET on this device's PD, sending and receiving on its CQ. */
    QueuePairVerbs createQueuePair(int sendQueueDepth, int maxSge);

    /** Destroys CQ and PD and closes the device; QPs and memory regions must be gone. */
    void close();
}
