package org.tent4j.spi;

import java.time.Duration;
import java.util.function.Function;

/**
 * Request/response messages over the engine's control plane, for transports that must handshake with a peer before
 * moving data (RDMA queue-pair exchange, for example). Messages are small (at most 1 MiB).
 */
public interface ControlPlane {

    /**
     * Serves {@code service} (by convention {@code <transport id>.<name>}) on this engine. The handler gets the
     * caller's segment name and request and returns the reply; an exception it throws reaches the caller as a
     * {@link org.tent4j.api.TransferException} with its message.
     */
    void serve(String service, Handler handler);

    /**
     * Calls {@code service} on the engine that owns {@code peer} and waits for the reply.
     *
     * @throws org.tent4j.api.TransferException PEER_UNREACHABLE, TIMEOUT, or the handler's failure
     */
    byte[] call(SegmentDescriptor peer, String service, byte[] request, Duration timeout);

    @FunctionalInterface
    interface Handler {
        byte[] handle(String callerSegment, byte[] request) throws Exception;
    }
}
