package org.tent4j.transport.shm;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Slice;
import org.tent4j.spi.TimeSource;

/**
 * A link to one peer segment on this machine. A slice is one {@link MemorySegment#copy} between the local registered
 * buffer and the peer's buffer, mapped into this process on first use.
 *
 * <p>Copies up to {@code copyThreshold} bytes run on the posting thread: they take about as long as waking a worker
 * would. Larger ones go into a fixed ring ({@link ArrayBlockingQueue}) drained by at most {@code copyParallelism}
 * worker tasks; one {@link Runnable} is reused for every drain, so the steady state allocates nothing per slice. A
 * drain is scheduled only when fewer than {@code copyParallelism} are running; a drain that finds the ring empty
 * re-checks after giving up its slot, so no slice is stranded.
 */
final class ShmPeerConnection implements PeerConnection {
    private static final Logger LOG = LoggerFactory.getLogger(ShmPeerConnection.class);

    static final int QUEUE_CAPACITY = 1024;
    /** After this many copies a drain re-queues itself, so engine workers are not held by one busy peer. */
    private static final int DRAIN_BATCH = 64;
    private static final RemoteMapping[] NO_MAPPINGS = {};
    /** How often a poster checks that the peer still holds its files: a killed peer's mapping stays writable. */
    private static final long LIVENESS_INTERVAL_NANOS = 20_000_000L;

    private final ShmTransport transport;
    private final String segmentName;
    private final Executor workers;
    /** The engine's clock: slice deadlines are in its time, which a test may drive. */
    private final TimeSource clock;
    private final long inlineThreshold;
    private final int copyParallelism;
    private final ArrayBlockingQueue<Slice> queue = new ArrayBlockingQueue<>(QUEUE_CAPACITY);
    private final AtomicInteger activeDrains = new AtomicInteger();
    private final Runnable drain = this::drain;
    private final Object mapLock = new Object();

    /** Sorted by address; replaced, never modified, so the hot path reads it without locking. */
    private volatile RemoteMapping[] mappings = NO_MAPPINGS;
    private volatile boolean closed;
    /** Starts in the past, so a new connection's first post checks the owner at once. */
    private final AtomicLong lastLivenessCheck = new AtomicLong(System.nanoTime() - 2 * LIVENESS_INTERVAL_NANOS);

    ShmPeerConnection(ShmTransport transport, SegmentDescriptor peer, Executor workers, TimeSource clock,
                      long inlineThreshold, int copyParallelism) {
        this.transport = transport;
        this.segmentName = peer.name();
        this.workers = workers;
        this.clock = clock;
        this.inlineThreshold = inlineThreshold;
        this.copyParallelism = copyParallelism;
    }

    @Override
    public void post(Slice slice) {
        if (closed) {
            slice.fail(ErrorCode.PEER_FAILED, describe(slice) + ": the shm connection is closed");
            return;
        }
        if (rejectIfInvalid(slice)) {
            return;
        }
        long now = System.nanoTime();
        long last = lastLivenessCheck.get();
        if (now - last > LIVENESS_INTERVAL_NANOS && lastLivenessCheck.compareAndSet(last, now) && ownerGone(slice)) {
            String path = slice.remoteBuffer().attributes(ShmTransportProvider.ID).get(ShmAllocator.PATH);
            transport.ownerGone(path);
            LOG.warn("segment '{}' is gone: no process holds its shm file {} any more; closing its shm connection", segmentName, path);
            close();
            slice.fail(ErrorCode.PEER_FAILED, describe(slice) + ": the process owning segment '" + segmentName
                    + "' is gone (" + path + " is deleted or no longer locked)");
            return;
        }
        if (slice.length() <= inlineThreshold) {
            copyAndFinish(slice, false);
            return;
        }
        if (queue.offer(slice)) {
            if (closed) {
                // close() may have drained the ring before our offer; whoever polls the slice finishes it
                failQueued(ErrorCode.PEER_FAILED, "the shm connection is closed");
            } else {
                startDrainIfBelowLimit();
            }
            return;
        }
        // The ring is full: rare, so a task per slice is acceptable here rather than blocking the poster.
        try {
            workers.execute(() -> copyAndFinish(slice, true));
        } catch (RejectedExecutionException e) {
            slice.fail(ErrorCode.ENGINE_CLOSED, describe(slice) + ": engine workers rejected the copy");
        }
    }

    @Override
    public void descriptorChanged(SegmentDescriptor descriptor) {
        if (!descriptor.machineId().equals(transport.machineId())) {
            LOG.warn("segment '{}' now reports machine '{}' (this is '{}'); closing its shm connection",
                    segmentName, descriptor.machineId(), transport.machineId());
            close();
            return;
        }
        List<RemoteMapping> dropped = new ArrayList<>();
        synchronized (mapLock) {
            List<RemoteMapping> kept = new ArrayList<>();
            for (RemoteMapping m : mappings) {
                if (isPublished(m, descriptor)) {
                    kept.add(m);
                } else {
                    dropped.add(m);
                }
            }
            if (dropped.isEmpty()) {
                return;
            }
            mappings = kept.toArray(NO_MAPPINGS);
        }
        for (RemoteMapping m : dropped) {
            m.unmap();
        }
        LOG.debug("segment '{}' republished: unmapped {} buffer(s) it no longer publishes", segmentName, dropped.size());
    }

