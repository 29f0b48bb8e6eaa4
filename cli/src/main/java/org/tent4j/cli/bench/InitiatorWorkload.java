package org.tent4j.cli.bench;

import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.PreparedTransfer;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;

/**
 * The initiator side of te-bench: {@code threads} workers, each owning a disjoint range of the target buffer (and the
 * same range of the local buffer), loop post {@code batchSize} requests of {@code blockSize} at consecutive blocks of
 * their range (wrapping around), wait, record.
 *
 * <p>Each window of {@code batchSize} blocks is prepared once, before the clock starts ({@link TransferEngine#prepare}),
 * and posted again on each pass, so the measured loop allocates nothing: no batch, task, status or request per
 * operation. Latency is recorded per request as the time from the post to the waiting thread's return from
 * {@link PreparedTransfer#await}: every request of a window gets its window's time, an upper bound of its own (it
 * includes the wait behind earlier requests of the window, as in Mooncake's bench, and the bench thread's wake-up).
 */
final class InitiatorWorkload {
    /** Each worker cycles through at most this many distinct blocks, so request objects stay few for tiny blocks. */
    static final int MAX_SLOTS_PER_THREAD = 1 << 16;
    private static final Duration BATCH_TIMEOUT = Duration.ofSeconds(120);
    private static final long PROGRESS_INTERVAL_NANOS = 1_000_000_000L;

    /** What to run. */
    record Plan(Opcode opcode, String protocol, long blockSize, int batchSize, int threads, Duration warmup,
                Duration duration, boolean checkConsistency, boolean seedTarget) {
    }

    private final TransferEngine engine;
    private final SegmentHandle target;
    private final long targetBase;
    private final MemorySegment local;
    private final Plan plan;
    private final PrintWriter progress;
    private final long rangeBytes;
    private final AtomicReference<String> firstError = new AtomicReference<>();
    private final AtomicReference<String> abortCause = new AtomicReference<>();

    private volatile long recordFromNanos = Long.MAX_VALUE;
    private volatile long deadlineNanos = Long.MAX_VALUE;

    /**
     * @param targetBase address of the target buffer's first byte, as its owner published it
     * @param local      local registered memory, at least as long as the part of the target buffer in use
     */
    InitiatorWorkload(TransferEngine engine, SegmentHandle target, long targetBase, MemorySegment local, Plan plan,
                      PrintWriter progress) {
        this.engine = engine;
        this.target = target;
        this.targetBase = targetBase;
        this.local = local;
        this.plan = plan;
        this.progress = progress;
        this.rangeBytes = rangePerThread(local.byteSize(), plan.threads(), plan.blockSize(), plan.batchSize());
        if (rangeBytes == 0) {
            throw new IllegalArgumentException(tooSmall(local.byteSize(), plan.threads(), plan.blockSize(), plan.batchSize()));
        }
    }

    /**
     * Bytes of the buffer each thread works on: a whole number of batches, at most {@link #MAX_SLOTS_PER_THREAD}
     * blocks; 0 if {@code bufferBytes} cannot hold one batch per thread.
     */
    static long rangePerThread(long bufferBytes, int threads, long blockSize, int batchSize) {
        long batchBytes = blockSize * batchSize;
        if (blockSize <= 0 || batchSize <= 0 || threads <= 0 || batchBytes / batchSize != blockSize) {
            return 0;
        }
        long perThread = bufferBytes / threads;
        long slotCap = Math.max(batchSize, (MAX_SLOTS_PER_THREAD / batchSize) * (long) batchSize);
        long batches = Math.min(perThread / batchBytes, slotCap / batchSize);
        return batches * batchBytes;
    }

    static String tooSmall(long bufferBytes, int threads, long blockSize, int batchSize) {
        return String.format(Locale.ROOT,
                "buffer of %d bytes cannot hold one batch per thread: threads %d x batch_size %d x block_size %d = %.0f bytes",
                bufferBytes, threads, batchSize, blockSize, (double) threads * batchSize * blockSize);
    }

