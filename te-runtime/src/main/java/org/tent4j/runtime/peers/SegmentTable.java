package org.tent4j.runtime.peers;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.EngineState;
import org.tent4j.runtime.metadata.SegmentDirectory;
import org.tent4j.spi.SegmentDescriptor;

/**
 * The segments this engine has open: each peer's cached descriptor, kept current by the directory's watch (a change
 * is adopted and told to the peer's {@link Connections}; a removal marks the segment gone), plus the local segment.
 */
public final class SegmentTable implements AutoCloseable {
    /** Whoever holds connections to peers (the slice router, {@code org.tent4j.runtime.schedule.SliceRouter}): told what changes about a peer. */
    public interface Connections {
        /** The peer republished its descriptor; open connections may need it. */
        void descriptorChanged(RemoteSegment segment, SegmentDescriptor descriptor);

        /** The segment was closed here: its connections close, and slices still queued for it fail. */
        void closed(RemoteSegment segment);
    }

    private static final Logger log = LoggerFactory.getLogger(SegmentTable.class);

    private final EngineState state;
    private final SegmentDirectory directory;
    private final RemoteSegment local;
    private final Connections connections;
    private final Map<String, RemoteSegment> segments = new ConcurrentHashMap<>();
    private final AtomicInteger ids = new AtomicInteger();

    public SegmentTable(EngineState state, SegmentDirectory directory, RemoteSegment local, Connections connections) {
        this.state = state;
        this.directory = directory;
        this.local = local;
        this.connections = connections;
    }

    public RemoteSegment local() {
        return local;
    }

    public RemoteSegment open(String name) {
        state.ensureOpen();
        if (name == null || name.isEmpty() || name.equals(local.name())) {
            return local;
        }
        RemoteSegment s = segments.get(name);
        if (s != null) {
            return s;
        }
        SegmentDescriptor d = directory.fetch(name);
        RemoteSegment fresh = new RemoteSegment(ids.incrementAndGet(), name, false, d);
        RemoteSegment prior = segments.putIfAbsent(name, fresh);
        if (prior != null) {
            return prior;
        }
        fresh.watch(directory.watch(name, changed -> descriptorChanged(fresh, changed)));
        return fresh;
    }

    /**
     * Opens a segment from a descriptor the application obtained itself (a metadata blob), without the directory; a
     * segment already open adopts it when it is newer or comes from another engine instance.
     */
    public RemoteSegment open(SegmentDescriptor d) {
        state.ensureOpen();
        if (d.name().equals(local.name())) {
            return local;
        }
        RemoteSegment s = segments.computeIfAbsent(d.name(), n -> new RemoteSegment(ids.incrementAndGet(), n, false, d));
        if (s.descriptor() != d && (d.version() > s.descriptor().version() || !d.instanceId().equals(s.descriptor().instanceId()))) {
            adopt(s, d);
        }
        return s;
    }

    public void close(SegmentHandle segment) {
        if (segment instanceof RemoteSegment s && !s.isLocal() && segments.remove(s.name(), s)) {
            s.markClosed();
            s.stopWatching();
            connections.closed(s);
        }
    }

    /** Whether {@code s} is the local segment or one open here now. */
    public boolean isOpen(RemoteSegment s) {
        return s == local || segments.get(s.name()) == s;
    }

    /** The handle as this engine's segment, or UNKNOWN_SEGMENT naming it. */
    public RemoteSegment own(SegmentHandle segment) {
        if (segment instanceof RemoteSegment s && isOpen(s)) {
            return s;
        }
        throw new TransferException(ErrorCode.UNKNOWN_SEGMENT, "segment " + (segment == null ? "null" : "'" + segment.name() + "'")
                + " is not open in engine '" + state.segmentName() + "'");
    }

    /** A peer the metadata store said was gone: fetched again (throws if it is still gone), and back if it answers. */
    public SegmentDescriptor refreshGone(RemoteSegment s) {
        SegmentDescriptor d = refresh(s);
        s.gone(false);
        return d;
    }

    /** Fetches a peer's descriptor again and adopts it. */
    public SegmentDescriptor refresh(RemoteSegment s) {
        SegmentDescriptor d = directory.fetch(s.name());
        adopt(s, d);
        return d;
    }

    /** A watched peer republished its descriptor, or it vanished ({@code null}: its engine closed or its lease expired). */
    private void descriptorChanged(RemoteSegment s, SegmentDescriptor d) {
        if (s.isClosed()) {
            return;
        }
        if (d == null) {
            if (!s.isGone()) {
                log.info("segment '{}' was removed from the metadata store; its open connections stay until they fail", s.name());
            }
            s.gone(true);
            return;
        }
        s.gone(false);
        if (d.version() != s.descriptor().version() || !d.machineId().equals(s.descriptor().machineId())
                || !d.instanceId().equals(s.descriptor().instanceId())) {
            adopt(s, d);
        }
    }

    /** Caches a new descriptor of the peer and tells its connections. */
    private void adopt(RemoteSegment s, SegmentDescriptor d) {
        s.adopt(d);
        connections.descriptorChanged(s, d);
    }

    @Override
    public void close() {
        for (RemoteSegment s : segments.values()) {
            s.stopWatching();
            connections.closed(s);
        }
        connections.closed(local);
        segments.clear();
    }
}
