package org.tent4j.transport.efa;


import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.spi.Slice;
import org.tent4j.spi.TimeSource;

/**
 * The transport's one progress thread. It owns every posted operation: it issues prepared slots with fi_write /
 * fi_read, keeps the ones the provider refused with {@code -FI_EAGAIN} and reissues them after the next CQ poll,
 * reads the completion queue (which is also what drives a manual-progress provider, on the target side too, where
 * RMA produces no completions at all), completes or fails slices, and enforces deadlines.
 *
 * <p>Idle behaviour: after activity it polls a few dozen times, then parks with a doubling pause, capped at 50 us
 * while operations are in flight and at {@code progress_interval} when there are none, so an idle engine costs a few
 * thousand wake-ups a second rather than a core. A post wakes it at once. Peers' one-sided operations leave no trace
 * in the target's CQ, so a CQ poll that took long (the provider moved data inside it) also counts as activity.
 *
 * <p>Its parts: the operation slots and their free list ({@link OpSlots}), the reading of the completion queue
 * ({@link CompletionReader}) and the ending of operations before their completion, at a deadline or a closed
 * connection ({@link OpExpiry}), the last two run by this thread.
 */
final class FabricProgress implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(FabricProgress.class);
    private static final int SPIN_ROUNDS = 64;
    private static final long MIN_PARK_NANOS = 1_000;
    private static final long ACTIVE_PARK_CAP_NANOS = 50_000;
    private static final long DEADLINE_SCAN_NANOS = 1_000_000;
    private static final int MAX_CONSECUTIVE_REFUSALS = 4;

    private static final int POSTED = 0;
    private static final int AGAIN = 1;
    private static final int FAILED = 2;

    private final Fabric fabric;
    private final String transportName;
    private final long maxOpBytes;
    private final Arena arena = Arena.ofShared();
    private final OpSlot[] slots;
    private final OpSlots slotTable;
    /** The slot table's free list, read on every post. */
    private final ArrayBlockingQueue<OpSlot> free;
    private final ArrayBlockingQueue<OpSlot> submitted;
    /** Slices posted while every slot was busy; allocation only under this back-pressure. */
    private final ConcurrentLinkedQueue<Deferred> overflow = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<CloseRequest> closing = new ConcurrentLinkedQueue<>();
    /** Owned by the progress thread. */
    private final ArrayDeque<OpSlot> retry = new ArrayDeque<>();
    private final CompletionReader completions;
    private final OpExpiry expiry;
    private final long idleParkCapNanos;
    /** The engine's clock, which slice deadlines are in; the scan's cadence stays in real time, as it paces polling. */
    private final TimeSource clock;
    private final Thread thread;

    private volatile boolean running = true;
    private volatile boolean parked;
    private volatile boolean stopped;
    private int inFlight;
    private int idleRounds;
    private long nextDeadlineScan;

    record Deferred(Slice slice, EfaPeerConnection connection) {
    }

    private record CloseRequest(EfaPeerConnection connection, CountDownLatch done) {
    }

    FabricProgress(Fabric fabric, String transportName, int slotCount, long maxOpBytes, Duration progressInterval,
                   TimeSource clock) {
        this.fabric = fabric;
        this.clock = clock;
        this.transportName = transportName;
        this.maxOpBytes = maxOpBytes;
        this.idleParkCapNanos = Math.max(MIN_PARK_NANOS, progressInterval.toNanos());
        this.slotTable = new OpSlots(arena, slotCount);
        this.slots = slotTable.all();
        this.free = slotTable.free();
        this.submitted = new ArrayBlockingQueue<>(slotCount);
        this.completions = new CompletionReader(this, fabric, slotTable, arena, transportName);
        this.expiry = new OpExpiry(this, slots, overflow);
        this.thread = Thread.ofPlatform().daemon().name("efa-progress-" + transportName).unstarted(this);
    }

    void start() {
        thread.start();
    }

    int slotCount() {
        return slots.length;
    }

    // ---- called by poster threads --------------------------------------------------------------------------------

    /** A free slot, or {@code null} when all are busy or slices are already waiting for one (keeps them in order). */
    OpSlot acquire() {
        return overflow.isEmpty() ? free.poll() : null;
    }

    /** Returns a slot that was acquired but never submitted. */
    void unacquire(OpSlot slot) {
        slot.clear();
        free.add(slot);
    }

    /** Hands a prepared slot to the progress thread. */
    void submit(OpSlot slot) {
        slot.state = OpSlot.READY;
        submitted.add(slot);
        wake();
        if (stopped && submitted.remove(slot)) {
            failAndRelease(slot, ErrorCode.ENGINE_CLOSED, "the " + transportName + " transport is closed");
        }
    }

    /** Keeps a slice until a slot frees up. */
    void defer(Slice slice, EfaPeerConnection connection) {
        Deferred d = new Deferred(slice, connection);
        overflow.add(d);
        wake();
        if (stopped && overflow.remove(d)) {
            slice.fail(ErrorCode.ENGINE_CLOSED, connection.describe(slice) + ": the " + transportName
                    + " transport is closed");
        }
    }

    /** Fails every slice of {@code connection} still queued or in flight; waits for the progress thread to do it. */
    void closeConnection(EfaPeerConnection connection) {
        if (Thread.currentThread() == thread) {
            expiry.failConnection(connection);
            return;
        }
        if (stopped) {
            return;
        }
        CountDownLatch done = new CountDownLatch(1);
        closing.add(new CloseRequest(connection, done));
        wake();
        try {
            if (!done.await(10, TimeUnit.SECONDS)) {
                LOG.warn("{}: progress thread did not process the close of the connection to {} within 10 s",
                        transportName, connection.peerName());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void wake() {
        if (parked) {
            LockSupport.unpark(thread);
        }
    }

    // ---- the progress thread -------------------------------------------------------------------------------------

    @Override
    public void run() {
        nextDeadlineScan = System.nanoTime() + DEADLINE_SCAN_NANOS;
        while (running) {
            try {
                int work = completions.poll();
                work += processClosing();
                work += reissue();
                work += drainSubmitted();
                work += drainOverflow();
                long now = System.nanoTime();
                if (now - nextDeadlineScan >= 0) {
                    nextDeadlineScan = now + DEADLINE_SCAN_NANOS;
                    work += expiry.enforceDeadlines(clock.nanoTime());
                }
                if (work > 0) {
                    idleRounds = 0;
                } else {
                    idle();
                }
            } catch (Throwable t) {
                // a slice callback or a provider surprise must not kill progress for every other slice
                LOG.error("{}: progress loop error", transportName, t);
            }
        }
    }

    private void idle() {
        idleRounds++;
        if (idleRounds <= SPIN_ROUNDS) {
            Thread.onSpinWait();
            return;
        }
        long cap = inFlight > 0 || !retry.isEmpty() ? Math.min(ACTIVE_PARK_CAP_NANOS, idleParkCapNanos)
                : idleParkCapNanos;
        int doublings = Math.min(idleRounds - SPIN_ROUNDS, 30);
        long nanos = Math.min(cap, MIN_PARK_NANOS << doublings);
        parked = true;
        if (submitted.isEmpty() && closing.isEmpty() && (overflow.isEmpty() || free.isEmpty()) && running) {
            LockSupport.parkNanos(this, nanos);
        }
        parked = false;
    }

    /** A completion of {@code slot}, which the provider held: its next chunk goes out, or its slice completes. */
    void completed(OpSlot slot) {
        inFlight--;
        if (slot.state == OpSlot.ABANDONED) {
            release(slot);
            return;
        }
        slot.done += slot.chunk;
        if (slot.done < slot.length) {
            int r = issue(slot);
            if (r == AGAIN) {
                slot.state = OpSlot.QUEUED;
                retry.addLast(slot);
            }
            return;
        }
        Slice s = slot.slice;
        release(slot);
        s.complete();
    }

    /**
     * An error completion of {@code slot}, which the provider held: fail its slice with the provider's error ({@code err}, {@code provErrno}
     * and its {@code err_data}).
     */
    void failedCompletion(OpSlot slot, int err, int provErrno, MemorySegment errData) {
        inFlight--;
        if (slot.state == OpSlot.ABANDONED) {
            release(slot);
            return;
        }
        String provider = completions.providerError(provErrno, errData);
        String message = slot.connection.describe(slot.slice) + " failed: fi_cq_readerr err " + err + " ("
                + fabric.lib().strerror(err) + "), prov_errno " + provErrno
                + (provider.isEmpty() ? "" : " (" + provider + ")") + FabricErrors.hint(err);
        failAndRelease(slot, FabricErrors.code(err), message);
    }

    /** Posts the slot's next chunk. Failures other than -FI_EAGAIN fail the slice and release the slot. */
    private int issue(OpSlot slot) {
        if (!slot.connection.isOpen()) {
            failAndRelease(slot, ErrorCode.PEER_FAILED, slot.connection.describe(slot.slice)
                    + ": the connection was closed");
            return FAILED;
        }
        long len = Math.min(slot.length - slot.done, maxOpBytes);
        MemorySegment buf = MemorySegment.ofAddress(slot.localAddress + slot.done);
        long rc = slot.write
                ? fabric.write(slot.endpoint, buf, len, slot.desc, slot.fiAddr, slot.rmaAddress + slot.done, slot.key,
                slot.context)
                : fabric.read(slot.endpoint, buf, len, slot.desc, slot.fiAddr, slot.rmaAddress + slot.done, slot.key,
                slot.context);
        if (rc == 0) {
            slot.chunk = len;
            slot.state = OpSlot.POSTED;
            inFlight++;
            return POSTED;
        }
        if (rc == -FiAbi.FI_EAGAIN) {
            return AGAIN;
        }
        failAndRelease(slot, FabricErrors.code(rc), slot.connection.describe(slot.slice) + " could not be posted: "
                + fabric.lib().describe(slot.write ? "fi_write" : "fi_read", rc));
        return FAILED;
    }

    /**
     * Reissues refused operations in order. Stops after a few consecutive refusals (the endpoint's queue is full;
     * polling the CQ comes first) but rotates those to the back, so one peer that keeps refusing does not hold up the
     * others.
     */
    private int reissue() {
        int n = 0;
        int refusals = 0;
        for (int i = retry.size(); i > 0 && refusals < MAX_CONSECUTIVE_REFUSALS; i--) {
            OpSlot slot = retry.pollFirst();
            if (issue(slot) == AGAIN) {
                slot.state = OpSlot.QUEUED;
                retry.addLast(slot);
                refusals++;
            } else {
                n++;
                refusals = 0;
            }
        }
        return n;
    }

    private int drainSubmitted() {
        int n = 0;
        OpSlot slot;
        while ((slot = submitted.poll()) != null) {
            n++;
            if (issue(slot) == AGAIN) {
                slot.state = OpSlot.QUEUED;
                retry.addLast(slot);
            }
        }
        return n;
    }

    private int drainOverflow() {
        int n = 0;
        while (!overflow.isEmpty()) {
            OpSlot slot = free.poll();
            if (slot == null) {
                break;
            }
            Deferred d = overflow.poll();
            if (d == null) {
                free.add(slot);
                break;
            }
            n++;
            if (d.connection().prepare(slot, d.slice())) {
                slot.state = OpSlot.READY;
                if (issue(slot) == AGAIN) {
                    slot.state = OpSlot.QUEUED;
                    retry.addLast(slot);
                }
            } else {
                unacquire(slot);
            }
        }
        return n;
    }

    /** Fails a queued or posted slot's slice now; a posted one keeps its slot until the provider completes it. */
    void abandon(OpSlot slot, ErrorCode code, String message) {
        if (slot.state == OpSlot.QUEUED) {
            retry.remove(slot);
            failAndRelease(slot, code, message);
            return;
        }
        // the provider still owns the context (and may still touch the local buffer); ask it to stop, best effort
        fabric.cancel(slot.endpoint, slot.context);
        Slice s = slot.slice;
        slot.state = OpSlot.ABANDONED;
        slot.slice = null;
        s.fail(code, message);
    }

    private int processClosing() {
        int n = 0;
        CloseRequest r;
        while ((r = closing.poll()) != null) {
            expiry.failConnection(r.connection());
            r.done().countDown();
            n++;
        }
        return n;
    }

    private void failAndRelease(OpSlot slot, ErrorCode code, String message) {
        Slice s = slot.slice;
        release(slot);
        if (s != null) {
            s.fail(code, message);
        }
    }

    private void release(OpSlot slot) {
        slot.clear();
        free.add(slot);
    }

    // ---- shutdown ------------------------------------------------------------------------------------------------

    /**
     * Stops the thread and fails every slice not yet completed with ENGINE_CLOSED. The caller closes the endpoints
     * next and only then {@link #freeContexts()}, because the provider may hold contexts until then.
     */
    void stop() {
        running = false;
        LockSupport.unpark(thread);
        try {
            thread.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            LOG.warn("{}: progress thread did not stop within 10 s", transportName);
        }
        stopped = true;
        String why = "the " + transportName + " transport was closed while the slice was in flight";
        for (OpSlot slot : slots) {
            int state = slot.state;
            if (state == OpSlot.POSTED || state == OpSlot.QUEUED) {
                Slice s = slot.slice;
                slot.state = OpSlot.ABANDONED;
                slot.slice = null;
                s.fail(ErrorCode.ENGINE_CLOSED, slot.connection.describe(s) + ": " + why);
            }
        }
        retry.clear();
        OpSlot slot;
        while ((slot = submitted.poll()) != null) {
            failAndRelease(slot, ErrorCode.ENGINE_CLOSED, slot.connection.describe(slot.slice) + ": " + why);
        }
        Deferred d;
        while ((d = overflow.poll()) != null) {
            d.slice().fail(ErrorCode.ENGINE_CLOSED, d.connection().describe(d.slice()) + ": " + why);
        }
        CloseRequest r;
        while ((r = closing.poll()) != null) {
            r.done().countDown();
        }
    }

    boolean isStopped() {
        return stopped;
    }

    void freeContexts() {
        arena.close();
    }

    /** For tests: operations the provider still holds. Read from another thread it is only an estimate. */
    int inFlight() {
        return inFlight;
    }

    /**
     * For tests: the state of the slot carrying {@code slice} ({@link OpSlot#POSTED}, {@link OpSlot#QUEUED}, ...), or
     * -1 when no slot carries it. Safe from any thread: the slot's state is volatile and written after its slice.
     */
    int slotState(Slice slice) {
        return slotTable.stateOf(slice);
    }

    /** For tests: whether every slot is back in the free list. */
    boolean idleSlots() {
        return slotTable.allFree();
    }
}
