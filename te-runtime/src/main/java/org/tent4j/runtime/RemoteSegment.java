package org.tent4j.runtime;

import org.tent4j.api.SegmentHandle;
import org.tent4j.spi.SegmentDescriptor;

/**
 * An opened segment: a peer as {@link SegmentTable} knows it (its cached descriptor, whether it was closed here or is
 * gone from the metadata store). Its connections are the {@link SliceRouter}'s.
 */
final class RemoteSegment implements SegmentHandle {
    private final int id;
    private final String name;
    private final boolean local;
    volatile SegmentDescriptor descriptor;
    volatile boolean closed;
    /** The metadata store says the segment is gone (its engine closed, or its lease expired). */
    volatile boolean gone;
    AutoCloseable watch;

    RemoteSegment(int id, String name, boolean local, SegmentDescriptor descriptor) {
        this.id = id;
        this.name = name;
        this.local = local;
        this.descriptor = descriptor;
    }

    @Override public String name() { return name; }
    @Override public int id() { return id; }
    @Override public boolean isLocal() { return local; }

    void stopWatching() {
        try {
            if (watch != null) {
                watch.close();
            }
        } catch (Exception e) {
            // closing a watch on a store that is down cannot fail usefully
        }
    }

    @Override
    public String toString() {
        return "segment '" + name + "'";
    }
}
