package org.tent4j.runtime.memory;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.metadata.SegmentDirectory;
import org.tent4j.runtime.peers.RemoteSegment;
import org.tent4j.runtime.plugins.TransportRegistry;
import org.tent4j.runtime.plugins.TransportSlot;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.SegmentDescriptor;

/**
 * Builds this engine's descriptor from its registrations and transports, and keeps it published: on every change
 * ({@link #republish}) and, for stores with a TTL, periodically. The local segment's cached descriptor is the
 * published one.
 */
public final class DescriptorPublisher implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(DescriptorPublisher.class);

    /** Who publishes: the segment and the process behind it. */
    public record Identity(String segmentName, String machineId, String host, int controlPort, long pid, String instanceId) {
    }

    private final Identity identity;
    private final TransportRegistry transports;
    private final Registrations registrations;
    private final FileSegments files;
    private final SegmentDirectory directory;
    private final RemoteSegment localSegment;
    private long version;
    private ScheduledFuture<?> keepAlive;

    public DescriptorPublisher(Identity identity, TransportRegistry transports, Registrations registrations, FileSegments files,
                        SegmentDirectory directory) {
        this.identity = identity;
        this.transports = transports;
        this.registrations = registrations;
        this.files = files;
        this.directory = directory;
        this.localSegment = RemoteSegment.local(identity.segmentName(), build());
    }

    /** The local segment, whose descriptor is always the last one built. */
    public RemoteSegment localSegment() {
        return localSegment;
    }

    public SegmentDescriptor current() {
        return localSegment.descriptor();
    }

    /** Publishes the first descriptor and, if the directory forgets unrefreshed entries, keeps it alive. */
    public void start(ScheduledExecutorService scheduler, long refreshMillis) {
        directory.publish(current());
        if (refreshMillis > 0) {
            keepAlive = scheduler.scheduleAtFixedRate(this::refresh, refreshMillis, refreshMillis, TimeUnit.MILLISECONDS);
        }
    }

    private synchronized SegmentDescriptor build() {
        List<BufferDescriptor> buffers = new ArrayList<>();
        for (RegisteredBuffer b : registrations.all()) {
            if (b.permission() == Permission.LOCAL_ONLY) {
                continue;
            }
            List<String> ts = new ArrayList<>();
            for (TransportSlot s : transports.slots()) {
                if (b.registeredWith(s.index())) {
                    ts.add(s.id());
                }
            }
            buffers.add(BufferDescriptor.builder().address(b.address()).length(b.length()).location(b.location())
                    .permission(b.permission()).transports(ts).attributes(b.transportAttributes()).build());
        }
        files.describe(buffers, transports.slots());
        Map<String, Map<String, String>> attrs = new LinkedHashMap<>();
        for (TransportSlot s : transports.slots()) {
            attrs.put(s.id(), s.transport().segmentAttributes());
        }
        return SegmentDescriptor.builder().name(identity.segmentName()).machineId(identity.machineId())
                .host(identity.host()).controlPort(identity.controlPort()).transports(transports.ids())
                .transportAttributes(attrs).buffers(buffers).version(++version).pid(identity.pid())
                .instanceId(identity.instanceId()).build();
    }

    /** Registrations changed: build and publish a new version. */
    public synchronized void republish() {
        SegmentDescriptor d = build();
        localSegment.republished(d);
        try {
            directory.publish(d);
        } catch (TransferException e) {
            // The keep-alive publishes again once a store answers; the registration itself stands.
            log.warn("descriptor of '{}' (version {}) not published yet: {}", identity.segmentName(), d.version(), e.getMessage());
        }
    }

    private void refresh() {
        try {
            directory.publish(current());
        } catch (RuntimeException e) {
            log.debug("descriptor refresh of '{}' failed: {}", identity.segmentName(), e.getMessage());
        }
    }

    /** Stops refreshing and withdraws the descriptor. */
    @Override
    public void close() {
        if (keepAlive != null) {
            keepAlive.cancel(false);
        }
        try {
            directory.unpublish(identity.segmentName());
        } catch (RuntimeException e) {
            log.debug("unpublish of '{}' failed: {}", identity.segmentName(), e.getMessage());
        }
    }
}
