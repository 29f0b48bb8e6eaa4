package org.tent4j.runtime;

/** How much each path of a group may carry at once, how long a MEDIUM slice waits before it ages, and path cooldowns. */
record PathLimits(int maxInflightSlices, long maxInflightBytes, long agingNanos, long cooldownNanos, long maxCooldownNanos) {
}
