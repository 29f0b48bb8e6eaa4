package org.tent4j.api;

import java.util.List;

/**
 * What is known of a segment.
 *
 * @param name       segment name
 * @param host       host the owner's control plane listens on
 * @param machineId  identifies the owner's machine; equal ids mean same host (shared memory possible)
 * @param transports ids of transports the owner runs
 * @param buffers    registered buffers peers may address
 */
public record SegmentInfo(String name, String host, String machineId, List<String> transports, List<BufferInfo> buffers) {
    /** Copies the lists, so the record is immutable. */
    public SegmentInfo {

        transports = List.copyOf(transports);
        buffers = List.copyOf(buffers);
    }
}
