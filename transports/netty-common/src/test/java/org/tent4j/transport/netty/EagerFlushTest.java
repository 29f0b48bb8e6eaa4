package org.tent4j.transport.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;

/** Writes reach the channel (here: the handler below, an SslHandler in the transports) without waiting for a flush. */
class EagerFlushTest {

    @Test
    void flushesOnceEnoughBytesAreWrittenAndCountsFromTheLastFlush() {
        EagerFlush eager = new EagerFlush(1000);
        EmbeddedChannel ch = new EmbeddedChannel(eager);
        ch.write(Unpooled.wrappedBuffer(new byte[600]));
        assertNull(ch.readOutbound(), "600 of 1000 bytes: nothing flushed yet");
        ch.write(Unpooled.wrappedBuffer(new byte[600]));
        assertEquals(600, ((ByteBuf) ch.readOutbound()).readableBytes());
        assertEquals(600, ((ByteBuf) ch.readOutbound()).readableBytes());
        assertEquals(1, eager.eagerFlushes());

        ch.write(Unpooled.wrappedBuffer(new byte[10]));
        ch.flush(); // the writer's own flush resets the count
        assertEquals(10, ((ByteBuf) ch.readOutbound()).readableBytes());
        ch.write(Unpooled.wrappedBuffer(new byte[990]));
        assertNull(ch.readOutbound(), "990 bytes since the last flush");
        assertEquals(1, eager.eagerFlushes());
        ch.write(Unpooled.wrappedBuffer(new byte[10]));
        assertEquals(2, eager.eagerFlushes());
        ch.finishAndReleaseAll();
    }

    @Test
    void refusesAThresholdBelowOneByte() {
        assertThrows(IllegalArgumentException.class, () -> new EagerFlush(0));
    }
}