    /** Runs warm-up and measurement; prints a progress line to {@code progress} once a second. */
    BenchResult run() throws InterruptedException {
        List<Worker> workers = new ArrayList<>(plan.threads());
        CountDownLatch ready = new CountDownLatch(plan.threads());
        CountDownLatch go = new CountDownLatch(1);
        CountDownLatch finished = new CountDownLatch(plan.threads());
        List<Thread> threads = new ArrayList<>(plan.threads());
        for (int i = 0; i < plan.threads(); i++) {
            Worker w = new Worker(i, ready, go, finished);
            workers.add(w);
            threads.add(Thread.ofPlatform().name("te-bench-" + i).daemon(true).unstarted(w));
        }
        threads.forEach(Thread::start);
        ready.await();

        long start = System.nanoTime();
        recordFromNanos = start + plan.warmup().toNanos();
        deadlineNanos = recordFromNanos + plan.duration().toNanos();
        go.countDown();
        reportProgress(workers, finished, start);
        for (Thread t : threads) {
            t.join();
        }

        LatencyHistogram latency = new LatencyHistogram();
        long bytes = 0;
        long ops = 0;
        long errors = 0;
        long mismatches = 0;
        long lastCompletion = recordFromNanos;
        for (Worker w : workers) {
            latency.add(w.latency);
            bytes += w.measuredBytes;
            ops += w.measuredOps;
            errors += w.errors;
            mismatches += w.mismatches;
            lastCompletion = Math.max(lastCompletion, w.lastMeasuredCompletion);
        }
        String error = firstError.get();
        if (abortCause.get() != null) {
            error = abortCause.get() + (error == null || error.equals(abortCause.get()) ? "" : "; first error: " + error);
        }
        return new BenchResult(plan.protocol(), plan.opcode().name().toLowerCase(Locale.ROOT), plan.blockSize(),
                plan.batchSize(), plan.threads(), lastCompletion - recordFromNanos, bytes, ops, errors, mismatches,
                error, latency);
    }

    /** Whether a worker gave up (a batch never finished, or the engine closed under it). */
    boolean aborted() {
        return abortCause.get() != null;
    }

    private void reportProgress(List<Worker> workers, CountDownLatch finished, long start) throws InterruptedException {
        long lastTick = start;
        long lastBytes = 0;
        long lastOps = 0;
        boolean printed = false;
        while (!finished.await(lastTick + PROGRESS_INTERVAL_NANOS - System.nanoTime(), TimeUnit.NANOSECONDS)) {
            long now = System.nanoTime();
            long bytes = 0;
            long ops = 0;
            long errors = 0;
            for (Worker w : workers) {
                bytes += w.progressBytes;
                ops += w.progressOps;
                errors += w.errors;
            }
            double dt = (now - lastTick) / 1e9;
            progress.printf(Locale.ROOT, "\r%6.1f s%s %9.3f GB/s %11.0f ops/s  errors %d   ",
                    (now - start) / 1e9, lastTick < recordFromNanos ? " warm-up" : "        ",
                    (bytes - lastBytes) / dt / 1e9, (ops - lastOps) / dt, errors);
            progress.flush();
            printed = true;
            lastTick = now;
            lastBytes = bytes;
            lastOps = ops;
        }
        if (printed) {
            progress.println();
            progress.flush();
        }
    }

    private void noteError(String message) {
        firstError.compareAndSet(null, message);
    }

    private static String describe(TransferStatus s) {
        return s.state() + (s.error() == null ? "" : " " + s.error()) + (s.message() == null ? "" : ": " + s.message());
    }

    private final class Worker implements Runnable {
        private final int index;
        private final CountDownLatch ready;
        private final CountDownLatch go;
        private final CountDownLatch finished;
        /** Offset of this worker's range from the start of both buffers; the pattern is indexed by it. */
        private final long rangeOffset;
        private final int slots;
        private final int windowCount;
        private final MemorySegment[] blocks;
        private final List<List<TransferRequest>> measuredRequests;
        /** WRITEs that seed the target (read check) or READs that fetch written blocks back (write check). */
        private final List<List<TransferRequest>> checkRequests;
        /** The windows, prepared by this worker before the clock starts. */
        private final List<PreparedTransfer> measuredWindows = new ArrayList<>();
        private final List<PreparedTransfer> checkWindows = new ArrayList<>();

        private final TransferStatus[] statuses;
        private final boolean[] ok;
        private final boolean[] landed;
        private final LatencyHistogram latency = new LatencyHistogram();

        // written by this worker only; read by the progress loop
        private volatile long progressBytes;
        private volatile long progressOps;
        private volatile long errors;
        private long mismatches;
        private long measuredBytes;
        private long measuredOps;
        private long lastMeasuredCompletion;

