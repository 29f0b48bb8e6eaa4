package org.tent4j.transport.netty;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;

/**
 * Flushes as soon as {@code flushBytes} have been written since the last flush, for the handlers above an
 * {@link io.netty.handler.ssl.SslHandler}. A handler that writes a batch of answers and flushes once is right for a
 * plain socket, where a flush only hands views to the kernel; under TLS the SslHandler encrypts the whole batch at the
 * flush before the first record reaches the socket, so the peer idles while this side encrypts megabytes and this side
 * idles while the peer decrypts them. Flushing every {@code flushBytes} lets records go out while the next ones are
 * encrypted. One instance per channel; runs on its event loop.
 */
public final class EagerFlush extends ChannelOutboundHandlerAdapter {
    /** What the tcp transport uses: a few TLS records, well under a loopback socket's send buffer. */
    public static final int DEFAULT_FLUSH_BYTES = 256 * 1024;

    private final int flushBytes;
    private long unflushed;
    private long eagerFlushes;

    public EagerFlush(int flushBytes) {
        if (flushBytes < 1) {
            throw new IllegalArgumentException("flushBytes must be >= 1, got " + flushBytes);
        }
        this.flushBytes = flushBytes;
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        int n = msg instanceof ByteBuf b ? b.readableBytes() : 0;
        ctx.write(msg, promise);
        unflushed += n;
        if (unflushed >= flushBytes) {
            unflushed = 0;
            eagerFlushes++;
            ctx.flush();
        }
    }

    @Override
    public void flush(ChannelHandlerContext ctx) {
        unflushed = 0;
        ctx.flush();
    }

    /** Flushes this handler made before its writer asked; for tests. */
    public long eagerFlushes() {
        return eagerFlushes;
    }
}
