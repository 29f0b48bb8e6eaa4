package org.tent4j.runtime.control;

import java.util.ArrayDeque;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;

/**
 * Binds a connection to the caller name its first request claims, for as long as it lives, and refuses requests that
 * claim another name or one bound to another live connection. A first claim that meets a live owner (a peer that
 * restarted and reconnected before this node saw its old connection close) holds this connection's frames, reading
 * nothing more, until the owner closes or {@link ControlPlaneNode.Settings#claimWait()} passes, once per connection.
 * Also pauses reading while the peer does not read the replies. One per connection, on the control plane's event loop.
 */
final class CallerClaims extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(ControlPlaneNode.class);
    private final ControlPlaneNode node;
    /** The caller name this connection claimed with its first request. */
    private String caller;
    /** Frames held, in order, while this connection's first claim waits for the name's owner; else null. */
    private ArrayDeque<ControlFrame> held;
    private ScheduledFuture<?> claimTimer;
    /** A connection waits for a name's owner at most once; later collisions are refused at once. */
    private boolean claimWaited;

    CallerClaims(ControlPlaneNode node) {
        this.node = node;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ControlFrame f)) {
            ctx.fireChannelRead(msg);
            return;
        }
        if (held != null) {
            // auto-read is off, so only the rest of the last read comes here: bounded by the read buffer
            held.add(f);
            return;
        }
        check(ctx, f);
    }

    private void check(ChannelHandlerContext ctx, ControlFrame f) {
        if (f.kind != ControlFrame.REQUEST) {
            ctx.fireChannelRead(f);
            return;
        }
        Channel ch = ctx.channel();
        Channel owner = liveOwnerToWaitFor(ch, f.claimed);
        if (owner != null) {
            holdUntilClosed(ctx, owner, f);
            return;
        }
        String refusal = claim(ch, f.claimed);
        if (refusal != null) {
            f.release();
            node.refusedCallers.increment();
            RefusalLog.warnSometimes(log, node.refusedCallers, "control plane of '{}': refusing '{}' from {}: {}", node.localSegment(),
                    f.service, ch.remoteAddress(), refusal);
            ch.writeAndFlush(node.frame(ch, ControlFrame.ERROR, f.id, f.service,
                    ControlPlaneNode.errorPayload(ErrorCode.PERMISSION_DENIED, refusal)));
            return;
        }
        ctx.fireChannelRead(f);
    }

    /** The live connection that owns {@code claimed}, if this connection's first claim should wait for it. */
    private Channel liveOwnerToWaitFor(Channel ch, String claimed) {
        if (caller != null || claimWaited) {
            return null;
        }
        Channel owner = node.callers.get(claimed);
        return owner != null && owner != ch && owner.isActive() ? owner : null;
    }

    private void holdUntilClosed(ChannelHandlerContext ctx, Channel owner, ControlFrame first) {
        claimWaited = true;
        node.heldClaims.increment();
        log.debug("control plane of '{}': holding {} until the previous connection of its caller ({}) closes, at most {}",
                node.localSegment(), ctx.channel().remoteAddress(), owner.remoteAddress(), node.settings.claimWait());
        held = new ArrayDeque<>();
        held.add(first);
        ctx.channel().config().setAutoRead(false);
        claimTimer = ctx.executor().schedule(() -> release(ctx), node.settings.claimWait().toNanos(), TimeUnit.NANOSECONDS);
        owner.closeFuture().addListener(f -> ctx.executor().execute(() -> release(ctx)));
    }

    /** Passes the held frames on in arrival order: claims now succeed if the owner closed, and are refused if not. */
    private void release(ChannelHandlerContext ctx) {
        if (held == null) {
            return;
        }
        claimTimer.cancel(false);
        ArrayDeque<ControlFrame> frames = held;
        held = null;
        try {
            for (ControlFrame f; (f = frames.poll()) != null; ) {
                if (ctx.channel().isActive()) {
                    check(ctx, f);
                } else {
                    f.release();
                }
            }
        } catch (RuntimeException e) {
            frames.forEach(ReferenceCountUtil::release);
            ctx.fireExceptionCaught(e);
            return;
        }
        if (ctx.channel().isWritable()) {
            ctx.channel().config().setAutoRead(true);
        }
    }

    /** Binds {@code claimed} to this connection; why not, or {@code null} if it is this connection's name. */
    private String claim(Channel ch, String claimed) {
        if (caller != null) {
            return caller.equals(claimed) ? null : "this connection called as '" + caller + "' before, now as '"
                    + claimed + "'";
        }
        Channel owner = node.callers.putIfAbsent(claimed, ch);
        if (owner != null && owner != ch) {
            if (owner.isActive()) {
                return "caller '" + claimed + "' is bound to another live connection (" + owner.remoteAddress() + ")";
            }
            if (!node.callers.replace(claimed, owner, ch)) {
                return "caller '" + claimed + "' is bound to another connection";
            }
        }
        caller = claimed;
        return null;
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        if (!ctx.channel().isWritable()) {
            // the peer does not read our replies: stop reading its requests until it does
            ctx.channel().config().setAutoRead(false);
        }
        ctx.fireChannelReadComplete();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable() && held == null) {
            ctx.channel().config().setAutoRead(true);
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (held != null) {
            claimTimer.cancel(false);
            held.forEach(ReferenceCountUtil::release);
            held = null;
        }
        if (caller != null) {
            node.callers.remove(caller, ctx.channel());
        }
        ctx.fireChannelInactive();
    }
}
