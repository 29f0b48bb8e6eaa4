package org.tent4j.transport.shm;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Populates the page tables of fresh shm mappings on one background thread, so that the first copies into a peer's
 * buffer do not each take a page fault per 4 KiB (a fault costs microseconds, far more on a virtual machine: a fresh
 * client's first 1 MiB puts into a store node's 2 GiB segment ran at a tenth of their later rate). One
 * {@code madvise(MADV_POPULATE_WRITE)} (or {@code _READ} for a read-only mapping) walks a range in the kernel, an
 * order of magnitude faster than faulting it from user space.
 *
 * <p>Bounded: page tables cost about 2 MiB per GiB mapped, so at most {@code limit} bytes of this engine's live
 * mappings are populated at once; the rest fault in on first touch as before. Pages are populated from each mapping's
 * start, where allocators hand out first. The memory itself is not affected: shm files are fully allocated at creation.
 */
final class Prefaulter implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Prefaulter.class);

    /** Bytes per madvise call: short enough that an unmap waits little for the one in progress. */
    static final long CHUNK = 16L << 20;
    private final long limit;
    private final String owner;
    private final AtomicLong populated = new AtomicLong();
    private volatile boolean disabled;
    private ExecutorService thread; // guarded by this

    Prefaulter(long limit, String owner) {
        this.limit = limit;
        this.owner = owner;
        this.disabled = limit <= 0 || !LibC.isAvailable();
    }

    /** Bytes of live mappings populated now. */
    long populatedBytes() {
        return populated.get();
    }

    /** Starts populating {@code segment} in the background; the mapping stops it before it unmaps. */
    Prefault start(MemorySegment segment, boolean writable, String what) {
        Prefault p = new Prefault(segment, writable, what);
        if (!disabled) {
            try {
                executor().execute(p::run);
            } catch (RejectedExecutionException closed) {
                // closed meanwhile: nothing to populate for
            }
        }
        return p;
    }

    /** Completes when every population started before this call has ended. */
    CompletableFuture<Void> idle() {
        try {
            return CompletableFuture.runAsync(() -> { }, executor());
        } catch (RejectedExecutionException e) {
            return CompletableFuture.completedFuture(null);
        }
    }

    private synchronized ExecutorService executor() {
        if (thread == null) {
            thread = Executors.newSingleThreadExecutor(r -> Thread.ofPlatform().daemon().name("tent4j-shm-prefault-"
                    + owner).unstarted(r));
        }
        return thread;
    }

    @Override
    public synchronized void close() {
        disabled = true;
        if (thread != null) {
            for (Runnable queued : thread.shutdownNow()) {
                queued.run(); // disabled now: a population ends at once, and an idle() future completes
            }
        }
    }

    private boolean reserve(long n) {
        for (;;) {
            long now = populated.get();
            if (now + n > limit) {
                return false;
            }
            if (populated.compareAndSet(now, now + n)) {
                return true;
            }
        }
    }

    /** One mapping's population: chunks run under its lock, which {@link #stop()} takes before the unmap. */
    final class Prefault {
        private final MemorySegment segment;
        private final int advice;
        private final String what;
        private long bytes; // guarded by this
        private boolean stopped; // guarded by this

        private Prefault(MemorySegment segment, boolean writable, String what) {
            this.segment = segment;
            this.advice = writable ? LibC.MADV_POPULATE_WRITE : LibC.MADV_POPULATE_READ;
            this.what = what;
        }

        private void run() {
            // madvise wants a page-aligned start; a partial first page faults in as before. The kernel rounds the
            // length up, which stays inside the mapping: it covers whole pages.
            long page = LibC.pageSize();
            long at = (page - (segment.address() & (page - 1))) & (page - 1);
            long end = segment.byteSize();
            while (at < end && !disabled) {
                long n = Math.min(CHUNK, end - at);
                synchronized (this) {
                    if (stopped) {
                        break;
                    }
                    if (!reserve(n)) {
                        LOG.debug("populated {} bytes of {}; the rest faults in on first use ({} of {} bytes of "
                                + "page-table budget used)", bytes, what, populated.get(), limit);
                        break;
                    }
                    int errno = LibC.madvise(segment.asSlice(at, n), advice);
                    if (errno != 0) {
                        populated.addAndGet(-n);
                        refused(errno);
                        break;
                    }
                    bytes += n;
                }
                at += n;
            }
        }

        private void refused(int errno) {
            if (errno == LibC.EINVAL && !disabled) {
                disabled = true; // a kernel before 5.14: every call would say the same
                LOG.info("shm mappings are not populated ahead of use: madvise(MADV_POPULATE_*) answered {} (needs "
                        + "Linux 5.14 or later); first copies into peers' buffers will fault page by page",
                        LibC.describe(errno));
            } else {
                LOG.debug("stopped populating {}: madvise answered {}", what, LibC.describe(errno));
            }
        }

        /** Waits for a chunk in progress, stops the walk and returns its share of the budget. Call before unmapping. */
        synchronized void stop() {
            stopped = true;
            populated.addAndGet(-bytes);
            bytes = 0;
        }
    }
}
