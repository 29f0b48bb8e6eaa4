package org.tent4j.transport.efa;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the completion queue for {@link FabricProgress}, on its thread: batches of entries mapped back to their
 * {@link OpSlot}s by context address, error entries read with {@code fi_cq_readerr}; each outcome goes to the progress
 * thread's {@link FabricProgress#completed} or {@link FabricProgress#failedCompletion}. Its buffers are allocated once.
 */
final class CompletionReader {
    private static final Logger LOG = LoggerFactory.getLogger(CompletionReader.class);
    private static final int CQ_BATCH = 64;
    /** An idle fi_cq_read takes well under a microsecond; one that copies data takes far longer. */
    private static final long BUSY_POLL_NANOS = 20_000;

    private final FabricProgress progress;
    private final Fabric fabric;
    private final OpSlots slots;
    private final String transportName;
    private final MemorySegment cqEntries;
    private final MemorySegment errEntry;
    private final MemorySegment errText;
    private long cqFailures;

    CompletionReader(FabricProgress progress, Fabric fabric, OpSlots slots, Arena arena, String transportName) {
        this.progress = progress;
        this.fabric = fabric;
        this.slots = slots;
        this.transportName = transportName;
        this.cqEntries = arena.allocate(FiAbi.CQE_SIZE * CQ_BATCH, 8);
        this.errEntry = arena.allocate(FiAbi.ERR_ENTRY_ALLOC, 8);
        this.errText = arena.allocate(512);
    }

    /** Reads the CQ until it is empty; how much it handled (a slow poll counts as one: see FabricProgress). */
    int poll() {
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
                    if (slot != null && providerOwns(slot)) {
                        progress.completed(slot);
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
        OpSlot slot = slots.of(ctx);
        if (slot == null) {
            LOG.warn("{}: completion with a context 0x{} that is no operation of this transport", transportName,
                    Long.toHexString(ctx));
        }
        return slot;
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
        if (providerOwns(slot)) {
            progress.failedCompletion(slot, err, provErrno, errData);
        }
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

    /** The provider's text for an error entry's {@code prov_errno} and {@code err_data}; empty if it has none. */
    String providerError(int provErrno, MemorySegment errData) {
        errText.fill((byte) 0);
        return fabric.providerError(provErrno, errData, errText);
    }
}