        Worker(int index, CountDownLatch ready, CountDownLatch go, CountDownLatch finished) {
            this.index = index;
            this.ready = ready;
            this.go = go;
            this.finished = finished;
            this.rangeOffset = index * rangeBytes;
            this.slots = (int) (rangeBytes / plan.blockSize());
            this.windowCount = slots / plan.batchSize();
            this.blocks = new MemorySegment[slots];
            for (int s = 0; s < slots; s++) {
                blocks[s] = local.asSlice(rangeOffset + s * plan.blockSize(), plan.blockSize());
            }
            this.measuredRequests = windows(plan.opcode());
            boolean needCheckWindows = plan.checkConsistency() && (plan.opcode() == Opcode.WRITE || plan.seedTarget());
            Opcode other = plan.opcode() == Opcode.READ ? Opcode.WRITE : Opcode.READ;
            this.checkRequests = needCheckWindows ? windows(other) : List.of();
            int batch = plan.batchSize();
            this.statuses = new TransferStatus[batch];
            this.ok = new boolean[batch];
            this.landed = new boolean[batch];
        }

        private List<List<TransferRequest>> windows(Opcode opcode) {
            List<List<TransferRequest>> windows = new ArrayList<>(windowCount);
            TransferRequest[] requests = new TransferRequest[plan.batchSize()];
            for (int w = 0; w < windowCount; w++) {
                for (int j = 0; j < requests.length; j++) {
                    int slot = w * requests.length + j;
                    requests[j] = TransferRequest.builder(opcode, blocks[slot], target, targetAddress(slot))
                            .require(plan.protocol()).build();
                }
                windows.add(List.of(requests));
            }
            return windows;
        }

        private long targetAddress(int slot) {
            return targetBase + patternOffset(slot);
        }

        private long patternOffset(int slot) {
            return rangeOffset + slot * plan.blockSize();
        }

        /** Prepares every window; a request the engine refuses aborts the run with the engine's reason. */
        private void prepare() {
            for (List<TransferRequest> w : measuredRequests) {
                measuredWindows.add(engine.prepare(w));
            }
            for (List<TransferRequest> w : checkRequests) {
                checkWindows.add(engine.prepare(w));
            }
        }

        private void closeWindows() {
            measuredWindows.forEach(PreparedTransfer::close);
            checkWindows.forEach(PreparedTransfer::close);
        }

