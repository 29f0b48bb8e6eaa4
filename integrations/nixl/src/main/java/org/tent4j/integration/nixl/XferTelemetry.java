package org.tent4j.integration.nixl;

/**
 * Timings of a request's last post.
 *
 * @param postNanos     how long {@code post()} itself took
 * @param transferNanos from the start of {@code post()} until the backend finished (0 while in progress)
 * @param bytes         bytes the request moves per post
 * @param descriptors   descriptors after merging contiguous neighbours
 * @param posts         how many times the request was posted
 */
public record XferTelemetry(long postNanos, long transferNanos, long bytes, int descriptors, long posts) {
}
