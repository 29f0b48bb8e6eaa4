package org.tent4j.transport.efa;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Iterator;
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
 */
final class FabricProgress implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(FabricProgress.class);
    private static final int CQ_BATCH = 64;
    private static final int SPIN_ROUNDS = 64;
    private static final long MIN_PARK_NANOS = 1_000;
    private static final long ACTIVE_PARK_CAP_NANOS = 50_000;
    private static final long DEADLINE_SCAN_NANOS = 1_000_000;
    private static final int MAX_CONSECUTIVE_REFUSALS = 4;
    /** An idle fi_cq_read takes well under a microsecond; one that copies data takes far longer. */
    private static final long BUSY_POLL_NANOS = 20_000;

    private static final int POSTED = 0;
    private static final int AGAIN = 1;
    private static final int FAILED = 2;

    private final Fabric fabric;
    private final String transportName;
    private final long maxOpBytes;
    private final Arena arena = Arena.ofShared();
    private final OpSlot[] slots;
    private final long contextBase;
    private final ArrayBlockingQueue<OpSlot> free;
    private final ArrayBlockingQueue<OpSlot> submitted;
    /** Slices posted while every slot was busy; allocation only under this back-pressure. */
    private final ConcurrentLinkedQueue<Deferred> overflow = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<CloseRequest> closing = new ConcurrentLinkedQueue<>();
    /** Owned by the progress thread. */
    private final ArrayDeque<OpSlot> retry = new ArrayDeque<>();
    private final MemorySegment cqEntries;
    private final MemorySegment errEntry;
    private final MemorySegment errText;
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
    private long cqFailures;

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
        MemorySegment contexts = arena.allocate(FiAbi.CONTEXT_SIZE * slotCount, FiAbi.CONTEXT_SIZE);
        this.contextBase = contexts.address();
        this.slots = new OpSlot[slotCount];
        this.free = new ArrayBlockingQueue<>(slotCount);
        this.submitted = new ArrayBlockingQueue<>(slotCount);
        for (int i = 0; i < slotCount; i++) {
            slots[i] = new OpSlot(i, contexts.asSlice(i * FiAbi.CONTEXT_SIZE, FiAbi.CONTEXT_SIZE));
            free.add(slots[i]);
        }
        this.cqEntries = arena.allocate(FiAbi.CQE_SIZE * CQ_BATCH, 8);
        this.errEntry = arena.allocate(FiAbi.ERR_ENTRY_ALLOC, 8);
        this.errText = arena.allocate(512);
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
            failConnection(connection);
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
                int work = pollCompletions();
                work += processClosing();
                work += reissue();
                work += drainSubmitted();
                work += drainOverflow();
                long now = System.nanoTime();
                if (now - nextDeadlineScan >= 0) {
                    nextDeadlineScan = now + DEADLINE_SCAN_NANOS;
                    work += enforceDeadlines(clock.nanoTime());
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

    private int pollCompletions() {
        int handled = 0;
        long start = System.nanoTime();
        long first = fabric.readCompletions(cqEntries, CQ_BATCH);
        if (System.nanoTime() - start > BUSY_POLL_NANOS) {
            // a poll that took this long moved data inside the provider: on the target side of a manual-progress
            // provider that is the only sign of a peer's READs and WRITEs, which produce no completions here
            handled++;
        }
        boolean firstRound = true;
        while (true) {
            long n = firstRound ? first : fabric.readCompletions(cqEntries, CQ_BATCH);
            firstRound = false;
            if (n > 0) {
                for (int i = 0; i < n; i++) {
                    long ctx = cqEntries.get(ADDRESS, i * FiAbi.CQE_SIZE + FiAbi.CQE_OP_CONTEXT).address();
                    OpSlot slot = slotOf(ctx);
                    if (slot != null) {
                        completed(slot);
                    }
                }
                handled += (int) n;
                if (n < CQ_BATCH) {
                    return handled;
                }
            } else if (n == -FiAbi.FI_EAVAIL) {
                readError();
                handled++;
            } else {
                if (n != -FiAbi.FI_EAGAIN && (cqFailures++ & 1023) == 0) {
                    LOG.warn("{}: {}", transportName, fabric.lib().describe("fi_cq_read", n));
                }
                return handled;
            }
        }
    }

    private OpSlot slotOf(long ctx) {
        long off = ctx - contextBase;
        if (off < 0 || off % FiAbi.CONTEXT_SIZE != 0 || off / FiAbi.CONTEXT_SIZE >= slots.length) {
            LOG.warn("{}: completion with a context 0x{} that is no operation of this transport", transportName,
                    Long.toHexString(ctx));
            return null;
        }
        return slots[(int) (off / FiAbi.CONTEXT_SIZE)];
    }

    private void completed(OpSlot slot) {
        if (!providerOwns(slot)) {
            return;
        }
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

    private void readError() {
        errEntry.fill((byte) 0);
        long rc = fabric.readError(errEntry);
        if (rc < 0) {
            if (rc != -FiAbi.FI_EAGAIN) {
                LOG.warn("{}: {}", transportName, fabric.lib().describe("fi_cq_readerr", rc));
            }
            return;
        }
        long ctx = errEntry.get(ADDRESS, FiAbi.ERR_OP_CONTEXT).address();
        int err = errEntry.get(JAVA_INT, FiAbi.ERR_ERR);
        int provErrno = errEntry.get(JAVA_INT, FiAbi.ERR_PROV_ERRNO);
        MemorySegment errData = errEntry.get(ADDRESS, FiAbi.ERR_ERR_DATA);
        OpSlot slot = slotOf(ctx);
        if (slot == null) {
            LOG.warn("{}: error completion without an operation: err {} ({}), prov_errno {}", transportName, err,
                    fabric.lib().strerror(err), provErrno);
            return;
        }
        if (!providerOwns(slot)) {
            return;
        }
        inFlight--;
        if (slot.state == OpSlot.ABANDONED) {
            release(slot);
            return;
        }
        errText.fill((byte) 0);
        String provider = fabric.providerError(provErrno, errData, errText);
        String message = slot.connection.describe(slot.slice) + " failed: fi_cq_readerr err " + err + " ("
                + fabric.lib().strerror(err) + "), prov_errno " + provErrno
                + (provider.isEmpty() ? "" : " (" + provider + ")") + FabricErrors.hint(err);
        failAndRelease(slot, FabricErrors.code(err), message);
    }

    /** Whether a completion for {@code slot} is expected; a second one for the same operation is logged and dropped. */
    private boolean providerOwns(OpSlot slot) {
        int state = slot.state;
        if (state == OpSlot.POSTED || state == OpSlot.ABANDONED) {
            return true;
        }
        LOG.warn("{}: completion for operation slot {} which the provider does not hold (state {})", transportName,
                slot.index, state);
        return false;
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

    private int enforceDeadlines(long now) {
        int n = 0;
        for (OpSlot slot : slots) {
            int state = slot.state;
            if ((state == OpSlot.POSTED || state == OpSlot.QUEUED) && now - slot.deadlineNanos > 0) {
                String message = slot.connection.describe(slot.slice) + " missed its deadline by "
                        + (now - slot.deadlineNanos) / 1_000_000 + " ms ("
                        + (state == OpSlot.POSTED ? "in flight" : "the provider kept refusing it with -FI_EAGAIN")
                        + ")";
                abandon(slot, ErrorCode.TIMEOUT, message);
                n++;
            }
        }
        for (Iterator<Deferred> it = overflow.iterator(); it.hasNext(); ) {
            Deferred d = it.next();
            if (now - d.slice().deadlineNanos() > 0 && overflow.remove(d)) {
                d.slice().fail(ErrorCode.TIMEOUT, d.connection().describe(d.slice())
                        + " timed out waiting for one of " + slots.length + " operation slots (cq_size)");
                n++;
            }
        }
        return n;
    }

    /** Fails a queued or posted slot's slice now; a posted one keeps its slot until the provider completes it. */
    private void abandon(OpSlot slot, ErrorCode code, String message) {
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
            failConnection(r.connection());
            r.done().countDown();
            n++;
        }
        return n;
    }

    private void failConnection(EfaPeerConnection connection) {
        for (OpSlot slot : slots) {
            int state = slot.state;
            if ((state == OpSlot.POSTED || state == OpSlot.QUEUED) && slot.connection == connection) {
                abandon(slot, ErrorCode.PEER_FAILED, connection.describe(slot.slice)
                        + ": the connection was closed while it was in flight");
            }
        }
        for (Iterator<Deferred> it = overflow.iterator(); it.hasNext(); ) {
            Deferred d = it.next();
            if (d.connection() == connection && overflow.remove(d)) {
                d.slice().fail(ErrorCode.PEER_FAILED, connection.describe(d.slice())
                        + ": the connection was closed before it was posted");
            }
        }
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
        for (OpSlot slot : slots) {
            int state = slot.state;
            if (slot.slice == slice) {
                return state;
            }
        }
        return -1;
    }

    /** For tests: whether every slot is back in the free list. */
    boolean idleSlots() {
        return free.size() == slots.length;
    }
}
