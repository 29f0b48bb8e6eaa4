package org.tent4j.store;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * How a put is placed and kept.
 *
 * @param replicas          memory replicas wanted, each on a distinct segment (best effort: fewer when fewer segments
 *                          have room, never zero)
 * @param preferredSegments segment ids or engine segment names to try first, in order
 * @param preferLocalHost   try segments on the writer's host before others
 * @param softPin           keep the object until {@code softPinTtl} after it becomes readable unless nothing else can
 *                          be evicted
 * @param softPinTtl        soft pin lifetime; {@code null} for the master's default
 * @param hardPin           never evict (only an explicit remove frees it)
 * @param excludedSegments  segment ids never to place on (the client fills it when a write to a segment failed)
 * @param writeThrough      copy the object to its memory replica owner's disk as soon as the put ends, keeping the
 *                          memory replica (docs/STORE.md, "Disk tier"); {@code null} for the master's default
 *                          ({@code store master --write-through}, off unless set)
 */
public record ReplicateConfig(int replicas, List<String> preferredSegments, boolean preferLocalHost, boolean softPin,
                              Duration softPinTtl, boolean hardPin, List<String> excludedSegments, Boolean writeThrough) {
    public ReplicateConfig {
        preferredSegments = List.copyOf(Objects.requireNonNull(preferredSegments, "preferredSegments"));
        excludedSegments = List.copyOf(Objects.requireNonNull(excludedSegments, "excludedSegments"));
    }

    public ReplicateConfig(int replicas, List<String> preferredSegments, boolean preferLocalHost, boolean softPin,
                           Duration softPinTtl, boolean hardPin, List<String> excludedSegments) {
        this(replicas, preferredSegments, preferLocalHost, softPin, softPinTtl, hardPin, excludedSegments, null);
    }

    public ReplicateConfig(int replicas, List<String> preferredSegments, boolean preferLocalHost, boolean softPin,
                           Duration softPinTtl, boolean hardPin) {
        this(replicas, preferredSegments, preferLocalHost, softPin, softPinTtl, hardPin, List.of(), null);
    }

    public ReplicateConfig withExcludedSegments(List<String> segmentIds) {
        return new ReplicateConfig(replicas, preferredSegments, preferLocalHost, softPin, softPinTtl, hardPin, segmentIds,
                writeThrough);
    }

    public static ReplicateConfig defaults() {
        return new ReplicateConfig(1, List.of(), false, false, null, false);
    }

    public static ReplicateConfig replicas(int n) {
        return new ReplicateConfig(n, List.of(), false, false, null, false);
    }

    public ReplicateConfig withReplicas(int n) {
        return new ReplicateConfig(n, preferredSegments, preferLocalHost, softPin, softPinTtl, hardPin, excludedSegments, writeThrough);
    }

    public ReplicateConfig withPreferredSegments(List<String> segments) {
        return new ReplicateConfig(replicas, segments, preferLocalHost, softPin, softPinTtl, hardPin, excludedSegments, writeThrough);
    }

    public ReplicateConfig withPreferLocalHost(boolean prefer) {
        return new ReplicateConfig(replicas, preferredSegments, prefer, softPin, softPinTtl, hardPin, excludedSegments, writeThrough);
    }

    public ReplicateConfig withSoftPin(Duration ttl) {
        return new ReplicateConfig(replicas, preferredSegments, preferLocalHost, true, ttl, hardPin, excludedSegments, writeThrough);
    }

    public ReplicateConfig withHardPin() {
        return new ReplicateConfig(replicas, preferredSegments, preferLocalHost, softPin, softPinTtl, true, excludedSegments, writeThrough);
    }

    /** Writes the object through to disk as its put ends ({@code true}) or not ({@code false}), whatever the master's default. */
    public ReplicateConfig withWriteThrough(boolean on) {
        return new ReplicateConfig(replicas, preferredSegments, preferLocalHost, softPin, softPinTtl, hardPin,
                excludedSegments, on);
    }
}
