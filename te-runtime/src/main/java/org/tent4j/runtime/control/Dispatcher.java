package org.tent4j.runtime.control;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.RejectedExecutionException;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.timeout.IdleStateEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.config.CoreKey;

/**
 * The last handler: a reply or error completes the call waiting for it, on the connection the call went out on only;
 * an admitted request goes to a worker, which answers it. Closes idle connections and ones that sent a frame too large.
 * One per connection, on the control plane's event loop.
 */
final class Dispatcher extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(ControlPlaneNode.class);
    private final ControlPlaneNode node;
    private final RequestLimits limits;

    Dispatcher(ControlPlaneNode node, RequestLimits limits) {
        this.node = node;
        this.limits = limits;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ControlFrame f)) {
            ctx.fireChannelRead(msg);
            return;
        }
        try {
            if (f.kind == ControlFrame.REQUEST) {
                onRequest(ctx.channel(), f);
            } else {
                onReply(ctx.channel(), f);
            }
        } finally {
            f.release();
        }
    }

    private void onReply(Channel ch, ControlFrame f) {
        OutboundCalls.Pending p = node.calls.waiting(f.id);
        if (p == null || p.channel() != ch) {
            // a reply on a connection its call did not go out on is forged, or too late to matter
            node.strayReplies.increment();
            RefusalLog.warnSometimes(log, node.strayReplies, "control plane of '{}': ignoring a '{}' reply from {} (claims to be '{}'): {}",
                    node.localSegment(), f.service, ch.remoteAddress(), f.claimed, p == null ? "no call is waiting for it"
                            : "its call went out on another connection");
            return;
        }
        byte[] payload = new byte[f.content().readableBytes()];
        f.content().readBytes(payload);
        if (f.kind == ControlFrame.REPLY) {
            p.reply().complete(payload);
        } else {
            ErrorCode code = payload.length > 0 && payload[0] >= 0 && payload[0] < ErrorCode.values().length
                    ? ErrorCode.values()[payload[0]] : ErrorCode.PEER_FAILED;
            String msg = payload.length > 0 ? new String(payload, 1, payload.length - 1, StandardCharsets.UTF_8) : "";
            p.reply().completeExceptionally(new TransferException(code, msg));
        }
    }

    private void onRequest(Channel ch, ControlFrame f) {
        byte[] payload = new byte[f.content().readableBytes()];
        f.content().readBytes(payload);
        ControlPlaneNode.Service s = node.services.get(f.service);
        long id = f.id;
        String service = f.service;
        String claimed = f.claimed;
        try {
            node.workers.execute(() -> {
                try {
                    node.answer(ch, id, service, s, claimed, payload);
                } finally {
                    limits.finished(payload.length);
                }
            });
        } catch (RejectedExecutionException e) {
            limits.finished(payload.length);
            node.refuse(ch, id, service, ErrorCode.ENGINE_CLOSED, "segment '" + node.localSegment() + "' is closing");
        }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof IdleStateEvent && !limits.busy()
                && !node.calls.waitsOn(ctx.channel())) {
            log.debug("control plane of '{}': closing idle connection {}", node.localSegment(), ctx.channel().remoteAddress());
            ctx.close();
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        // Calls waiting on this connection can never be answered now.
        String remote = String.valueOf(ctx.channel().remoteAddress());
        node.calls.connectionClosed(ctx.channel(), remote);
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (cause instanceof TooLongFrameException || cause instanceof IndexOutOfBoundsException) {
            node.badFrames.increment();
            RefusalLog.warnSometimes(log, node.badFrames, "control plane of '{}': closing connection from {}: {} ({} is {} bytes)",
                    node.localSegment(), ctx.channel().remoteAddress(), cause instanceof TooLongFrameException ? cause.getMessage()
                            : "truncated frame", CoreKey.CONTROL_MAX_FRAME, node.settings.maxFrame());
        } else {
            log.debug("control plane: closing {}: {}", ctx.channel().remoteAddress(), cause.toString());
        }
        ctx.close();
    }
}