    @Override
    public boolean isOpen() {
        return !closed;
    }

    @Override
    public void close() {
        RemoteMapping[] unmapped;
        synchronized (mapLock) {
            if (closed) {
                return;
            }
            closed = true;
            unmapped = mappings;
            mappings = NO_MAPPINGS;
        }
        failQueued(ErrorCode.PEER_FAILED, "the shm connection was closed");
        for (RemoteMapping m : unmapped) {
            m.unmap();
        }
        transport.connectionClosed(this);
        LOG.debug("closed shm connection to segment '{}'", segmentName);
    }

    /**
     * Whether the owner of this peer's buffers has exited: every live owner holds a shared {@code flock} on each file it
     * allocated, so an exclusive non-blocking lock succeeds only when the owner is gone (or the file was deleted).
     */
    /** Probes the slice's file once it has been mapped here (mapping validated the path); allocation-free. */
    private boolean ownerGone(Slice slice) {
        String path = slice.remoteBuffer().attributes(ShmTransportProvider.ID).get(ShmAllocator.PATH);
        for (RemoteMapping m : mappings) {
            if (m.path.equals(path)) {
                return ownerGone(path);
            }
        }
        return false;
    }

    static boolean ownerGone(String path) {
        if (!LibC.isAvailable()) {
            return false;
        }
        Path file = Path.of(path);
        if (!Files.exists(file, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return true; // its owner deleted it on close
        }
        int fd;
        try {
            fd = LibC.open(file, LibC.O_RDWR | LibC.O_CLOEXEC, 0);
        } catch (IOException e) {
            return false;
        }
        try {
            return LibC.flock(fd, LibC.LOCK_EX | LibC.LOCK_NB, file);
        } catch (IOException e) {
            return false;
        } finally {
            LibC.closeQuietly(fd);
        }
    }

    int mappedBufferCount() {
        return mappings.length;
    }

    /** Each mapping's {address, length} in this process, for tests. */
    List<long[]> mappedRanges() {
        List<long[]> ranges = new ArrayList<>();
        for (RemoteMapping m : mappings) {
            ranges.add(new long[]{m.segment.address(), m.segment.byteSize()});
        }
        return ranges;
    }

    // ------------------------------------------------------------------------------------------------ data path

    /** Checks bounds, permission and deadline; fails the slice and returns true if it must not move. */
    private boolean rejectIfInvalid(Slice slice) {
        long length = slice.length();
        BufferDescriptor remote = slice.remoteBuffer();
        if (length <= 0) {
            slice.fail(ErrorCode.INVALID_ARGUMENT, describe(slice) + ": length must be > 0");
            return true;
        }
        if (!remote.contains(slice.remoteAddress(), length)) {
            slice.fail(ErrorCode.OUT_OF_BOUNDS, describe(slice) + ": remote range is outside the buffer");
            return true;
        }
        LocalBuffer local = slice.localBuffer();
        long localOffset = slice.localOffset();
        if (localOffset < 0 || localOffset > local.length() - length) {
            slice.fail(ErrorCode.OUT_OF_BOUNDS, describe(slice) + ": local range [" + localOffset + ", +" + length
                    + ") is outside local buffer " + local.id() + " of " + local.length() + " bytes");
            return true;
        }
        if (!remote.permission().allowsRemote(slice.opcode())) {
            slice.fail(ErrorCode.PERMISSION_DENIED, describe(slice) + ": the remote buffer is " + remote.permission());
            return true;
        }
        if (clock.nanoTime() - slice.deadlineNanos() > 0) {
            slice.fail(ErrorCode.TIMEOUT, describe(slice) + ": deadline passed before the copy started");
            return true;
        }
        return false;
    }

    /** Copies and completes or fails the slice, exactly once. Allocation-free when the mapping is cached. */
    /** {@code queued}: it waited for a worker, so its deadline may have passed since the runtime posted it. */
    private void copyAndFinish(Slice slice, boolean queued) {
        ErrorCode code = null;
        String message = null;
        if (closed) {
            code = ErrorCode.PEER_FAILED;
            message = describe(slice) + ": the shm connection was closed";
        } else if (queued && clock.nanoTime() - slice.deadlineNanos() > 0) {
            code = ErrorCode.TIMEOUT;
            message = describe(slice) + ": deadline passed while the copy was queued";
        } else {
            try {
                RemoteMapping mapping = mappingFor(slice.remoteBuffer());
                MemorySegment local = slice.localBuffer().segment();
                long remoteOffset = slice.remoteAddress() - mapping.address;
                if (slice.opcode() == Opcode.READ) {
                    MemorySegment.copy(mapping.segment, remoteOffset, local, slice.localOffset(), slice.length());
                } else {
                    MemorySegment.copy(local, slice.localOffset(), mapping.segment, remoteOffset, slice.length());
                }
            } catch (TransferException e) {
                code = e.code();
                message = e.getMessage();
            } catch (RuntimeException | InternalError e) {
                // IllegalStateException: unmapped by close/descriptorChanged mid-copy;
                // InternalError: SIGBUS because the peer truncated its file
                code = ErrorCode.PEER_FAILED;
                message = describe(slice) + " failed during the copy: " + e;
            }
        }
        if (code == null) {
            slice.complete();
        } else {
            slice.fail(code, message);
        }
    }

    private void drain() {
        int done = 0;
        for (;;) {
            Slice slice = queue.poll();
            if (slice == null) {
                activeDrains.decrementAndGet();
                // a post may have offered after our poll but seen the drain limit reached: look once more
                if (queue.isEmpty() || !tryAcquireDrainSlot()) {
                    return;
                }
                continue;
            }
            copyAndFinish(slice, true);
            if (++done == DRAIN_BATCH) {
                done = 0;
                if (!queue.isEmpty() && resubmitDrain()) {
                    return; // keeps its slot; the re-queued run continues
                }
            }
        }
    }

    private boolean resubmitDrain() {
        try {
            workers.execute(drain);
            return true;
        } catch (RejectedExecutionException e) {
            return false; // keep draining here
        }
    }

    private void startDrainIfBelowLimit() {
        if (!tryAcquireDrainSlot()) {
            return;
        }
        try {
            workers.execute(drain);
        } catch (RejectedExecutionException e) {
            activeDrains.decrementAndGet();
            failQueued(ErrorCode.ENGINE_CLOSED, "engine workers rejected the copy");
        }
    }

    private boolean tryAcquireDrainSlot() {
        for (;;) {
            int n = activeDrains.get();
            if (n >= copyParallelism) {
                return false;
            }
            if (activeDrains.compareAndSet(n, n + 1)) {
                return true;
            }
        }
    }

    private void failQueued(ErrorCode code, String reason) {
        Slice slice;
        while ((slice = queue.poll()) != null) {
            slice.fail(code, describe(slice) + ": " + reason);
        }
    }

    // ------------------------------------------------------------------------------------------------ mappings

    private RemoteMapping mappingFor(BufferDescriptor buffer) {
        RemoteMapping[] current = mappings;
        int i = indexOf(current, buffer.address());
        if (i >= 0 && current[i].matches(buffer)) {
            return current[i];
        }
        return mapSlow(buffer);
    }

    private RemoteMapping mapSlow(BufferDescriptor buffer) {
        RemoteMapping replaced;
        RemoteMapping created;
        synchronized (mapLock) {
            if (closed) {
                throw new TransferException(ErrorCode.PEER_FAILED, "shm connection to segment '" + segmentName
                        + "' is closed");
            }
            RemoteMapping[] current = mappings;
            int i = indexOf(current, buffer.address());
            if (i >= 0 && current[i].matches(buffer)) {
                return current[i];
            }
            created = RemoteMapping.map(transport.directory(), transport.prefaulter(), segmentName, buffer);
            RemoteMapping[] next;
            if (i >= 0) {
                // the peer freed the buffer at this address and published another (new file, size or permission)
                replaced = current[i];
                next = current.clone();
                next[i] = created;
            } else {
                replaced = null;
                int at = -(i + 1);
                next = new RemoteMapping[current.length + 1];
                System.arraycopy(current, 0, next, 0, at);
                next[at] = created;
                System.arraycopy(current, at, next, at + 1, current.length - at);
            }
            mappings = next;
        }
        if (replaced != null) {
            replaced.unmap();
        }
        return created;
    }

    /** Binary search by address; {@code -(insertion point) - 1} when absent, like {@link Arrays#binarySearch}. */
    private static int indexOf(RemoteMapping[] sorted, long address) {
        int lo = 0;
        int hi = sorted.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            long a = sorted[mid].address;
            if (a < address) {
                lo = mid + 1;
            } else if (a > address) {
                hi = mid - 1;
            } else {
                return mid;
            }
        }
        return -(lo + 1);
    }

    private static boolean isPublished(RemoteMapping m, SegmentDescriptor descriptor) {
        for (BufferDescriptor b : descriptor.buffers()) {
            if (m.matches(b)) {
                return true;
            }
        }
        return false;
    }

    private String describe(Slice slice) {
        BufferDescriptor remote = slice.remoteBuffer();
        return "shm " + slice.opcode() + " of " + slice.length() + " bytes at 0x" + Long.toHexString(slice.remoteAddress())
                + " in buffer [0x" + Long.toHexString(remote.address()) + ", +" + remote.length() + ") of segment '"
                + segmentName + "' (local buffer " + slice.localBuffer().id() + " offset " + slice.localOffset() + ")";
    }
}
