package org.tent4j.transport.rdma;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.spi.Slice;
import org.tent4j.spi.TimeSource;

/**
 * One opened RDMA device (HCA) and everything this transport keeps per device: the verbs context, a protection
 * domain, one completion queue shared by all of its queue pairs, the slot table and work requests sized to that CQ,
 * and the completion-polling thread.
 */
final class RdmaDevice implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaDevice.class);
    private static final int POLL_BATCH = 64;

    /** {@link #post} outcomes. */
    static final int POSTED = 0;
    static final int NO_ROOM = 1;
    static final int FAILED = 2;

    private final DeviceVerbs verbs;
    private final String name;
    private final int index;
    private final int lid;
    private final byte[] gid;
    private final int mtu;
    private final long maxMessageSize;
    private final long maxMrSize;
    private final int sendQueueDepth;
    private final int maxSge;
    private final QpTransitions.PathSettings path;
    private final SlotTable slots;
    private final WorkRequests requests;
    private final CompletionPoller poller;
    private final Runnable onClose;

    /**
     * @param completions where this device's completions are polled from
     * @param cqEntries   completion-queue size, and so the slot count
     * @param clock       the engine's clock, which slice deadlines are in
     * @param periodic    run on every poller sweep
     * @param onClose     releases what the opener allocated beyond {@code verbs} (may be null)
     */
    RdmaDevice(String name, int index, DeviceVerbs verbs, CompletionSource completions, PortInfo portInfo,
               DeviceLimits limits, RdmaOptions options, int cqEntries, TimeSource clock, Runnable periodic,
               Runnable onClose) {
        this.verbs = verbs;
        this.name = name;
        this.index = index;
        this.lid = portInfo.lid();
        this.gid = portInfo.gid();
        this.mtu = Math.min(options.pathMtuEnum(), portInfo.activeMtu());
        this.maxMessageSize = portInfo.maxMessageSize();
        this.maxMrSize = limits.maxMrSize();
        this.sendQueueDepth = Math.min(options.maxQpWr(), limits.maxQpWr());
        this.maxSge = Math.min(options.maxSge(), limits.maxSge());
        this.path = QpTransitions.pathSettings(options, portInfo.gidIndex(), limits.maxQpRdAtom(),
                limits.maxQpInitRdAtom());
        this.slots = new SlotTable(cqEntries);
        this.requests = new WorkRequests(cqEntries);
        this.poller = new CompletionPoller(name, completions, slots, POLL_BATCH, periodic, clock);
        this.onClose = onClose;
    }

    record PortInfo(int state, int activeMtu, int lid, int linkLayer, int gidTableLength, long maxMessageSize,
                    int gidIndex, byte[] gid) {
    }

    record DeviceLimits(long maxMrSize, int maxQpWr, int maxSge, int maxCqe, int maxQpRdAtom, int maxQpInitRdAtom,
                        int physPortCount) {
    }

    /**
     * Opens {@code device}, checks its port is ACTIVE, picks the GID, and creates PD, CQ and poller (started).
     *
     * @throws VerbsException naming the device and the failing step
     */
    static RdmaDevice open(VerbsLibrary verbs, MemorySegment device, String name, int index, RdmaOptions options,
                           TimeSource clock, Runnable periodic) {
        MemorySegment context = verbs.openDevice(device, name);
        MemorySegment pd = null;
        MemorySegment cq = null;
        Arena arena = Arena.ofShared();
        try {
            DeviceLimits limits = queryLimits(verbs, context, name);
            if (options.port() > limits.physPortCount()) {
                throw new VerbsException(name + " has " + limits.physPortCount() + " port(s); transports.rdma.port is "
                        + options.port(), 0);
            }
            PortInfo portInfo = queryPort(verbs, context, name, options.port(), options.gidIndex());
            if (portInfo.state() != Verbs.IBV_PORT_ACTIVE) {
                throw new VerbsException(name + " port " + options.port() + " is "
                        + VerbsValues.portStateName(portInfo.state()), 0);
            }
            pd = verbs.allocPd(context, name);
            int cqEntries = Math.min(options.cqSize(), limits.maxCqe());
            cq = verbs.createCq(context, cqEntries, name);
            RdmaDevice d = new RdmaDevice(name, index, new NativeDeviceVerbs(verbs, name, context, pd, cq),
                    new VerbsCompletionQueue(verbs, cq, POLL_BATCH, arena), portInfo, limits, options, cqEntries,
                    clock, periodic, arena::close);
            d.start();
            LOG.info("rdma: opened {} port {} ({}, lid {}, gid[{}] {}, mtu {}, cq {}, sq depth {})", name,
                    options.port(), portInfo.linkLayer() == Verbs.IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand",
                    portInfo.lid(), portInfo.gidIndex(), VerbsValues.gidToString(portInfo.gid()), VerbsValues.mtuBytes(d.mtu),
                    cqEntries, d.sendQueueDepth);
            return d;
        } catch (RuntimeException e) {
            if (cq != null) {
                MemorySegment c = cq;
                quietly(() -> verbs.destroyCq(c));
            }
            if (pd != null) {
                MemorySegment p = pd;
                quietly(() -> verbs.deallocPd(p));
            }
            quietly(() -> verbs.closeDevice(context));
            arena.close();
            throw e;
        }
    }

    /** Starts the completion poller. */
    RdmaDevice start() {
        poller.start();
        return this;
    }

    static DeviceLimits queryLimits(VerbsLibrary verbs, MemorySegment context, String name) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(Verbs.IBV_DEVICE_ATTR);
            verbs.queryDevice(context, attr, name);
            return new DeviceLimits(attr.get(JAVA_LONG, Verbs.DEVICE_ATTR_MAX_MR_SIZE),
                    attr.get(JAVA_INT, Verbs.DEVICE_ATTR_MAX_QP_WR), attr.get(JAVA_INT, Verbs.DEVICE_ATTR_MAX_SGE),
                    attr.get(JAVA_INT, Verbs.DEVICE_ATTR_MAX_CQE),
                    attr.get(JAVA_INT, Verbs.DEVICE_ATTR_MAX_QP_RD_ATOM),
                    attr.get(JAVA_INT, Verbs.DEVICE_ATTR_MAX_QP_INIT_RD_ATOM),
                    Byte.toUnsignedInt(attr.get(JAVA_BYTE, Verbs.DEVICE_ATTR_PHYS_PORT_CNT)));
        }
    }

    /** The port's state and addressing; with {@code gidIndex < 0} the GID is chosen by {@link GidSelection}. */
    static PortInfo queryPort(VerbsLibrary verbs, MemorySegment context, String name, int port, int gidIndex) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(Verbs.IBV_PORT_ATTR);
            verbs.queryPort(context, port, attr, name);
            int state = attr.get(JAVA_INT, Verbs.PORT_ATTR_STATE);
            int activeMtu = attr.get(JAVA_INT, Verbs.PORT_ATTR_ACTIVE_MTU);
            int lid = Short.toUnsignedInt(attr.get(JAVA_SHORT, Verbs.PORT_ATTR_LID));
            int linkLayer = Byte.toUnsignedInt(attr.get(JAVA_BYTE, Verbs.PORT_ATTR_LINK_LAYER));
            int gidTableLength = attr.get(JAVA_INT, Verbs.PORT_ATTR_GID_TBL_LEN);
            long maxMsg = Integer.toUnsignedLong(attr.get(JAVA_INT, Verbs.PORT_ATTR_MAX_MSG_SZ));
            if (state != Verbs.IBV_PORT_ACTIVE) {
                return new PortInfo(state, activeMtu, lid, linkLayer, gidTableLength, maxMsg, -1, new byte[16]);
            }
            int chosen = gidIndex;
            if (chosen < 0) {
                chosen = GidSelection.choose(linkLayer, gidEntries(verbs, context, name, port, gidTableLength, a));
                if (chosen < 0) {
                    throw new VerbsException(name + " port " + port + " has no usable GID in its " + gidTableLength
                            + "-entry table", 0);
                }
            }
            MemorySegment g = a.allocate(Verbs.IBV_GID);
            verbs.queryGid(context, port, chosen, g, name);
            byte[] gid = g.toArray(JAVA_BYTE);
            if (VerbsValues.isZeroGid(gid) && linkLayer == Verbs.IBV_LINK_LAYER_ETHERNET) {
                throw new VerbsException(name + " port " + port + " GID index " + chosen
                        + " is empty (RoCE needs a GID; check transports.rdma.gid_index)", 0);
            }
            return new PortInfo(state, activeMtu, lid, linkLayer, gidTableLength, maxMsg, chosen, gid);
        }
    }

    private static List<GidSelection.GidEntry> gidEntries(VerbsLibrary verbs, MemorySegment context, String name,
                                                          int port, int tableLength, Arena a) {
        List<GidSelection.GidEntry> entries = new ArrayList<>();
        if (verbs.hasQueryGidEx()) {
            MemorySegment entry = a.allocate(Verbs.IBV_GID_ENTRY);
            for (int i = 0; i < tableLength; i++) {
                if (verbs.queryGidEx(context, port, i, entry) == 0) {
                    entries.add(new GidSelection.GidEntry(i, entry.asSlice(Verbs.GID_ENTRY_GID, 16)
                            .toArray(JAVA_BYTE), entry.get(JAVA_INT, Verbs.GID_ENTRY_GID_TYPE)));
                }
            }
        } else {
            // without the type, every entry looks like IB/RoCE v1 and the first non-zero one is used
            MemorySegment g = a.allocate(Verbs.IBV_GID);
            for (int i = 0; i < tableLength; i++) {
                try {
                    verbs.queryGid(context, port, i, g, name);
                    entries.add(new GidSelection.GidEntry(i, g.toArray(JAVA_BYTE), Verbs.IBV_GID_TYPE_IB));
                } catch (VerbsException e) {
                    // an empty slot
                }
            }
        }
        return entries;
    }

    String name() {
        return name;
    }

    int index() {
        return index;
    }

    int lid() {
        return lid;
    }

    byte[] gid() {
        return gid.clone();
    }

    int mtu() {
        return mtu;
    }

    long maxMessageSize() {
        return maxMessageSize;
    }

    QpTransitions.PathSettings path() {
        return path;
    }

    RdmaAttributes.DeviceAddress address() {
        return new RdmaAttributes.DeviceAddress(name, lid, gid);
    }

    SlotTable slots() {
        return slots;
    }

    CompletionPoller poller() {
        return poller;
    }

    DeviceVerbs verbs() {
        return verbs;
    }

    /** Registers {@code [address, address + length)} in this device's PD. */
    MemoryRegion register(long address, long length, int access) {
        if (length > maxMrSize) {
            throw new VerbsException("buffer of " + length + " bytes exceeds " + name + "'s max_mr_size "
                    + maxMrSize, 0);
        }
        return verbs.register(address, length, access, name + ", 0x" + Long.toHexString(address) + " +" + length
                + ", access 0x" + Integer.toHexString(access));
    }

    void deregister(MemoryRegion region) {
        verbs.deregister(region);
    }

    /** A registered region: the {@code ibv_mr} (NULL for a test double) and its keys. */
    record MemoryRegion(MemorySegment handle, int lkey, int rkey) {
    }

    /** Creates an RC QP on this device's PD and CQ, in RESET, with a random first PSN. */
    QueuePair createQueuePair(int remoteDevice) {
        QueuePairVerbs qp = verbs.createQueuePair(sendQueueDepth, maxSge);
        int psn = ThreadLocalRandom.current().nextInt(1 << 24);
        return new QueuePair(this, qp, psn, remoteDevice, sendQueueDepth);
    }

    /**
     * Posts one signaled RDMA READ or WRITE for {@code slice} on {@code qp}. Allocation-free.
     *
     * @return {@link #POSTED}; {@link #NO_ROOM} when the QP's send queue or this device's CQ is full (nothing was
     *         done, the caller queues the slice); {@link #FAILED} when the post failed (the slice has been failed and
     *         the QP marked broken)
     */
    int post(QueuePair qp, Slice slice, int opcode, long localAddress, int lkey, long remoteAddress, int rkey) {
        if (!qp.reserve()) {
            return NO_ROOM;
        }
        long wrId = slots.acquire(slice, qp, slice.deadlineNanos());
        if (wrId < 0) {
            qp.release();
            return NO_ROOM;
        }
        int i = SlotTable.index(wrId);
        MemorySegment wr = requests.fill(i, wrId, opcode, localAddress, (int) slice.length(), lkey, remoteAddress,
                rkey);
        int rc = qp.verbs().postSend(wr, requests.badRequest(i));
        if (rc != 0) {
            Slice mine = slots.take(wrId);
            slots.free(wrId);
            qp.release();
            String cause = "ibv_post_send failed: " + Errno.describe(rc > 0 ? rc : -rc);
            qp.broken(cause);
            if (mine != null) {
                mine.fail(ErrorCode.PEER_FAILED, CompletionPoller.describe(mine, qp) + ": " + cause);
            }
            return FAILED;
        }
        poller.wake();
        return POSTED;
    }

    @Override
    public void close() {
        poller.stop();
        verbs.close();
        requests.close();
        if (onClose != null) {
            onClose.run();
        }
    }

    static void quietly(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            LOG.warn("rdma: cleanup step failed: {}", e.getMessage());
        }
    }

    @Override
    public String toString() {
        return name;
    }
}
