package org.tent4j.runtime.select;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferPlan;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransportMode;
import org.tent4j.runtime.metrics.EngineMetrics;
import org.tent4j.runtime.plugins.TransportRegistry;
import org.tent4j.runtime.plugins.TransportSlot;

/**
 * Decides which transport carries a request. Order: the policy the request names, else the first matching rule,
 * else the default preference; a hint goes first (PREFER) or alone (REQUIRE). A transport qualifies when it can move
 * local-kind→remote-kind, is same-host if it must be, runs on the peer, both buffers are registered with it, it says
 * it can reach the peer ({@link org.tent4j.spi.Transport#unreachableReason}), and the task has not given up on it.
 * With {@code transports.fallback=false}, passing over the preferred transport rejects the request instead.
 *
 * <p>{@link #select} is the only decision; it returns the decision with its trace, so {@code explain} and
 * {@code submit} cannot disagree. Only {@link #recordFallback} has side effects (a counter and one WARN line per
 * (segment, from, to, reason)), and only submit calls it.
 */
public final class TransportSelector {
    private static final Logger log = LoggerFactory.getLogger(TransportSelector.class);

    private final TransportRegistry transports;
    private final List<Policy> policies;
    private final Map<String, Policy> policiesByName;
    private final boolean fallback;
    private final EngineMetrics metrics;
    private final Set<String> warnedFallbacks = ConcurrentHashMap.newKeySet();

    public TransportSelector(TransportRegistry transports, List<Policy> policies, boolean fallback, EngineMetrics metrics) {
        this.transports = transports;
        this.policies = policies;
        this.policiesByName = Policy.byName(policies);
        this.fallback = fallback;
        this.metrics = metrics;
    }

    /** The policy deciding a request's transport order: the one it names, else the first rule that matches, else none. */
    public Policy policyFor(ResolvedRequest rr) {
        TransferRequest r = rr.request();
        if (r.policy() != null) {
            Policy p = policiesByName.get(r.policy());
            if (p == null) {
                throw new TransferException(ErrorCode.INVALID_ARGUMENT, "no policy named '" + r.policy() + "' (configured: "
                        + policies.stream().map(Policy::name).toList() + ")");
            }
            return p;
        }
        for (Policy p : policies) {
            if (p.matches(r, rr.localKind(), rr.remoteKind(), rr.sameHost())) {
                return p;
            }
        }
        return null;
    }

    /**
     * Picks the transport for a request.
     *
     * @param excluded    transports (bit = slot index) the task gave up on
     * @param sliceLength on failover, the length of the slice to move (a transport with smaller slices cannot take it)
     * @param failover    whether a slice is moving after a failure: then order and hint still rank the candidates, but
     *                    falling back from the preferred one is expected, not a fallback
     * @param traced      whether to record every candidate (explain) or stop at the decision (submit): the decision
     *                    is the same either way, only the record differs
     */
    public Selection select(ResolvedRequest rr, Policy policy, long excluded, long sliceLength, boolean failover, boolean traced) {
        TransferRequest r = rr.request();
        TransportSlot[] slots = transports.slots();
        int[] order = policy == null ? transports.preference() : policy.order();
        boolean ordered = transports.explicitPreference() || policy != null;
        List<TransferPlan.Candidate> trace = traced ? new ArrayList<>(slots.length + 1) : null;
        String hint = r.transport();
        TransportSlot chosen = null;
        TransferException rejection = null;
        String fallbackFrom = null;
        String fallbackWhy = null;
        if (hint != null) {
            int h = transports.indexOf(hint);
            String problem = h < 0 ? "this engine does not run it (running: " + transports.ids() + ")"
                    : (excluded & (1L << h)) != 0 ? "it failed for this task"
                    : unusable(slots[h], rr, sliceLength);
            if (traced) {
                trace.add(new TransferPlan.Candidate(hint, problem == null, problem));
            }
            if (problem == null) {
                chosen = slots[h];
            } else if (r.transportMode() == TransportMode.REQUIRE || !fallback) {
                rejection = new TransferException(ErrorCode.NO_TRANSPORT, "transport '" + hint + "' is "
                        + (r.transportMode() == TransportMode.REQUIRE ? "required" : "preferred and fallback is off")
                        + " but cannot carry " + r.opcode() + " to segment '" + rr.segment().name() + "': " + problem);
            } else if (!failover) {
                fallbackFrom = hint;
                fallbackWhy = problem;
            }
        }
        StringBuilder why = null;
        String firstProblem = null;
        for (int idx : order) {
            TransportSlot s = slots[idx];
            if (s.id().equals(hint)) {
                continue; // judged above
            }
            if (chosen != null || rejection != null) {
                if (!traced) {
                    break;
                }
                // decided; the rest is listed for explain
                String problem = (excluded & (1L << idx)) != 0 ? "it failed for this task" : unusable(s, rr, sliceLength);
                trace.add(new TransferPlan.Candidate(s.id(), problem == null, problem));
                continue;
            }
            String problem = (excluded & (1L << idx)) != 0 ? "it failed for this task" : unusable(s, rr, sliceLength);
            if (traced) {
                trace.add(new TransferPlan.Candidate(s.id(), problem == null, problem));
            }
            if (idx == order[0]) {
                firstProblem = problem;
            }
            if (problem != null) {
                why = (why == null ? new StringBuilder() : why.append("; ")).append(s.id()).append(": ").append(problem);
                continue;
            }
            if (hint == null && ordered && idx != order[0] && !failover) {
                TransportSlot first = slots[order[0]];
                if (!fallback) {
                    rejection = new TransferException(ErrorCode.NO_TRANSPORT, "preferred transport '" + first.id() + "' cannot carry "
                            + r.opcode() + " to segment '" + rr.segment().name() + "' and fallback is off: " + firstProblem);
                    continue;
                }
                fallbackFrom = first.id();
                fallbackWhy = firstProblem;
            }
            chosen = s;
        }
        if (chosen == null && rejection == null) {
            rejection = new TransferException(ErrorCode.NO_TRANSPORT, "no transport can carry " + r.opcode() + " "
                    + rr.localKind().prefix() + "->" + rr.remoteKind().prefix() + " to segment '" + rr.segment().name() + "'"
                    + (policy == null ? "" : " under policy '" + policy.name() + "'")
                    + (why == null ? ": no transport is running" : " (" + why + ")"));
        }
        if (chosen == null) {
            fallbackFrom = null;
            fallbackWhy = null;
        }
        return new Selection(policy, chosen, traced ? List.copyOf(trace) : List.of(), rejection, fallbackFrom, fallbackWhy);
    }

