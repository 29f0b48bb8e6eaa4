package org.tent4j.runtime;

import java.util.concurrent.atomic.AtomicReferenceArray;

import org.tent4j.api.SegmentHandle;
import org.tent4j.spi.SegmentDescriptor;

/** An opened segment: its cached descriptor and one lazily connected path group per transport. */
final class RemoteSegment implements SegmentHandle {
    private final int id;
    private final String name;
    private final boolean local;
    volatile SegmentDescriptor descriptor;
    final AtomicReferenceArray<PathGroup> groups;
    volatile boolean closed;
    /** The metadata store says the segment is gone (its engine closed, or its lease expired). */
    volatile boolean gone;
    AutoCloseable watch;

    RemoteSegment(int id, String name, boolean local, SegmentDescriptor descriptor, int transports) {
        this.id = id;
        this.name = name;
        this.local = local;
        this.descriptor = descriptor;
        this.groups = new AtomicReferenceArray<>(Math.max(1, transports));
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

    /** Caches a new descriptor of the peer and tells its open connections. */
    void adopt(SegmentDescriptor d) {
        descriptor = d;
        for (int i = 0; i < groups.length(); i++) {
            PathGroup g = groups.get(i);
            if (g != null) {
                g.descriptorChanged(d);
            }
        }
    }

    void closeConnections() {
        for (int i = 0; i < groups.length(); i++) {
            PathGroup g = groups.getAndSet(i, null);
            if (g != null) {
                g.close();
                for (RuntimeSlice sl : g.takeAll()) {
                    sl.giveUp(org.tent4j.api.ErrorCode.PEER_FAILED, "segment '" + name + "' was closed before the slice was posted");
                }
            }
        }
    }

    @Override
    public String toString() {
        return "segment '" + name + "'";
    }
}
