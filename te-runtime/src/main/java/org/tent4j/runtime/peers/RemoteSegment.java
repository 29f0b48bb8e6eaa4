package org.tent4j.runtime.peers;

import org.tent4j.api.SegmentHandle;
import org.tent4j.spi.SegmentDescriptor;

/**
 * An opened segment: a peer as {@link SegmentTable} knows it (its cached descriptor, whether it was closed here or is
 * gone from the metadata store), or this engine's own segment. Only the table changes a peer; the connections to it
 * are the slice router's.
 */
public final class RemoteSegment implements SegmentHandle {
    private final int id;
    private final String name;
    private final boolean local;
    private volatile SegmentDescriptor descriptor;
    private volatile boolean closed;
    /** The metadata store says the segment is gone (its engine closed, or its lease expired). */
    private volatile boolean gone;
    private AutoCloseable watch;

    RemoteSegment(int id, String name, boolean local, SegmentDescriptor descriptor) {
        this.id = id;
        this.name = name;
        this.local = local;
        this.descriptor = descriptor;
    }

    /** This engine's own segment, whose descriptor its publisher replaces ({@link #republished}). */
    public static RemoteSegment local(String name, SegmentDescriptor descriptor) {
        return new RemoteSegment(0, name, true, descriptor);
    }

    @Override public String name() { return name; }
    @Override public int id() { return id; }
    @Override public boolean isLocal() { return local; }

    /** The cached descriptor (a peer's last one seen, or this engine's last one built). */
    public SegmentDescriptor descriptor() {
        return descriptor;
    }

    /** Closed here ({@link SegmentTable#close(SegmentHandle)}); the handle no longer works. */
    public boolean isClosed() {
        return closed;
    }

    /** The metadata store removed the segment; it is fetched again before use. */
    public boolean isGone() {
        return gone;
    }

    /** This engine built a new descriptor of its own segment. */
    public void republished(SegmentDescriptor d) {
        if (!local) {
            throw new IllegalStateException("only the local segment is republished; a peer's descriptor is adopted by its table");
        }
        descriptor = d;
    }

    void adopt(SegmentDescriptor d) {
        descriptor = d;
    }

    void markClosed() {
        closed = true;
    }

    void gone(boolean isGone) {
        gone = isGone;
    }

    void watch(AutoCloseable w) {
        watch = w;
    }

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
