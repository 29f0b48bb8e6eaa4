package org.tent4j.transport.efa;

import java.util.Iterator;
import java.util.concurrent.ConcurrentLinkedQueue;

import org.tent4j.api.ErrorCode;

/**
 * Ends operations of a {@link FabricProgress} before their completion: at their slice's deadline, or when their
 * connection closes. A posted operation keeps its slot until the provider completes it ({@link FabricProgress#abandon});
 * one waiting for a slot is failed at once. Runs on the progress thread only.
 */
final class OpExpiry {
    private final FabricProgress progress;
    private final OpSlot[] slots;
    private final ConcurrentLinkedQueue<FabricProgress.Deferred> overflow;

    OpExpiry(FabricProgress progress, OpSlot[] slots, ConcurrentLinkedQueue<FabricProgress.Deferred> overflow) {
        this.progress = progress;
        this.slots = slots;
        this.overflow = overflow;
    }

    /** Fails the slices whose deadline passed by {@code now} (the engine's clock); how many. */
    int enforceDeadlines(long now) {
        int n = 0;
        for (OpSlot slot : slots) {
            int state = slot.state;
            if ((state == OpSlot.POSTED || state == OpSlot.QUEUED) && now - slot.deadlineNanos > 0) {
                String message = slot.connection.describe(slot.slice) + " missed its deadline by "
                        + (now - slot.deadlineNanos) / 1_000_000 + " ms ("
                        + (state == OpSlot.POSTED ? "in flight" : "the provider kept refusing it with -FI_EAGAIN")
                        + ")";
                progress.abandon(slot, ErrorCode.TIMEOUT, message);
                n++;
            }
        }
        for (Iterator<FabricProgress.Deferred> it = overflow.iterator(); it.hasNext(); ) {
            FabricProgress.Deferred d = it.next();
            if (now - d.slice().deadlineNanos() > 0 && overflow.remove(d)) {
                d.slice().fail(ErrorCode.TIMEOUT, d.connection().describe(d.slice())
                        + " timed out waiting for one of " + slots.length + " operation slots (cq_size)");
                n++;
            }
        }
        return n;
    }

    /** Fails every slice of {@code connection} still queued, posted or waiting for a slot. */
    void failConnection(EfaPeerConnection connection) {
        for (OpSlot slot : slots) {
            int state = slot.state;
            if ((state == OpSlot.POSTED || state == OpSlot.QUEUED) && slot.connection == connection) {
                progress.abandon(slot, ErrorCode.PEER_FAILED, connection.describe(slot.slice)
                        + ": the connection was closed while it was in flight");
            }
        }
        for (Iterator<FabricProgress.Deferred> it = overflow.iterator(); it.hasNext(); ) {
            FabricProgress.Deferred d = it.next();
            if (d.connection() == connection && overflow.remove(d)) {
                d.slice().fail(ErrorCode.PEER_FAILED, connection.describe(d.slice())
                        + ": the connection was closed before it was posted");
            }
        }
    }
}