    /**
     * What {@link #select} decides for a new request when it decides at once: the hinted transport, else the first of
     * the order, if it can carry the request (no fallback, nothing to record). {@code null} otherwise, and then
     * {@code select} decides and says why. Same checks, same answer; it only spares building a {@link Selection} per
     * request on the common path.
     */
    public TransportSlot firstChoice(ResolvedRequest rr, Policy policy) {
        String hint = rr.request().transport();
        int idx;
        if (hint != null) {
            idx = transports.indexOf(hint);
        } else {
            int[] order = policy == null ? transports.preference() : policy.order();
            idx = order.length == 0 ? -1 : order[0];
        }
        if (idx < 0) {
            return null;
        }
        TransportSlot s = transports.slots()[idx];
        return unusable(s, rr, 0) == null ? s : null;
    }

    /** Why {@code s} cannot carry the request, or {@code null} if it can. */
    private static String unusable(TransportSlot s, ResolvedRequest rr, long sliceLength) {
        if (!s.capabilities().supports(rr.localKind(), rr.remoteKind())) {
            return "it cannot move " + rr.localKind().prefix() + "->" + rr.remoteKind().prefix();
        }
        if (s.capabilities().sameHostOnly() && !rr.sameHost()) {
            return "the peer is on another host";
        }
        if (!rr.descriptor().transports().contains(s.id())) {
            return "the peer does not run it";
        }
        if (!rr.remote().transports().contains(s.id())) {
            return "the target buffer is not registered with it";
        }
        if (!rr.local().registeredWith(s.index())) {
            return "the local buffer is not registered with it";
        }
        if (sliceLength > s.capabilities().maxSliceSize()) {
            return "its slices are at most " + s.capabilities().maxSliceSize() + " bytes";
        }
        Optional<String> unreachable;
        try {
            unreachable = s.transport().unreachableReason(rr.descriptor());
        } catch (RuntimeException e) {
            unreachable = Optional.of("it failed to judge the peer: " + e);
        }
        return unreachable.map(u -> "it cannot reach the peer: " + u).orElse(null);
    }

    /** Counts a fallback from the preferred transport and logs it once per (segment, from, to, reason). */
    public void recordFallback(ResolvedRequest rr, Selection s) {
        if (s.fallbackFrom() == null) {
            return;
        }
        metrics.fallback(s.fallbackFrom(), s.transport().id());
        if (warnedFallbacks.add(rr.segment().name() + '\0' + s.fallbackFrom() + '\0' + s.transport().id() + '\0' + s.fallbackWhy())) {
            log.warn("transport fallback to segment '{}': '{}' instead of preferred '{}' because {}", rr.segment().name(),
                    s.transport().id(), s.fallbackFrom(), s.fallbackWhy());
        }
    }
}
