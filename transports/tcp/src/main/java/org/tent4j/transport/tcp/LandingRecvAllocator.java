package org.tent4j.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.DefaultMaxMessagesRecvByteBufAllocator;

/**
 * Hands the socket the destination memory itself while payload bytes are expected, so the kernel copies them straight
 * into registered memory (epoll, NIO and io_uring all read into whatever the handle allocates). Otherwise it hands
 * out an ordinary pooled buffer for headers; payload bytes that arrive behind a header in such a buffer are copied.
 *
 * <p>One allocator per channel, since it asks that channel's handler what it expects next. Netty allocates the next
 * read buffer only after the previous one went through the pipeline, so the answer is always current.
 */
final class LandingRecvAllocator extends DefaultMaxMessagesRecvByteBufAllocator {
    /**
     * Size of ordinary reads. Smaller means more of a payload lands directly (only what shares a read with its
     * header is copied); larger means fewer reads for many small pipelined requests.
     */
    static final int HEADER_READ_BYTES = 16 * 1024;

    /** The channel handler that knows whether payload bytes come next. */
    interface PayloadSink {
        /**
         * A retained view of the not yet received rest of the current payload, with reader and writer index at the
         * first missing byte, or {@code null} when no payload is expected.
         */
        ByteBuf payloadView();
    }

    private final PayloadSink sink;

    LandingRecvAllocator(PayloadSink sink) {
        super(16);
        this.sink = sink;
    }

    @Override
    public MaxMessageHandle newHandle() {
        return new MaxMessageHandle() {
            @Override
            public ByteBuf allocate(ByteBufAllocator alloc) {
                ByteBuf view = sink.payloadView();
                return view != null ? view : alloc.ioBuffer(HEADER_READ_BYTES);
            }

            @Override
            public int guess() {
                return HEADER_READ_BYTES;
            }
        };
    }
}
