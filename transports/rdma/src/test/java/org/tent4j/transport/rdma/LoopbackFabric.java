package org.tent4j.transport.rdma;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.tent4j.spi.TimeSource;

/**
 * A test double for the verbs boundary ({@link DeviceVerbs}, {@link QueuePairVerbs}), so the transport's own logic
 * above it (handshake, QP pairing, lkey/rkey choice, send-queue credits and queueing, completion mapping, close) runs
 * in one JVM. It copies bytes with {@link MemorySegment#copy} and enforces what an RC QP enforces that this logic
 * depends on: the RESET→INIT→RTR→RTS order with the attribute masks, that the destination QP exists, that lkeys and
 * rkeys name registered ranges with the right access, and that an error moves the QP to ERR and flushes. It is not
 * evidence of how real hardware behaves.
 */
final class LoopbackFabric {
    static final int EINVAL = 22;

    final Map<Integer, LoopbackQp> qps = new ConcurrentHashMap<>();
    final List<LoopbackQp> destroyed = new CopyOnWriteArrayList<>();
    final List<String> violations = new CopyOnWriteArrayList<>();
    private final AtomicInteger qpNums = new AtomicInteger(0x100);
    private final AtomicInteger keys = new AtomicInteger(0x1000);
    volatile boolean holdCompletions;
    /** Notified whenever a QP is posted to, changes state or is destroyed; see {@link #await}. */
    private final Object changes = new Object();

    /** Opens loopback devices named {@code names}, as {@link RdmaTransport.DeviceOpener} would open hardware. */
    List<RdmaDevice> open(RdmaOptions options, Runnable periodic, String... names) {
        List<RdmaDevice> out = new ArrayList<>();
        for (String name : names) {
            if (!options.allows(name)) {
                continue;
            }
            LoopbackDevice d = new LoopbackDevice(name);
            byte[] gid = new byte[16];
            gid[0] = (byte) 0xfe;
            gid[1] = (byte) 0x80;
            gid[15] = (byte) (name.hashCode() & 0xff);
            int lid = 1 + Math.floorMod(name.hashCode(), 1000);
            RdmaDevice.PortInfo port = new RdmaDevice.PortInfo(Verbs.IBV_PORT_ACTIVE, Verbs.IBV_MTU_4096, lid,
                    Verbs.IBV_LINK_LAYER_INFINIBAND, 128, 1L << 30, 0, gid);
            RdmaDevice.DeviceLimits limits = new RdmaDevice.DeviceLimits(1L << 40, 16384, 30, 1 << 20, 16, 16, 1);
            out.add(new RdmaDevice(name, out.size(), d, d.cq, port, limits, options,
                    Math.min(options.cqSize(), limits.maxCqe()), TimeSource.SYSTEM, periodic, null).start());
        }
        return out;
    }

    /** Delivers every held completion. */
    void release() {
        for (LoopbackQp qp : qps.values()) {
            qp.releaseHeld(Verbs.IBV_WC_SUCCESS);
        }
    }