        @Override
        public void run() {
            try {
                prepare();
            } catch (RuntimeException e) {
                abort("worker " + index + " could not prepare its requests: " + e.getMessage());
            }
            try {
                if (abortCause.get() == null && plan.checkConsistency() && plan.seedTarget() && plan.opcode() == Opcode.READ) {
                    seedTarget();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                abort("worker " + index + " was interrupted while seeding the target");
            } catch (RuntimeException e) {
                abort("seeding the target buffer failed: " + e);
            } finally {
                ready.countDown();
            }
            try {
                go.await();
                long iteration = 0;
                int w = 0;
                while (abortCause.get() == null) {
                    long now = System.nanoTime();
                    if (now >= deadlineNanos) {
                        break;
                    }
                    runWindow(w, now >= recordFromNanos, writeSeed(++iteration));
                    w = w + 1 == windowCount ? 0 : w + 1;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                abort("worker " + index + " was interrupted");
            } catch (RuntimeException e) {
                abort("worker " + index + " failed: " + e);
            } finally {
                closeWindows();
                finished.countDown();
            }
        }

        /** A seed no other worker or iteration uses, so stale bytes from an earlier write never pass the check. */
        private long writeSeed(long iteration) {
            return ((long) (index + 1) << 48) ^ iteration;
        }

        /** Writes the target pattern over this worker's range, so reads can be checked against a target we did not fill. */
        private void seedTarget() throws InterruptedException {
            for (int w = 0; w < windowCount; w++) {
                int first = w * plan.batchSize();
                for (int j = 0; j < plan.batchSize(); j++) {
                    DataPattern.fill(blocks[first + j], patternOffset(first + j), DataPattern.TARGET_SEED);
                }
                execute(checkWindows.get(w));
                for (int j = 0; j < plan.batchSize(); j++) {
                    if (!ok[j]) {
                        fail("seeding WRITE of target block at offset " + patternOffset(first + j) + " failed: "
                                + describe(statuses[j]));
                    }
                }
            }
        }

        private void runWindow(int w, boolean measured, long seed) throws InterruptedException {
            int first = w * plan.batchSize();
            int batch = plan.batchSize();
            if (plan.checkConsistency()) {
                for (int j = 0; j < batch; j++) {
                    if (plan.opcode() == Opcode.READ) {
                        blocks[first + j].fill((byte) 0);
                    } else {
                        DataPattern.fill(blocks[first + j], patternOffset(first + j), seed);
                    }
                }
            }
            long took = execute(measuredWindows.get(w));
            long done = 0;
            for (int j = 0; j < batch; j++) {
                if (ok[j]) {
                    done++;
                } else {
                    fail(statuses[j] == null ? "no status" : describe(statuses[j]));
                }
            }
            if (measured) {
                latency.record(took, done);
            }
            progressBytes += done * plan.blockSize();
            progressOps += done;
            if (measured) {
                measuredBytes += done * plan.blockSize();
                measuredOps += done;
                lastMeasuredCompletion = System.nanoTime();
            }
            if (plan.checkConsistency()) {
                verify(w, first, seed);
            }
        }

        private void verify(int w, int first, long seed) throws InterruptedException {
            int batch = plan.batchSize();
            long expectedSeed = DataPattern.TARGET_SEED;
            boolean[] landed = this.landed;
            System.arraycopy(ok, 0, landed, 0, batch);
            if (plan.opcode() == Opcode.WRITE) {
                expectedSeed = seed;
                for (int j = 0; j < batch; j++) {
                    if (landed[j]) {
                        blocks[first + j].fill((byte) 0);
                    }
                }
                execute(checkWindows.get(w));
                for (int j = 0; j < batch; j++) {
                    if (landed[j] && !ok[j]) {
                        landed[j] = false;
                        fail("READ back of written block failed: " + describe(statuses[j]));
                    }
                }
            }
            for (int j = 0; j < batch; j++) {
                if (!landed[j]) {
                    continue;
                }
                int slot = first + j;
                long at = DataPattern.firstMismatch(blocks[slot], patternOffset(slot), expectedSeed);
                if (at >= 0) {
                    mismatches++;
                    fail(String.format(Locale.ROOT,
                            "consistency check failed: %s of %d bytes at target address 0x%x (buffer offset %d): "
                                    + "byte %d is 0x%02x, expected 0x%02x",
                            plan.opcode(), plan.blockSize(), targetAddress(slot), patternOffset(slot), at,
                            blocks[slot].get(ValueLayout.JAVA_BYTE, at),
                            DataPattern.expectedByte(patternOffset(slot) + at, expectedSeed)));
                }
            }
        }

        private void fail(String message) {
            errors++;
            noteError(message);
        }

        /**
         * Posts one prepared window and waits for every request; leaves per-slot status and success in {@link #statuses}
         * and {@link #ok} (statuses are fetched only when something did not complete). Returns the nanoseconds from
         * the post to the end of the wait.
         */
        private long execute(PreparedTransfer window) throws InterruptedException {
            int batch = window.size();
            long submitted = System.nanoTime();
            try {
                window.post();
            } catch (TransferException e) {
                TransferStatus rejected = TransferStatus.failed(TransferState.FAILED, e.code(),
                        "post rejected: " + e.getMessage());
                Arrays.fill(statuses, rejected);
                Arrays.fill(ok, false);
                if (e.code() == ErrorCode.ENGINE_CLOSED) {
                    abort("engine closed: " + e.getMessage());
                }
                return System.nanoTime() - submitted;
            }
            // await wakes this thread straight from the thread that reports the window's last request
            TransferState state = window.await(BATCH_TIMEOUT);
            long took = System.nanoTime() - submitted;
            if (state == TransferState.PENDING) {
                throw new IllegalStateException("a window of " + batch + " requests to segment '" + target.name()
                        + "' did not finish within " + BATCH_TIMEOUT.toSeconds() + " s");
            }
            if (state == TransferState.COMPLETED) {
                Arrays.fill(ok, true);
            } else {
                for (int j = 0; j < batch; j++) {
                    statuses[j] = window.status(j);
                    ok[j] = statuses[j].isCompleted();
                }
            }
            return took;
        }

        private void abort(String cause) {
            abortCause.compareAndSet(null, cause);
            noteError(cause);
        }
    }
}
