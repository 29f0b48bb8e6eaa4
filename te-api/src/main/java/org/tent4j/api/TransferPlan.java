package org.tent4j.api;

import java.util.List;

/**
 * How the engine would carry a request, without moving anything: which policy matched, how each transport was judged,
 * which one was chosen, and how the request would be cut.
 *
 * @param policy     the policy rule that decided the order, or {@code null} for the default preference order
 * @param candidates every transport in the order considered, each usable or with the reason it is not
 * @param transport  the chosen transport, or {@code null} if none can carry the request
 * @param paths      the paths the request would use: the names of the open connection's paths to the target over the
 *                   chosen transport (tcp rails and lanes such as {@code eth1->10.0.1.2/lane-0}, RDMA NIC pairs) that
 *                   the chosen policy allows; before a connection is open, the policy's device list, or {@code null}
 *                   (all)
 * @param sliceSize  bytes per slice
 * @param slices     number of slices
 * @param error      why the request would be rejected, or {@code null}
 * @param staging    how the request is staged through host memory when no transport connects its two memory kinds
 *                   directly (e.g. {@code "npu:0 -> host staging (4 x 4194304 bytes in flight) -> tcp"}; then
 *                   {@code transport} carries the staged chunks and {@code sliceSize}/{@code slices} are the chunks),
 *                   or {@code null} for a direct route
 */
public record TransferPlan(String policy, List<Candidate> candidates, String transport, List<String> paths, long sliceSize,
                           int slices, String error, String staging) {
    /**
     * Copies the lists, so the plan is immutable.
     *
     * @throws NullPointerException when {@code candidates} is {@code null}
     */
    public TransferPlan {
        candidates = List.copyOf(candidates);
        paths = paths == null ? null : List.copyOf(paths);
    }

    /**
     * A direct route (no staging).
     *
     * @param policy     the policy rule that decided the order, or {@code null}
     * @param candidates every transport in the order considered
     * @param transport  the chosen transport, or {@code null}
     * @param paths      the paths the request would use, or {@code null} (all)
     * @param sliceSize  bytes per slice
     * @param slices     number of slices
     * @param error      why the request would be rejected, or {@code null}
     */
    public TransferPlan(String policy, List<Candidate> candidates, String transport, List<String> paths, long sliceSize,
                        int slices, String error) {
        this(policy, candidates, transport, paths, sliceSize, slices, error, null);
    }

    /**
     * One transport as the selector judged it.
     *
     * @param transport the transport's id
     * @param usable    whether it could carry the request
     * @param reason    why it cannot, or {@code null} when usable
     */

    public record Candidate(String transport, boolean usable, String reason) {
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("plan: ");
        if (error != null) {
            sb.append("rejected: ").append(error);
        } else {
            sb.append(transport).append(", ").append(slices).append(staging == null ? " slice(s) of " : " staged chunk(s) of ")
                    .append(sliceSize).append(" bytes");
            if (staging != null) {
                sb.append(", staged: ").append(staging);
            }
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
