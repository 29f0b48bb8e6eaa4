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
     * {@link org.tent4j.api.TransferException} with its message. The handler runs on an engine worker thread, one call
     * per request, possibly several at once; the request bytes come from a peer and are hostile until checked.
     *
     * @param service the service's name
     * @param handler answers requests; replaces an earlier handler of the same name
     */
    void serve(String service, Handler handler);

    /**
     * Calls {@code service} on the engine that owns {@code peer} and waits for the reply. Blocks: call it from
     * {@link Transport#connect} or a worker, never from an I/O thread or a slice callback.
     *
     * @param peer    the peer's descriptor, for its control host and port
     * @param service the service's name
     * @param request at most 1 MiB
     * @param timeout how long to wait for the reply
     * @return the handler's reply, owned by the caller
     * @throws org.tent4j.api.TransferException PEER_UNREACHABLE, TIMEOUT, or the handler's failure
     */
    byte[] call(SegmentDescriptor peer, String service, byte[] request, Duration timeout);

    /** Answers one service's requests. */
    @FunctionalInterface
    interface Handler {
        /**
         * Answers one request.
         *
         * @param callerSegment the calling engine's segment name, as it claims it
         * @param request       the request, hostile until checked
         * @return the reply, at most 1 MiB
         * @throws Exception any failure; its message reaches the caller
         */
        byte[] handle(String callerSegment, byte[] request) throws Exception;

    }
}