    /**
     * Waits until {@code condition} over the fabric's state (posts, QP states, destroyed QPs) holds. It is re-checked
     * each time the fabric changes, so the wait ends with the change that satisfies it.
     */
    void await(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        synchronized (changes) {
            while (!condition.getAsBoolean()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new AssertionError("not reached within 10 s: " + what);
                }
                TimeUnit.NANOSECONDS.timedWait(changes, left);
            }
        }
    }

    private void changed() {
        synchronized (changes) {
            changes.notifyAll();
        }
    }

    int postsOn(LoopbackQp qp) {
        return qp.posts.get();
    }

    record Region(long address, long length, int access) {
        boolean contains(long a, long len) {
            return a >= address && a - address <= length - len;
        }
    }

    final class LoopbackDevice implements DeviceVerbs {
        final String name;
        final Fakes.ScriptedCompletions cq = new Fakes.ScriptedCompletions();
        final Map<Integer, Region> byLkey = new ConcurrentHashMap<>();
        final Map<Integer, Region> byRkey = new ConcurrentHashMap<>();
        volatile boolean closed;

        LoopbackDevice(String name) {
            this.name = name;
        }

        @Override
        public RdmaDevice.MemoryRegion register(long address, long length, int access, String what) {
            if (length <= 0) {
                throw new VerbsException("ibv_reg_mr(" + what + ") failed: " + Errno.describe(EINVAL), EINVAL);
            }
            int lkey = keys.incrementAndGet();
            int rkey = keys.incrementAndGet() | 0x8000_0000; // exercise unsigned keys
            Region r = new Region(address, length, access);
            byLkey.put(lkey, r);
            byRkey.put(rkey, r);
            return new RdmaDevice.MemoryRegion(MemorySegment.NULL, lkey, rkey);
        }

        @Override
        public void deregister(RdmaDevice.MemoryRegion region) {
            byLkey.remove(region.lkey());
            byRkey.remove(region.rkey());
        }

        @Override
        public QueuePairVerbs createQueuePair(int sendQueueDepth, int maxSge) {
            LoopbackQp qp = new LoopbackQp(this, qpNums.incrementAndGet());
            qps.put(qp.qpNum, qp);
            return qp;
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    final class LoopbackQp implements QueuePairVerbs {
        final LoopbackDevice device;
        final int qpNum;
        final List<Integer> states = new CopyOnWriteArrayList<>();
        final AtomicInteger posts = new AtomicInteger();
        private final List<Long> held = new ArrayList<>();
        volatile int state = Verbs.IBV_QPS_RESET;
        volatile int destQpNum = -1;

        LoopbackQp(LoopbackDevice device, int qpNum) {
            this.device = device;
            this.qpNum = qpNum;
        }

        @Override
        public int qpNum() {
            return qpNum;
        }

        @Override
        public synchronized int modify(QpTransitions.QpModify m) {
            int from = state;
            int to = m.qpState();
            boolean ok = switch (to) {
                case Verbs.IBV_QPS_INIT -> from == Verbs.IBV_QPS_RESET && m.mask() == QpTransitions.INIT_MASK;
                case Verbs.IBV_QPS_RTR -> from == Verbs.IBV_QPS_INIT && m.mask() == QpTransitions.RTR_MASK
                        && qps.containsKey(m.destQpNum());
                case Verbs.IBV_QPS_RTS -> from == Verbs.IBV_QPS_RTR && m.mask() == QpTransitions.RTS_MASK;
                case Verbs.IBV_QPS_ERR -> m.mask() == Verbs.IBV_QP_STATE;
                default -> false;
            };
            if (!ok) {
                violations.add("qp 0x" + Integer.toHexString(qpNum) + ": " + from + " -> " + to + " mask 0x"
                        + Integer.toHexString(m.mask()));
                return EINVAL;
            }
            if (to == Verbs.IBV_QPS_RTR) {
                destQpNum = m.destQpNum();
            }
            state = to;
            if (to == Verbs.IBV_QPS_ERR) {
                flushHeld();
            }
            // recorded after the flush, so a test that saw ERR finds the flush completions already queued
            states.add(to);
            changed();
            return 0;
        }

        @Override
        public int postSend(MemorySegment request, MemorySegment badRequest) {
            MemorySegment wr = request.reinterpret(Verbs.IBV_SEND_WR.byteSize());
            long wrId = wr.get(JAVA_LONG, Verbs.SEND_WR_WR_ID);
            synchronized (this) {
                if (state == Verbs.IBV_QPS_ERR) {
                    device.cq.add(wrId, Verbs.IBV_WC_WR_FLUSH_ERR, 0);
                    return 0;
                }
                if (state != Verbs.IBV_QPS_RTS) {
                    return EINVAL;
                }
            }
            int opcode = wr.get(JAVA_INT, Verbs.SEND_WR_OPCODE);
            long remote = wr.get(JAVA_LONG, Verbs.SEND_WR_RDMA_REMOTE_ADDR);
            int rkey = wr.get(JAVA_INT, Verbs.SEND_WR_RDMA_RKEY);
            MemorySegment sge = wr.get(ADDRESS, Verbs.SEND_WR_SG_LIST).reinterpret(Verbs.IBV_SGE.byteSize());
            long local = sge.get(JAVA_LONG, Verbs.SGE_ADDR);
            int length = sge.get(JAVA_INT, Verbs.SGE_LENGTH);
            int lkey = sge.get(JAVA_INT, Verbs.SGE_LKEY);
            boolean signaled = (wr.get(JAVA_INT, Verbs.SEND_WR_SEND_FLAGS) & Verbs.IBV_SEND_SIGNALED) != 0;
            if (!signaled || wr.get(JAVA_INT, Verbs.SEND_WR_NUM_SGE) != 1) {
                violations.add("unsignaled or multi-sge request");
            }
            LoopbackQp peer = qps.get(destQpNum);
            Region l = device.byLkey.get(lkey);
            Region r = peer == null ? null : peer.device.byRkey.get(rkey);
            int needed = opcode == Verbs.IBV_WR_RDMA_READ ? Verbs.IBV_ACCESS_REMOTE_READ
                    : Verbs.IBV_ACCESS_REMOTE_WRITE;
            int status;
            if (peer == null || peer.state < Verbs.IBV_QPS_RTR || peer.state == Verbs.IBV_QPS_ERR) {
                status = Verbs.IBV_WC_RETRY_EXC_ERR;
            } else if (l == null || !l.contains(local, length)
                    || (opcode == Verbs.IBV_WR_RDMA_READ && (l.access() & Verbs.IBV_ACCESS_LOCAL_WRITE) == 0)) {
                status = Verbs.IBV_WC_LOC_PROT_ERR;
            } else if (r == null || !r.contains(remote, length) || (r.access() & needed) == 0) {
                status = Verbs.IBV_WC_REM_ACCESS_ERR;
            } else {
                MemorySegment src = MemorySegment.ofAddress(opcode == Verbs.IBV_WR_RDMA_READ ? remote : local)
                        .reinterpret(length);
                MemorySegment dst = MemorySegment.ofAddress(opcode == Verbs.IBV_WR_RDMA_READ ? local : remote)
                        .reinterpret(length);
                MemorySegment.copy(src, 0, dst, 0, length);
                status = Verbs.IBV_WC_SUCCESS;
            }
            synchronized (this) {
                if (status != Verbs.IBV_WC_SUCCESS) {
                    device.cq.add(wrId, status, 0x42);
                    state = Verbs.IBV_QPS_ERR;
                    flushHeld();
                } else if (holdCompletions) {
                    held.add(wrId);
                } else {
                    device.cq.add(wrId, status, 0);
                }
            }
            // counted once the request is on the wire (or held), so a test that saw the count can release it
            posts.incrementAndGet();
            changed();
            return 0;
        }

        synchronized void releaseHeld(int status) {
            for (long id : held) {
                device.cq.add(id, status, 0);
            }
            held.clear();
        }

        private void flushHeld() {
            releaseHeld(Verbs.IBV_WC_WR_FLUSH_ERR);
        }

        @Override
        public void destroy() {
            qps.remove(qpNum);
            destroyed.add(this);
            changed();
        }
    }
}
