package org.tent4j.runtime;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.metadata.SegmentDirectory;
import org.tent4j.spi.SegmentDescriptor;

/**
 * The segments this engine has open: each peer's cached descriptor, kept current by the directory's watch (a change
 * is adopted and told to open connections; a removal marks the segment gone), plus the local segment.
 */
final class SegmentTable implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(SegmentTable.class);

    private final EngineState state;
    private final SegmentDirectory directory;
    private final RemoteSegment local;
    private final int transports;
    private final Map<String, RemoteSegment> segments = new ConcurrentHashMap<>();
    private final AtomicInteger ids = new AtomicInteger();

    SegmentTable(EngineState state, SegmentDirectory directory, RemoteSegment local, int transports) {
        this.state = state;
        this.directory = directory;
        this.local = local;
        this.transports = transports;
    }

    RemoteSegment local() {
        return local;
    }

    RemoteSegment open(String name) {
        state.ensureOpen();
        if (name == null || name.isEmpty() || name.equals(local.name())) {
            return local;
        }
        RemoteSegment s = segments.get(name);
        if (s != null) {
            return s;
        }
        SegmentDescriptor d = directory.fetch(name);
        RemoteSegment fresh = new RemoteSegment(ids.incrementAndGet(), name, false, d, transports);
        RemoteSegment prior = segments.putIfAbsent(name, fresh);
        if (prior != null) {
            return prior;
        }
        fresh.watch = directory.watch(name, changed -> descriptorChanged(fresh, changed));
        return fresh;
    }

    /**
     * Opens a segment from a descriptor the application obtained itself (a metadata blob), without the directory; a
     * segment already open adopts it when it is newer or comes from another engine instance.
     */
    RemoteSegment open(SegmentDescriptor d) {
        state.ensureOpen();
        if (d.name().equals(local.name())) {
            return local;
        }
        RemoteSegment s = segments.computeIfAbsent(d.name(), n -> new RemoteSegment(ids.incrementAndGet(), n, false, d, transports));
        if (s.descriptor != d && (d.version() > s.descriptor.version() || !d.instanceId().equals(s.descriptor.instanceId()))) {
            s.adopt(d);
        }
        return s;
    }

    void close(SegmentHandle segment) {
        if (segment instanceof RemoteSegment s && !s.isLocal() && segments.remove(s.name(), s)) {
            s.closed = true;
            s.stopWatching();
            s.closeConnections();
        }
    }

    /** Whether {@code s} is the local segment or one open here now. */
    boolean isOpen(RemoteSegment s) {
        return s == local || segments.get(s.name()) == s;
    }

    /** The handle as this engine's segment, or UNKNOWN_SEGMENT naming it. */
    RemoteSegment own(SegmentHandle segment) {
        if (segment instanceof RemoteSegment s && isOpen(s)) {
            return s;
        }
        throw new TransferException(ErrorCode.UNKNOWN_SEGMENT, "segment " + (segment == null ? "null" : "'" + segment.name() + "'")
                + " is not open in engine '" + state.segmentName() + "'");
    }

    /** Fetches a peer's descriptor again and adopts it. */
    SegmentDescriptor refresh(RemoteSegment s) {
        SegmentDescriptor d = directory.fetch(s.name());
        s.adopt(d);
        return d;
    }

    /** A watched peer republished its descriptor, or it vanished ({@code null}: its engine closed or its lease expired). */
    private void descriptorChanged(RemoteSegment s, SegmentDescriptor d) {
        if (s.closed) {
            return;
        }
        if (d == null) {
            if (!s.gone) {
                log.info("segment '{}' was removed from the metadata store; its open connections stay until they fail", s.name());
            }
            s.gone = true;
            return;
        }
        s.gone = false;
        if (d.version() != s.descriptor.version() || !d.machineId().equals(s.descriptor.machineId())
                || !d.instanceId().equals(s.descriptor.instanceId())) {
            s.adopt(d);
        }
    }

    /** The local segment, then every open one. */
    void forEach(Consumer<RemoteSegment> action) {
        action.accept(local);
        segments.values().forEach(action);
    }

    @Override
    public void close() {
        for (RemoteSegment s : segments.values()) {
            s.stopWatching();
            s.closeConnections();
        }
        local.closeConnections();
        segments.clear();
    }
}
