package org.tent4j.runtime.select;

import java.util.List;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferPlan;
import org.tent4j.runtime.plugins.TransportSlot;

/**
 * What {@link TransportSelector#select} decided for one request, with the reasoning behind it: either a transport
 * (and, when it is not the preferred one, which one it falls back from and why) or a rejection. {@code explain} shows
 * it; {@code submit} acts on it; both get it from the same call.
 *
 * @param policy       the rule ordering the candidates, or {@code null}
 * @param transport    the chosen transport, or {@code null} when rejected
 * @param trace        every candidate considered, in order, with why it was not usable
 * @param rejection    why no transport may carry the request ({@code null} when one was chosen)
 * @param fallbackFrom the preferred (or hinted) transport passed over, or {@code null}
 * @param fallbackWhy  why it was passed over
 */
public record Selection(Policy policy, TransportSlot transport, List<TransferPlan.Candidate> trace, TransferException rejection,
                 String fallbackFrom, String fallbackWhy) {
    /** The chosen transport, or the rejection thrown. */
    public TransportSlot orThrow() {
        if (transport == null) {
            throw rejection;
        }
        return transport;
    }

    ErrorCode rejectionCode() {
        return rejection == null ? null : rejection.code();
    }
}
