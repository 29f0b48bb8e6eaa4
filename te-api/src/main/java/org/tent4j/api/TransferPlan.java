package org.tent4j.api;

import java.util.List;

/**
 * How the engine would carry a request, without moving anything: which policy matched, how each transport was judged,
 * which one was chosen, and how the request would be cut.
 *
 * @param policy     the policy rule that decided the order, or {@code null} for the default preference order
 * @param candidates every transport in the order considered, each usable or with the reason it is not
 * @param transport  the chosen transport, or {@code null} if none can carry the request
 * @param paths      path names the chosen policy allows ({@code null}: all)
 * @param sliceSize  bytes per slice
 * @param slices     number of slices
 * @param error      why the request would be rejected, or {@code null}
 */
public record TransferPlan(String policy, List<Candidate> candidates, String transport, List<String> paths, long sliceSize,
                           int slices, String error) {
    public TransferPlan {
        candidates = List.copyOf(candidates);
        paths = paths == null ? null : List.copyOf(paths);
    }

    /** One transport as the selector judged it. */
    public record Candidate(String transport, boolean usable, String reason) {
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("plan: ");
        if (error != null) {
            sb.append("rejected: ").append(error);
        } else {
            sb.append(transport).append(", ").append(slices).append(" slice(s) of ").append(sliceSize).append(" bytes");
        }
        sb.append("; policy ").append(policy == null ? "(default order)" : "'" + policy + "'");
        if (paths != null) {
            sb.append(", paths ").append(paths);
        }
        for (Candidate c : candidates) {
            sb.append("; ").append(c.transport()).append(c.usable() ? ": usable" : ": " + c.reason());
        }
        return sb.toString();
    }
}
