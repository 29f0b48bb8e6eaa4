package org.tent4j.runtime.control;

import java.util.concurrent.atomic.AtomicInteger;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

import org.tent4j.api.ErrorCode;
import org.tent4j.runtime.config.CoreKey;

/**
 * Admits a request only within its limits, refusing it with an error reply otherwise: its service's request size, the
 * requests of this connection waiting for a worker ({@code control.max_requests_per_connection}), those of the whole
 * node ({@code control.max_requests}) and their bytes ({@code control.max_request_bytes}: the count alone would let
 * a thousand frames of the largest size wait). The dispatcher tells it when an admitted request has been answered.
 * One per connection, on the control plane's event loop.
 */
final class RequestLimits extends ChannelInboundHandlerAdapter {
    private final ControlPlaneNode node;
    /** Requests of this connection handed to workers and not yet answered. */
    private final AtomicInteger inFlight = new AtomicInteger();

    RequestLimits(ControlPlaneNode node) {
        this.node = node;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ControlFrame f) || f.kind != ControlFrame.REQUEST) {
            ctx.fireChannelRead(msg);
            return;
        }
        Channel ch = ctx.channel();
        String refusal = null;
        ErrorCode code = ErrorCode.TOO_MANY_REQUESTS;
        ControlPlaneNode.Service s = node.services.get(f.service);
        if (s != null && f.content().readableBytes() > s.maxRequestBytes()) {
            code = ErrorCode.INVALID_ARGUMENT;
            refusal = "'" + f.service + "' request of " + f.content().readableBytes() + " bytes exceeds its limit of "
                    + s.maxRequestBytes();
        } else if (inFlight.get() >= node.settings.maxRequestsPerConnection()) {
            refusal = node.settings.maxRequestsPerConnection() + " requests of this connection are already waiting ("
                    + CoreKey.CONTROL_MAX_REQUESTS_PER_CONNECTION + ")";
        } else if (node.requestsInFlight.incrementAndGet() > node.settings.maxRequests()) {
            node.requestsInFlight.decrementAndGet();
            refusal = node.settings.maxRequests() + " requests are already waiting (" + CoreKey.CONTROL_MAX_REQUESTS + ")";
        } else if (node.requestBytesInFlight.addAndGet(f.content().readableBytes()) > node.settings.maxRequestBytes()) {
            long held = node.requestBytesInFlight.addAndGet(-f.content().readableBytes());
            node.requestsInFlight.decrementAndGet();
            node.requestBudgetRefusals.increment();
            refusal = "'" + f.service + "' request of " + f.content().readableBytes() + " bytes does not fit: " + held
                    + " bytes of requests are already waiting, of " + node.settings.maxRequestBytes() + " ("
                    + CoreKey.CONTROL_MAX_REQUEST_BYTES + ")";
        }
        if (refusal != null) {
            f.release();
            node.refuse(ch, f.id, f.service, code, refusal);
            return;
        }
        inFlight.incrementAndGet();
        ctx.fireChannelRead(f);
    }

    /**
     * An admitted request of {@code bytes} was answered (or could not be handed to a worker): its payload is held until
     * then, so its bytes count until then.
     */
    void finished(int bytes) {
        inFlight.decrementAndGet();
        node.requestsInFlight.decrementAndGet();
        node.requestBytesInFlight.addAndGet(-bytes);
    }

    /** Whether requests of this connection are waiting for a worker or being answered. */
    boolean busy() {
        return inFlight.get() > 0;
    }
}
