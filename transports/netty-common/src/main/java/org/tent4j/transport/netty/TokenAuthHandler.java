package org.tent4j.transport.netty;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.spi.TokenHandshake;

/**
 * Runs {@link TokenHandshake} first on a connection and passes nothing on until the peer's proof verified; then it
 * steps out of the pipeline, handing on whatever followed the proof. A peer that fails or stalls is closed.
 */
public final class TokenAuthHandler extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(TokenAuthHandler.class);

    private final TokenHandshake handshake;
    private final String where;
    private final Duration timeout;
    private final LongAdder failures;
    private final CompletableFuture<Void> done = new CompletableFuture<>();
    private final byte[] received = new byte[TokenHandshake.PEER_BYTES];
    private int have;
    private boolean started;
    private ScheduledFuture<?> timer;

    /**
     * @param where     names this side for log lines ("control plane of segment 'a'", "segment 'b' tcp data port")
     * @param failures  counts failed handshakes (of all connections; the log shows the 1st, 2nd, 4th ...)
     */
    public TokenAuthHandler(TokenHandshake handshake, String where, Duration timeout, LongAdder failures) {
        this.handshake = handshake;
        this.where = where;
        this.timeout = timeout;
        this.failures = failures;
    }

    /** Completes once the peer proved it holds the token; fails when the connection fails the handshake or ends. */
    public CompletableFuture<Void> authenticated() {
        return done;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        if (ctx.channel().isActive()) {
            start(ctx);
        }
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        start(ctx);
        ctx.fireChannelActive();
    }

    private void start(ChannelHandlerContext ctx) {
        if (started) {
            return;
        }
        started = true;
        ctx.writeAndFlush(Unpooled.wrappedBuffer(handshake.hello()));
        timer = ctx.executor().schedule(() -> fail(ctx, "no token handshake within " + timeout.toMillis() + " ms"),
                timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        ByteBuf in = (ByteBuf) msg;
        try {
            while (in.isReadable() && !done.isDone()) {
                int want = have < TokenHandshake.HELLO_BYTES ? TokenHandshake.HELLO_BYTES : TokenHandshake.PEER_BYTES;
                int n = Math.min(in.readableBytes(), want - have);
                in.readBytes(received, have, n);
                boolean sawMagic = have >= 4;
                have += n;
                if (!sawMagic && have >= 4 && !TokenHandshake.startsHello(received)) {
                    // another protocol (a peer without the token sending requests): no need to wait for more
                    fail(ctx, "the peer did not start the token handshake (is security.token set there?)");
                    return;
                }
                if (have == TokenHandshake.HELLO_BYTES) {
                    byte[] proof;
                    try {
                        proof = handshake.proof(Arrays.copyOf(received, TokenHandshake.HELLO_BYTES));
                    } catch (SecurityException e) {
                        fail(ctx, e.getMessage());
                        return;
                    }
                    ctx.writeAndFlush(Unpooled.wrappedBuffer(proof));
                } else if (have == TokenHandshake.PEER_BYTES) {
                    if (!handshake.verify(Arrays.copyOfRange(received, TokenHandshake.HELLO_BYTES, have))) {
                        fail(ctx, "wrong proof: the peer does not hold this security.token");
                        return;
                    }
                    timer.cancel(false);
                    ctx.pipeline().remove(this);
                    done.complete(null);
                    if (in.isReadable()) {
                        ctx.fireChannelRead(in.retain());
                    }
                }
            }
        } finally {
            in.release();
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        // a peer that hangs up instead of proving itself failed the handshake as well
        fail(ctx, "the connection closed during the token handshake");
        if (timer != null) {
            timer.cancel(false);
        }
        ctx.fireChannelInactive();
    }

    private void fail(ChannelHandlerContext ctx, String reason) {
        if (done.completeExceptionally(new SecurityException(reason))) {
            failures.increment();
            long n = failures.sum();
            if (Long.bitCount(n) == 1) {
                log.warn("{}: closing connection {}: token handshake failed: {} [{} failed so far]", where,
                        ctx.channel().remoteAddress(), reason, n);
            }
        }
        ctx.close();
    }
}
