package org.tent4j.runtime.metadata;

import java.time.Duration;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.control.ControlPlaneNode;
import org.tent4j.spi.SegmentDescriptor;

/**
 * No store at all: a segment's name is {@code host:port} of its owner's control plane, and its descriptor is fetched
 * from the owner (Mooncake's P2P handshake). Publishing is serving: the engine answers {@link #SERVICE} itself.
 */
public final class PeerToPeerDirectory implements SegmentDirectory {
    public static final String SERVICE = "segment.get";
    private final ControlPlaneNode control;
    private final Duration timeout;

    public PeerToPeerDirectory(ControlPlaneNode control, Duration timeout) {
        this.control = control;
        this.timeout = timeout;
    }

    @Override
    public void publish(SegmentDescriptor descriptor) {
        // Served on demand by the engine's segment.get handler.
    }

    @Override
    public SegmentDescriptor fetch(String segmentName) {
        int colon = segmentName.lastIndexOf(':');
        int port;
        try {
            port = colon < 0 ? -1 : Integer.parseInt(segmentName.substring(colon + 1));
        } catch (NumberFormatException e) {
            port = -1;
        }
        if (port <= 0 || port > 65535) {
            throw new TransferException(ErrorCode.UNKNOWN_SEGMENT, "segment '" + segmentName
                    + "': in peer-to-peer mode a segment name is host:port of its engine's control plane");
        }
        String host = segmentName.substring(0, colon);
        try {
            byte[] json = control.call(host, port, SERVICE, new byte[0], timeout);
            return DescriptorCodec.decodeFor(segmentName, json, "peer " + segmentName);
        } catch (TransferException e) {
            throw new TransferException(ErrorCode.UNKNOWN_SEGMENT, "cannot open segment '" + segmentName + "': " + e.getMessage(), e);
        }
    }

    @Override
    public void unpublish(String segmentName) {
    }

    @Override
    public void close() {
    }
}
