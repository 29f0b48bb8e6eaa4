package org.tent4j.testkit.transport;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.ControlPlane;
import org.tent4j.spi.SegmentDescriptor;

/** A control plane between transport contexts of one JVM, addressed by segment name. */
public final class InJvmControlPlane implements ControlPlane {
    private static final Map<String, InJvmControlPlane> BY_SEGMENT = new ConcurrentHashMap<>();

    private final String segmentName;
    private final Map<String, Handler> handlers = new ConcurrentHashMap<>();

    InJvmControlPlane(String segmentName) {
        this.segmentName = segmentName;
        BY_SEGMENT.put(segmentName, this);
    }

    void close() {
        BY_SEGMENT.remove(segmentName, this);
    }

    @Override
    public void serve(String service, Handler handler) {
        handlers.put(service, handler);
    }

    @Override
    public byte[] call(SegmentDescriptor peer, String service, byte[] request, Duration timeout) {
        InJvmControlPlane target = BY_SEGMENT.get(peer.name());
        if (target == null) {
            throw new TransferException(ErrorCode.PEER_UNREACHABLE, "no control plane for segment '" + peer.name() + "'");
        }
        Handler h = target.handlers.get(service);
        if (h == null) {
            throw new TransferException(ErrorCode.PROTOCOL, "segment '" + peer.name() + "' serves no '" + service + "'");
        }
        try {
            return h.handle(segmentName, request);
        } catch (TransferException e) {
            throw e;
        } catch (Exception e) {
            throw new TransferException(ErrorCode.PEER_FAILED, "'" + service + "' on '" + peer.name() + "' failed: " + e.getMessage(), e);
        }
    }
}
