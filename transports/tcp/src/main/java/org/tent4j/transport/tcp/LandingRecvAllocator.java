package org.tent4j.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.DefaultMaxMessagesRecvByteBufAllocator;

/**
 * Hands the socket the destination memory itself while payload bytes are expected, so the kernel copies them straight
 * into registered memory (epoll, NIO and io_uring all read into whatever the handle allocates). Otherwise it hands
 * out the connection's own read buffer for headers; payload bytes that arrive behind a header in it are copied. Small
 * READ answers at the initiator ({@link MemoryRegionBufs#COPY_OUT_BYTES}) are never landed: they are read many to a
 * read and copied out.
 *
 * <p>One allocator per channel, since it asks that channel's handler what it expects next. Netty allocates the next
 * read buffer only after the previous one went through the pipeline, so the answer is always current.
 */
final class LandingRecvAllocator extends DefaultMaxMessagesRecvByteBufAllocator {
    /** The channel handler that knows whether payload bytes come next. */
    interface PayloadSink {
        /**
         * Where the next socket read goes: a retained view of the not yet received rest of the current payload, with
         * reader and writer index at the first missing byte, or an empty read buffer when no payload is expected or
         * the payload is small enough to be copied out of a read it shares with others.
         */
        ByteBuf nextReadBuffer();
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
                return sink.nextReadBuffer();
            }

            @Override
            public int guess() {
                return MemoryRegionBufs.READ_BUFFER_BYTES;
            }
        };
    }
}
