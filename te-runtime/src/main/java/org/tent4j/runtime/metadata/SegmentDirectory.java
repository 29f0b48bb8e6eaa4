package org.tent4j.runtime.metadata;

import java.util.function.Consumer;

import org.tent4j.spi.SegmentDescriptor;

/** Where an engine publishes its descriptor and finds its peers'. */
public interface SegmentDirectory extends AutoCloseable {

    /** Publishes (or republishes) this engine's descriptor. */
    void publish(SegmentDescriptor descriptor);

    /**
     * Fetches a peer's descriptor.
     *
     * @throws org.tent4j.api.TransferException UNKNOWN_SEGMENT naming the segment, or METADATA_UNAVAILABLE
     */
    SegmentDescriptor fetch(String segmentName);

    /**
     * Tells {@code listener} when a peer's descriptor changes ({@code null}: it was removed or expired) until the
     * returned handle is closed. Directories without change notification call nothing.
     */
    default AutoCloseable watch(String segmentName, Consumer<SegmentDescriptor> listener) {
        return () -> { };
    }

    /** Removes this engine's descriptor; called on close. */
    void unpublish(String segmentName);

    @Override
    void close();
}
