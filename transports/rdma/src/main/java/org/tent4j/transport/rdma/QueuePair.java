package org.tent4j.transport.rdma;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * One RC queue pair: its verbs, the credit count that keeps posts within its send-queue depth, whether it broke, and
 * the connection it belongs to.
 */
final class QueuePair implements Lane {
    /** Who is told when credit frees up or the QP breaks (the connection the QP belongs to). */
    interface Owner {
        void laneHasRoom(QueuePair qp);

        void laneBroken(QueuePair qp, String cause);

        /** The peer segment's name, for messages. */
        String peerName();
    }

    private final RdmaDevice device;
    private final QueuePairVerbs verbs;
    private final int qpNum;
    private final int psn;
    private final int remoteDevice;
    private final int depth;
    private final AtomicInteger outstanding = new AtomicInteger();
    private volatile String brokenCause;
    private volatile Owner owner;
    private volatile String remote = "unconnected";
    private boolean destroyed;

    QueuePair(RdmaDevice device, QueuePairVerbs verbs, int psn, int remoteDevice, int depth) {
        this.device = device;
        this.verbs = verbs;
        this.qpNum = verbs.qpNum();
        this.psn = psn;
        this.remoteDevice = remoteDevice;
        this.depth = depth;
    }

    RdmaDevice device() {
        return device;
    }

    QueuePairVerbs verbs() {
        return verbs;
    }

    int qpNum() {
        return qpNum;
    }

    int psn() {
        return psn;
    }

    /** Index of the peer device this QP is connected to, in the peer's published device list. */
    int remoteDevice() {
        return remoteDevice;
    }

    int outstanding() {
        return outstanding.get();
    }

    void setOwner(Owner owner) {
        this.owner = owner;
    }

    /** The handshake entry describing this QP. */
    HandshakeMessage.Endpoint endpoint(int receiverDevice) {
        return new HandshakeMessage.Endpoint(device.index(), receiverDevice, qpNum, psn, device.lid(), device.mtu(),
                device.gid());
    }

    /** RESET → INIT → RTR → RTS against the peer QP {@code peer}. */
    void connect(HandshakeMessage.Endpoint peer, String peerSegment, String peerDeviceName) {
        QpTransitions.PathSettings path = device.path();
        modify(QpTransitions.init(path), "INIT");
        modify(QpTransitions.readyToReceive(path, device.mtu(), peer.remoteQp()), "RTR");
        modify(QpTransitions.readyToSend(path, psn), "RTS");
        remote = "'" + peerSegment + "' " + peerDeviceName + " qp 0x" + Integer.toHexString(peer.qpNum());
    }

    private void modify(QpTransitions.QpModify m, String step) {
        int rc = verbs.modify(m);
        if (rc != 0) {
            int errno = rc > 0 ? rc : -rc;
            throw new VerbsException("ibv_modify_qp(" + device.name() + " qp 0x" + Integer.toHexString(qpNum) + " -> "
                    + step + ", mask 0x" + Integer.toHexString(m.mask()) + ") failed: " + Errno.describe(errno),
                    errno);
        }
    }

    /** Moves the QP to ERR so the hardware flushes everything queued on it; best effort. */
    void flush() {
        RdmaDevice.quietly(() -> modify(QpTransitions.error(), "ERR"));
    }

    synchronized void destroy() {
        if (!destroyed) {
            destroyed = true;
            RdmaDevice.quietly(verbs::destroy);
        }
    }

    /** Takes one send-queue credit; false when the queue is full or the QP is broken. */
    boolean reserve() {
        while (true) {
            int n = outstanding.get();
            if (n >= depth || brokenCause != null) {
                return false;
            }
            if (outstanding.compareAndSet(n, n + 1)) {
                return true;
            }
        }
    }

    void release() {
        outstanding.decrementAndGet();
    }

    @Override
    public void creditReturned() {
        release();
        Owner o = owner;
        if (o != null) {
            o.laneHasRoom(this);
        }
    }

    @Override
    public void broken(String cause) {
        if (brokenCause == null) {
            brokenCause = cause;
            Owner o = owner;
            if (o != null) {
                o.laneBroken(this, cause);
            }
        }
    }

    @Override
    public void timedOut(String cause) {
        boolean first = brokenCause == null;
        broken(cause);
        if (first) {
            flush();
        }
    }

    @Override
    public String brokenCause() {
        return brokenCause;
    }

    @Override
    public String describe() {
        return device.name() + " qp 0x" + Integer.toHexString(qpNum) + " -> " + remote;
    }
}
