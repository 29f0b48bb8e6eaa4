package org.tent4j.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelOption;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.tent4j.api.Permission;
import org.tent4j.testkit.transport.TestLocalMemory;

/** The target's state machine driven byte by byte through an {@link EmbeddedChannel}, with no sockets. */
class TargetConnectionTest {
    private final Arena arena = Arena.ofShared();
    private final TestLocalMemory memory = new TestLocalMemory();
    private final BufferPins pins = new BufferPins();
    private TestLocalMemory.Buffer buffer;
    private EmbeddedChannel channel;

    @BeforeEach
    void setUp() {
        buffer = memory.register(arena.allocate(64 << 10, 64), Permission.READ_WRITE);
        TcpFixture.fillRandom(buffer.segment(), 4);
        channel = new EmbeddedChannel(new TargetConnection("b", memory, pins, 1 << 20, new PayloadCounters(),
                new InboundLimits(16, java.time.Duration.ZERO, 16 << 20)));
    }

    @AfterEach
    void tearDown() {
        channel.finishAndReleaseAll();
        arena.close();
    }

    @Test
    void readingResumesWhenAFlushDrainsTheQueueBelowTheLowWaterMark() {
        // an embedded channel drains its whole queue inside flush(), so writability flips back during the flush;
        // the target must not switch reading off after that flip, or the connection stops for good
        channel.config().setOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(1024, 4096));
        channel.writeInbound(request(1, 1, buffer.address(), 32 << 10));
        assertTrue(channel.isWritable());
        assertTrue(channel.config().isAutoRead(), "reading stayed off after the queue drained");
        ByteBuf header = channel.readOutbound();
        assertEquals(0, header.getIntLE(4));
        assertEquals(1, header.getLongLE(8));
        header.release();
        ByteBuf body = channel.readOutbound();
        assertEquals(32 << 10, body.readableBytes());
        assertEquals(-1, MemorySegment.ofBuffer(body.nioBuffer()).mismatch(buffer.segment().asSlice(0, 32 << 10)));
        body.release();
        assertEquals(0, pins.holders(buffer), "the answer's pin goes with its view");
    }

    @Test
    void headerAndPayloadArrivingOneByteAtATimeStillLandIntact() {
        byte[] payload = new byte[3000];
        new java.util.SplittableRandom(5).nextBytes(payload);
        ByteBuf stream = Unpooled.wrappedBuffer(request(2, 7, buffer.address() + 100, payload.length),
                Unpooled.wrappedBuffer(payload));
        while (stream.isReadable()) {
            channel.writeInbound(stream.readRetainedSlice(1));
        }
        stream.release();
        ByteBuf ok = channel.readOutbound();
        assertEquals(RawClient.RESPONSE_MAGIC, ok.getIntLE(0));
        assertEquals(0, ok.getIntLE(4));
        assertEquals(7, ok.getLongLE(8));
        ok.release();
        assertNull(channel.readOutbound());
        assertEquals(-1, MemorySegment.ofArray(payload).mismatch(buffer.segment().asSlice(100, payload.length)));
        assertEquals(0, pins.holders(buffer));
    }

    @Test
    void aRejectedWritesPayloadIsDroppedAcrossManyReads() {
        long outside = buffer.address() + buffer.length() + 4096;
        byte[] payload = new byte[5000];
        CompositeByteBuf stream = Unpooled.compositeBuffer();
        stream.addComponents(true, request(2, 1, outside, payload.length), Unpooled.wrappedBuffer(payload),
                request(1, 2, buffer.address(), 8));
        long before = TcpFixture.crc(buffer.segment());
        while (stream.isReadable()) {
            channel.writeInbound(stream.readRetainedSlice(Math.min(777, stream.readableBytes())));
        }
        stream.release();
        ByteBuf error = channel.readOutbound();
        assertEquals(WireProtocol.STATUS_ADDRESS_NOT_REGISTERED, error.getIntLE(4));
        assertEquals(1, error.getLongLE(8));
        error.release();
        ByteBuf ok = channel.readOutbound();
        assertEquals(0, ok.getIntLE(4));
        assertEquals(2, ok.getLongLE(8), "the dropped payload was not read as a header");
        ok.release();
        ((ByteBuf) channel.readOutbound()).release();
        assertEquals(before, TcpFixture.crc(buffer.segment()));
        assertTrue(channel.isOpen());
    }

    @Test
    void closingInTheMiddleOfAWritePayloadGivesThePinBack() {
        channel.writeInbound(request(2, 1, buffer.address(), 10_000));
        channel.writeInbound(Unpooled.wrappedBuffer(new byte[100]));
        assertEquals(1, pins.holders(buffer), "the WRITE in progress holds its buffer");
        channel.close();
        assertEquals(0, pins.holders(buffer));
        assertFalse(channel.isOpen());
        assertNull(channel.readOutbound(), "no answer for a WRITE that never finished");
    }

    private static ByteBuf request(int op, long id, long address, long length) {
        ByteBuf b = Unpooled.buffer(32);
        b.writeBytes(ByteBuffer.wrap(RawClient.header(RawClient.MAGIC, 1, op, 0, id, address, length)));
        return b;
    }
}
