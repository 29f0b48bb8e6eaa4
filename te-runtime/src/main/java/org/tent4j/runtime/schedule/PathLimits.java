package org.tent4j.runtime.schedule;

/**
 * How much each path of a group may carry at once, how much of it a submitting thread's own path takes before its
 * slices spread ({@code affinityBytes}, 0 = always spread), how long a MEDIUM slice waits before it ages, and path
 * cooldowns.
 */
public record PathLimits(int maxInflightSlices, long maxInflightBytes, long affinityBytes, long agingNanos, long cooldownNanos,
                  long maxCooldownNanos) {
}
