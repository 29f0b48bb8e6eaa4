package org.tent4j.transport.rdma;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Slice;
import org.tent4j.spi.TimeSource;

/**
 * RC queue pairs to one peer segment, grouped into paths: a path is one (local device, peer device) rail with its
 * QPs, and is what the runtime chooses per slice ({@link Slice#path()}) and keeps health for. A slice becomes one
 * signaled RDMA READ or WRITE on the next QP of its path, in round-robin order, that has send-queue room; when none
 * has, it waits in the path's bounded FIFO, which completions drain.
 *
 * <p>A QP error breaks the connection ({@link #isOpen()} false) so the runtime reconnects with fresh QPs; until it
 * does, slices still go out on QPs that work, and a path whose QPs all broke fails its slices at once. Slices already
 * queued on a broken QP are failed by their (flush) completions.
 */
final class RdmaPeerConnection implements PeerConnection {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaPeerConnection.class);
    private static final long PENDING_EXPIRY_SCAN_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
    private static final long CLOSE_DRAIN_NANOS = TimeUnit.SECONDS.toNanos(2);

    private final RdmaTransport transport;
    /** The engine's clock: slice deadlines are in its time, which a test may drive. */
    private final TimeSource clock;
    private final long connectionId;
    private final QueuePair[] queuePairs;
    private final Path[] paths;
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile SegmentDescriptor peer;
    private volatile List<RdmaAttributes.DeviceAddress> peerDevices;
    private volatile RangeTable<RemoteKeys> remoteKeys;
    private volatile String brokenCause;

    /** A remote buffer's rkeys, one per peer device. */
    record RemoteKeys(long address, long length, int[] rkeys) {
    }

    RdmaPeerConnection(RdmaTransport transport, SegmentDescriptor peer, List<RdmaAttributes.DeviceAddress> peerDevices,
                       long connectionId, List<QueuePair> queuePairs) {
        this.transport = transport;
        this.clock = transport.clock();
        this.peer = peer;
        this.peerDevices = peerDevices;
        this.connectionId = connectionId;
        this.queuePairs = queuePairs.toArray(QueuePair[]::new);
        this.remoteKeys = remoteKeyTable(peer, peerDevices);
        Map<String, List<QueuePair>> byRail = new LinkedHashMap<>();
        for (QueuePair q : queuePairs) {
            String rail = q.device().name() + "->" + peerDevices.get(q.remoteDevice()).name();
            byRail.computeIfAbsent(rail, k -> new ArrayList<>()).add(q);
        }
        List<Path> built = new ArrayList<>();
        byRail.forEach((name, qps) -> built.add(new Path(built.size(), name, qps)));
        this.paths = built.toArray(Path[]::new);
    }

    @Override
    public int pathCount() {
        return paths.length;
    }

    @Override
    public String pathName(int path) {
        return paths[path].name;
    }

    @Override
    public void post(Slice slice) {
        if (closed.get()) {
            slice.fail(ErrorCode.PEER_FAILED, "rdma connection to '" + peer.name() + "' is closed");
            return;
        }
        // the runtime names a path in [0, pathCount()); anything else still goes somewhere sensible
        paths[Math.floorMod(slice.path(), paths.length)].post(slice);
    }

    /**
     * The rkeys of the remote range, or null after failing the slice. Allocation-free when the range is in the table
     * built from the last descriptor.
     */
    private int[] rkeys(Slice slice, long remoteAddress, long length) {
        RemoteKeys keys = remoteKeys.find(remoteAddress, length);
        if (keys != null) {
            return keys.rkeys();
        }
        // the runtime checked the range against a descriptor newer than our table: read the keys from it
        BufferDescriptor b = slice.remoteBuffer();
        try {
            if (b == null || b.attributes(RdmaTransport.ID).isEmpty()) {
                throw new TransferException(ErrorCode.ADDRESS_NOT_REGISTERED, "buffer is not registered with rdma");
            }
            return RdmaAttributes.decodeBufferKeys(peer.name(), b.address(), b.attributes(RdmaTransport.ID),
                    peerDevices);
        } catch (TransferException e) {
            slice.fail(e.code(), "rdma " + slice.opcode() + " of " + length + " bytes at remote 0x"
                    + Long.toHexString(remoteAddress) + " of '" + peer.name() + "': " + e.getMessage());
            return null;
        }
    }

    private void broke(QueuePair qp, String cause) {
        if (brokenCause == null) {
            brokenCause = qp.describe() + ": " + cause;
            LOG.warn("rdma: connection to '{}' broke, it will be reopened: {}", peer.name(), brokenCause);
        }
    }

    /** Called from the pollers' sweep: drains and expires queued slices even when no completion arrives. */
    void sweep() {
        for (Path p : paths) {
            p.sweep();
        }
    }

    @Override
    public void descriptorChanged(SegmentDescriptor descriptor) {
        try {
            List<RdmaAttributes.DeviceAddress> devices = RdmaAttributes.decodeSegment(descriptor.name(),
                    descriptor.transportAttributes(RdmaTransport.ID));
            if (!devices.equals(peerDevices)) {
                // the peer's devices changed (a restart): these QPs lead nowhere useful any more
                broke(queuePairs[0], "peer '" + descriptor.name() + "' republished different rdma devices");
                return;
            }
            peer = descriptor;
            remoteKeys = remoteKeyTable(descriptor, devices);
        } catch (TransferException e) {
            broke(queuePairs[0], e.getMessage());
        }
    }

    @Override
    public boolean isOpen() {
        return !closed.get() && brokenCause == null;
    }

    @Override
    public void close() {
        close(ErrorCode.PEER_FAILED, "rdma connection to '" + peer.name() + "' was closed");
    }

    /**
     * Fails what is queued or in flight with {@code code}, flushes and destroys the QPs, and tells the peer to drop
     * its side.
     */
    void close(ErrorCode code, String why) {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        transport.forget(this);
        for (Path p : paths) {
            p.failPending(code, why);
        }
        // Settle in-flight slices with the close reason first: once a QP is flushed the poller may reap its flush
        // completions, and a slice must fail as "closed", not as a flush error. Detached slots stay occupied until
        // their completions (or the reclaim below) free them.
        for (QueuePair qp : queuePairs) {
            qp.device().slots().detachAll(qp, (slice, lane) -> slice.fail(code, why + " ("
                    + CompletionPoller.describe(slice, lane) + " was in flight)"));
        }
        for (QueuePair qp : queuePairs) {
            qp.flush();
        }
        // let the pollers take the flush completions so the slots are freed by their owners (a poller closing a
        // connection from a completion callback cannot wait for itself; reclaim below frees its slots)
        long deadline = System.nanoTime() + CLOSE_DRAIN_NANOS;
        for (QueuePair qp : queuePairs) {
            while (qp.outstanding() > 0 && !qp.device().poller().isPollerThread()
                    && System.nanoTime() - deadline < 0) {
                qp.device().poller().wake();
                try {
                    Thread.sleep(1);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        for (QueuePair qp : queuePairs) {
            qp.destroy();
            int reclaimed = qp.device().slots().reclaim(qp);
            if (reclaimed > 0) {
                LOG.debug("rdma: {} slots of {} reclaimed without completions", reclaimed, qp.describe());
            }
        }
        transport.sendDisconnect(peer, connectionId);
    }

    static RangeTable<RemoteKeys> remoteKeyTable(SegmentDescriptor peer,
                                                 List<RdmaAttributes.DeviceAddress> devices) {
        List<RemoteKeys> keys = new ArrayList<>();
        for (BufferDescriptor b : peer.buffers()) {
            if (b.attributes(RdmaTransport.ID).isEmpty()) {
                continue;
            }
            try {
                keys.add(new RemoteKeys(b.address(), b.length(), RdmaAttributes.decodeBufferKeys(peer.name(),
                        b.address(), b.attributes(RdmaTransport.ID), devices)));
            } catch (TransferException e) {
                // a slice that targets it gets the same message through the fallback lookup
                LOG.warn("rdma: {}", e.getMessage());
            }
        }
        return RangeTable.of(keys, RemoteKeys::address, RemoteKeys::length);
    }

    @Override
    public String toString() {
        return "rdma connection " + Long.toHexString(connectionId) + " to '" + peer.name() + "' (" + paths.length
                + " paths, " + queuePairs.length + " QPs)";
    }

    /** One rail: its QPs, the round-robin cursor over them, and the slices waiting for send-queue room. */
    private final class Path implements QueuePair.Owner {
        private final int index;
        private final String name;
        private final QueuePair[] qps;
        private final AtomicInteger cursor = new AtomicInteger();
        private final ArrayBlockingQueue<Slice> pending;
        private final AtomicInteger drainRequests = new AtomicInteger();
        private volatile String brokenCause;
        private long lastExpiryScan; // drainer only

        Path(int index, String name, List<QueuePair> qps) {
            this.index = index;
            this.name = name;
            this.qps = qps.toArray(QueuePair[]::new);
            int credits = qps.stream().mapToInt(q -> q.device().slots().capacity()).max().orElse(1);
            this.pending = new ArrayBlockingQueue<>(Math.max(1024, 2 * credits));
            for (QueuePair q : qps) {
                q.setOwner(this);
            }
        }

        void post(Slice slice) {
            String broken = brokenCause;
            if (broken != null) {
                slice.fail(ErrorCode.PEER_FAILED, "rdma path " + name + " to '" + peer.name() + "' is broken: "
                        + broken);
                return;
            }
            if (pending.isEmpty() && tryPost(slice)) {
                return;
            }
            if (!pending.offer(slice)) {
                slice.fail(ErrorCode.TOO_MANY_REQUESTS, "rdma path " + name + " to '" + peer.name() + "': "
                        + pending.size() + " slices already wait for send-queue room");
                return;
            }
            drain();
        }

        /**
         * Posts {@code slice} now if a QP of this path has room. Returns true when the slice was handled (posted, or
         * failed because it cannot be carried), false when every working QP is full.
         */
        private boolean tryPost(Slice slice) {
            long length = slice.length();
            long localAddress = slice.localBuffer().address() + slice.localOffset();
            RdmaTransport.LocalRegistration local = transport.localRegistration(localAddress, length);
            if (local == null) {
                slice.fail(ErrorCode.ADDRESS_NOT_REGISTERED, "rdma " + slice.opcode() + " of " + length
                        + " bytes: local range 0x" + Long.toHexString(localAddress) + " is not in a buffer registered "
                        + "with rdma (device memory, or registration failed)");
                return true;
            }
            long remoteAddress = slice.remoteAddress();
            int[] rkeys = rkeys(slice, remoteAddress, length);
            if (rkeys == null) {
                return true;
            }
            int opcode = slice.opcode() == Opcode.READ ? Verbs.IBV_WR_RDMA_READ : Verbs.IBV_WR_RDMA_WRITE;
            int n = qps.length;
            int start = cursor.getAndIncrement();
            boolean anyWorking = false;
            for (int k = 0; k < n; k++) {
                QueuePair qp = qps[Math.floorMod(start + k, n)];
                if (qp.brokenCause() != null) {
                    continue;
                }
                anyWorking = true;
                RdmaDevice device = qp.device();
                if (length <= 0 || length > device.maxMessageSize()) {
                    slice.fail(ErrorCode.INVALID_ARGUMENT, "rdma " + slice.opcode() + " of " + length + " bytes to '"
                            + peer.name() + "': length must be 1.." + device.maxMessageSize() + " (port max_msg_sz)");
                    return true;
                }
                int r = device.post(qp, slice, opcode, localAddress, local.lkey(device.index()), remoteAddress,
                        rkeys[qp.remoteDevice()]);
                if (r != RdmaDevice.NO_ROOM) {
                    return true;
                }
            }
            if (!anyWorking) {
                slice.fail(ErrorCode.PEER_FAILED, "rdma path " + name + " to '" + peer.name() + "' is broken: "
                        + brokenCause);
                return true;
            }
            return false;
        }

        /** Posts queued slices while QPs have room; one drainer at a time, and no request to drain is lost. */
        private void drain() {
            if (drainRequests.getAndIncrement() != 0) {
                return;
            }
            int missed = 1;
            while (true) {
                drainOnce();
                missed = drainRequests.addAndGet(-missed);
                if (missed == 0) {
                    return;
                }
            }
        }

        private void drainOnce() {
            if (closed.get()) {
                return; // close() fails what is queued
            }
            String broken = brokenCause;
            if (broken != null) {
                failPending(ErrorCode.PEER_FAILED, "rdma path " + name + " to '" + peer.name() + "' is broken: "
                        + broken);
                return;
            }
            long now = System.nanoTime();
            if (now - lastExpiryScan >= PENDING_EXPIRY_SCAN_NANOS && !pending.isEmpty()) {
                lastExpiryScan = now;
                // only the drainer removes from the queue, so this cannot race with the head being posted
                long engineNow = clock.nanoTime();
                pending.removeIf(s -> {
                    if (s.deadlineNanos() - engineNow < 0) {
                        s.fail(ErrorCode.TIMEOUT, "rdma " + s.opcode() + " of " + s.length() + " bytes on path "
                                + name + " to '" + peer.name() + "' waited past its deadline for send-queue room");
                        return true;
                    }
                    return false;
                });
            }
            Slice s;
            while ((s = pending.peek()) != null) {
                if (!tryPost(s)) {
                    return;
                }
                pending.poll();
            }
        }

        void failPending(ErrorCode code, String why) {
            Slice s;
            while ((s = pending.poll()) != null) {
                s.fail(code, why);
            }
        }

        void sweep() {
            if (!pending.isEmpty()) {
                drain();
            }
        }

        @Override
        public void laneHasRoom(QueuePair qp) {
            if (!pending.isEmpty()) {
                drain();
            }
        }

        @Override
        public void laneBroken(QueuePair qp, String cause) {
            broke(qp, cause);
            boolean all = true;
            for (QueuePair q : qps) {
                all &= q.brokenCause() != null;
            }
            if (all && brokenCause == null) {
                brokenCause = qp.describe() + ": " + cause;
            }
            drain();
        }

        @Override
        public String peerName() {
            return peer.name();
        }

        @Override
        public String toString() {
            return "path " + index + " " + name;
        }
    }
}
