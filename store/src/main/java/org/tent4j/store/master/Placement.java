package org.tent4j.store.master;

/** How the master picks segments for a new object's replicas (after preferred and local-host segments). */
public enum Placement {
    /** Walk the segments from a random start: cheap, spreads by count. */
    RANDOM,
    /**
     * Of two random segments take the emptier (by free ratio), repeatedly. Balances skewed capacities; unlike ranking
     * every segment, a freshly mounted empty segment wins only when it is drawn, so it does not take every new write.
     */
    FREE_RATIO_FIRST
}
