package org.tent4j.transport.rdma;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.Slice;
import org.tent4j.spi.TimeSource;

/**
 * Drains one completion queue: maps each work completion through the {@link SlotTable} to its slice and completes or
 * fails it, returns the lane's credit, marks a lane broken on an error status, and fails slices whose deadline passed.
 * Runs on its own thread per device; {@link #pollOnce} and {@link #sweep} are the whole logic and are what tests drive.
 *
 * <p>Idle behaviour (TENT's worker model): poll continuously while completions arrive; after a grace period without
 * any, back off from spinning to yielding to parking, and with nothing in flight park until a post {@link #wake}s it.
 */
final class CompletionPoller implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(CompletionPoller.class);

    /** How often deadlines are checked. */
    static final long SWEEP_INTERVAL_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
    private static final int SPIN_POLLS = 200;
    private static final int YIELD_POLLS = 200;
    private static final long MIN_PARK_NANOS = TimeUnit.MICROSECONDS.toNanos(20);
    private static final long MAX_BUSY_PARK_NANOS = TimeUnit.MICROSECONDS.toNanos(200);

    private final String device;
    private final CompletionSource source;
    private final SlotTable slots;
    private final CompletionBatch batch;
    private final Runnable periodic;
    private final SlotTable.ExpiredSlices onExpired = this::expired;

    private volatile boolean running = true;
    private volatile boolean parked;
    private volatile Thread thread;
    private volatile String queueFailure;
    /** The engine's clock, which slice deadlines are in; the sweep's cadence stays in real time, as it paces polling. */
    private final TimeSource clock;
    /**
     * How long an idle poller parks with nothing in flight before it sweeps again. Tests set it far longer, before
     * {@link #start}, so that only {@link #wake} can end the park and a lost wake-up shows as a hang.
     */
    long idleParkNanos = SWEEP_INTERVAL_NANOS;

    /**
     * @param periodic runs with every sweep on the poller thread (the transport drains and expires queued slices)
     */
    CompletionPoller(String device, CompletionSource source, SlotTable slots, int batchSize, Runnable periodic,
                     TimeSource clock) {
        this.device = device;
        this.clock = clock;
        this.source = source;
        this.slots = slots;
        this.batch = new CompletionBatch(batchSize);
        this.periodic = periodic;
    }

    Thread start() {
        Thread t = Thread.ofPlatform().daemon().name("tent4j-rdma-poller-" + device).unstarted(this);
        thread = t;
        t.start();
        return t;
    }

    /** Unparks the poller if it is idle-parked; cheap when it is not. */
    void wake() {
        if (parked) {
            Thread t = thread;
            if (t != null) {
                LockSupport.unpark(t);
            }
        }
    }

    /** Stops the thread and waits for it. */
    void stop() {
        running = false;
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
            try {
                t.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Whether the calling thread is this poller's (which must not wait for its own completions). */
    boolean isPollerThread() {
        return Thread.currentThread() == thread;
    }

    /** Set when the completion queue itself failed; nothing on this device can complete after that. */
    String queueFailure() {
        return queueFailure;
    }

    @Override
    public void run() {
        int idle = 0;
        long lastSweep = System.nanoTime();
        long park = MIN_PARK_NANOS;
        while (running) {
            int n = pollOnce();
            long now = System.nanoTime();
            if (now - lastSweep >= SWEEP_INTERVAL_NANOS) {
                lastSweep = now;
                sweep(clock.nanoTime());
            }
            if (n > 0) {
                idle = 0;
                park = MIN_PARK_NANOS;
                continue;
            }
            if (n < 0) {
                // a failed CQ does not recover; stop hammering it and let the sweep fail what is left
                idle = SPIN_POLLS + YIELD_POLLS;
            }
            idle++;
            if (idle <= SPIN_POLLS) {
                Thread.onSpinWait();
            } else if (idle <= SPIN_POLLS + YIELD_POLLS) {
                Thread.yield();
            } else if (slots.occupied() > 0) {
                // work is in flight but quiet: sleep briefly, growing; a new post wakes us at once
                parked = true;
                LockSupport.parkNanos(this, park);
                parked = false;
                park = Math.min(park * 2, MAX_BUSY_PARK_NANOS);
            } else {
                parked = true;
                // re-check after publishing 'parked': a post that raced with us has either seen it or is counted
                if (slots.occupied() == 0 && running) {
                    LockSupport.parkNanos(this, idleParkNanos);
                }
                parked = false;
            }
        }
    }

    /**
     * Polls the queue once and dispatches what it returned. Allocation-free on the success path.
     *
     * @return completions handled, or negative if the queue failed
     */
    int pollOnce() {
        int n = source.poll(batch);
        if (n < 0) {
            if (queueFailure == null) {
                queueFailure = "ibv_poll_cq on " + device + " failed with " + n;
                LOG.error("rdma: {}; every slice in flight on {} will time out", queueFailure, device);
            }
            return n;
        }
        for (int i = 0; i < n; i++) {
            dispatch(batch.wrId[i], batch.status[i], batch.vendorErr[i], batch.qpNum[i]);
        }
        return n;
    }

    private void dispatch(long wrId, int status, int vendorErr, int qpNum) {
        Lane lane = slots.lane(wrId);
        if (lane == null) {
            LOG.warn("rdma: completion on {} qp 0x{} for unknown wr_id 0x{} ({}) ignored", device,
                    Integer.toHexString(qpNum), Long.toHexString(wrId), VerbsValues.wcStatusName(status));
            return;
        }
        Slice slice = slots.take(wrId);
        slots.free(wrId);
        if (status == Verbs.IBV_WC_SUCCESS) {
            if (slice != null) {
                slice.complete();
            }
        } else {
            String cause = lane.brokenCause();
            if (status != Verbs.IBV_WC_WR_FLUSH_ERR || cause == null) {
                cause = VerbsValues.wcStatusName(status) + " (status " + status + ", vendor_err 0x"
                        + Integer.toHexString(vendorErr) + ")";
                lane.broken(cause);
            }
            if (slice != null) {
                slice.fail(errorCode(status), describe(slice, lane) + " failed: "
                        + (status == Verbs.IBV_WC_WR_FLUSH_ERR ? "flushed, queue pair broke earlier: " : "")
                        + cause);
            }
        }
        lane.creditReturned();
    }

    /** Fails every slice whose deadline has passed, then runs the periodic hook. */
    void sweep(long nowNanos) {
        slots.expire(nowNanos, onExpired);
        if (periodic != null) {
            try {
                periodic.run();
            } catch (RuntimeException e) {
                LOG.warn("rdma: periodic work on poller {} failed", device, e);
            }
        }
    }

    private void expired(Slice slice, Lane lane) {
        String failure = queueFailure;
        String cause = "no completion before the deadline" + (failure != null ? " (" + failure + ")" : "");
        slice.fail(ErrorCode.TIMEOUT, describe(slice, lane) + " timed out: " + cause);
        lane.timedOut("a work request timed out");
    }

    /**
     * The error code for a work-completion status: access and protection errors are PERMISSION_DENIED (the peer's key
     * does not allow it, or the range is outside its region); transport and peer errors are PEER_FAILED, which the
     * runtime may retry on another path; errors in what this side built are INTERNAL.
     */
    static ErrorCode errorCode(int status) {
        return switch (status) {
            case Verbs.IBV_WC_SUCCESS -> throw new IllegalArgumentException("IBV_WC_SUCCESS is not an error");
            case Verbs.IBV_WC_REM_ACCESS_ERR, Verbs.IBV_WC_LOC_PROT_ERR, Verbs.IBV_WC_LOC_ACCESS_ERR ->
                    ErrorCode.PERMISSION_DENIED;
            case Verbs.IBV_WC_LOC_LEN_ERR, Verbs.IBV_WC_LOC_QP_OP_ERR, Verbs.IBV_WC_REM_INV_REQ_ERR,
                 Verbs.IBV_WC_MW_BIND_ERR -> ErrorCode.INTERNAL;
            default -> ErrorCode.PEER_FAILED; // RETRY_EXC, RNR_RETRY_EXC, REM_OP, REM_ABORT, FATAL, WR_FLUSH, ...
        };
    }

    /** "rdma READ of 4096 bytes at remote 0x... into local 0x... (mlx5_0 qp 0x1a -> 'b' mlx5_1 qp 0x2b)". */
    static String describe(Slice slice, Lane lane) {
        long local = slice.localBuffer().address() + slice.localOffset();
        return "rdma " + slice.opcode() + " of " + slice.length() + " bytes "
                + (slice.opcode() == Opcode.READ ? "from remote 0x" + Long.toHexString(slice.remoteAddress())
                + " into local 0x" + Long.toHexString(local)
                : "from local 0x" + Long.toHexString(local) + " to remote 0x"
                + Long.toHexString(slice.remoteAddress()))
                + " (" + lane.describe() + ")";
    }
}
