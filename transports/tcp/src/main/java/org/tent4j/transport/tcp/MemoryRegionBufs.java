package org.tent4j.transport.tcp;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.GatheringByteChannel;
import java.nio.channels.ScatteringByteChannel;
import java.util.ArrayDeque;

import io.netty.buffer.AbstractReferenceCountedByteBuf;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.EventLoop;

/**
 * The buffers a tcp connection hands Netty, none of them allocated per slice: views of registered memory that sockets
 * read into and write from directly (no copy), and small buffers of its own for frame headers and header reads.
 *
 * <p>A view is a {@link RegionBuf}: the registration's {@link MemorySegment}, an offset and a length. It reports its
 * native address, so epoll, io_uring and the vectored writes hand that address to the kernel, with or without
 * {@code sun.misc.Unsafe} (which Java 25 denies Netty unless the JVM allows it). Java code that touches a view's bytes
 * goes through the segment, so it stays inside the registration and cannot write a read-only one.
 *
 * <p>Buffers are recycled: one instance of this class belongs to one channel's event loop and keeps what is released
 * there for reuse. Header and read buffers have their own native storage rather than coming from Netty's allocator,
 * whose leak detector records a stack trace (kilobytes) for one allocation in 128. A view's final release drops the
 * {@link BufferPins.Pin} it carries: that release is the moment the socket can no longer touch the memory (for
 * io_uring it may come after the channel closed, when the cancelled kernel read completes).
 */
final class MemoryRegionBufs {
    /** Room for the larger of a request and a response header. */
    static final int FRAME_HEADER_BYTES = Math.max(WireProtocol.REQUEST_HEADER_BYTES, WireProtocol.RESPONSE_HEADER_BYTES);
    /**
     * Size of the socket reads that are not straight into a payload's destination. Smaller means more of a payload
     * lands directly (only what shares a read with its header is copied); larger means fewer reads for many small
     * pipelined requests.
     */
    static final int READ_BUFFER_BYTES = 16 * 1024;
    /**
     * Payloads up to this size are not landed in place at the initiator: while one is expected, or the oldest
     * outstanding request is a READ this small, the socket reads {@link #BULK_READ_BYTES} at a time and the payloads
     * are copied out. A 4 KiB copy costs less than the extra read landing it would take.
     */
    static final int COPY_OUT_BYTES = 16 * 1024;
    /** Size of the reads while small READ answers are expected: about fifteen 4 KiB answers with their headers. */
    static final int BULK_READ_BYTES = 64 * 1024;

    private final EventLoop loop;
    private final Pool views = new Pool(0);
    private final Pool headers = new Pool(FRAME_HEADER_BYTES);
    private final Pool reads = new Pool(READ_BUFFER_BYTES);
    private final Pool bulkReads = new Pool(BULK_READ_BYTES);

    MemoryRegionBufs(EventLoop loop) {
        this.loop = loop;
    }

    /** A readable view of {@code length} bytes at {@code offset} of {@code memory} (what a socket sends). */
    ByteBuf readable(MemorySegment memory, long offset, int length, BufferPins.Pin pin) {
        return views.take().reset(memory, offset, length, pin).setIndex(0, length);
    }

    /** An empty view with room for exactly {@code length} bytes at {@code offset} (where a socket receives). */
    ByteBuf landing(MemorySegment memory, long offset, int length, BufferPins.Pin pin) {
        if (memory.isReadOnly()) {
            throw new IllegalArgumentException("cannot receive into read-only memory at 0x"
                    + Long.toHexString(memory.address() + offset));
        }
        return views.take().reset(memory, offset, length, pin).setIndex(0, 0);
    }

    /** An empty buffer of {@link #FRAME_HEADER_BYTES} for one frame header. */
    ByteBuf header() {
        return headers.take().own();
    }

    /** An empty buffer of {@link #READ_BUFFER_BYTES} for a socket read of headers (and whatever follows them). */
    ByteBuf readBuffer() {
        return reads.take().own();
    }

    /** An empty buffer of {@link #BULK_READ_BYTES} for a socket read of many small answers. */
    ByteBuf bulkReadBuffer() {
        return bulkReads.take().own();
    }

    /** Header buffers in use: one per answer not yet written to the socket, one per frame being collected. */
    int headersInUse() {
        return headers.inUse;
    }

    /** Free buffers of one kind: all views, or all own buffers of one size. */
    private final class Pool {
        /** More than any lane keeps in flight at the default caps; beyond it released buffers are left to the GC. */
        private static final int MAX_FREE = 1024;

        private final int storageBytes;
        private final ArrayDeque<RegionBuf> free = new ArrayDeque<>();
        /** Taken and not yet back, counted on the owning loop (a release elsewhere happens only at shutdown). */
        private int inUse;

        Pool(int storageBytes) {
            this.storageBytes = storageBytes;
        }

        RegionBuf take() {
            boolean onLoop = loop.inEventLoop();
            if (onLoop) {
                inUse++;
            }
            RegionBuf b = onLoop ? free.pollFirst() : null;
            if (b != null) {
                return b;
            }
            // each buffer's storage is its own, so one dropped past MAX_FREE is freed by the GC; memory shared by all
            // of a connection's buffers would only be freed with the connection, and a long-lived connection that
            // had many answers queued now and then would keep what each burst added
            return new RegionBuf(this, storageBytes == 0 ? null : Arena.ofAuto().allocate(storageBytes, 8));
        }

        void recycle(RegionBuf b) {
            // only the owning loop touches the free lists; a buffer released elsewhere (shutdown) is simply dropped
            if (loop.inEventLoop()) {
                inUse--;
                if (free.size() < MAX_FREE) {
                    free.addFirst(b);
                }
            }
        }
    }

    /** A resettable view of registered memory; see {@link MemoryRegionBufs}. */
    static final class RegionBuf extends AbstractReferenceCountedByteBuf {
        /** Netty's own buffers, addressed by their native address when copying to or from one. */
        private static final MemorySegment ALL = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
        private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
        private static final ValueLayout.OfShort SHORT_LE = ValueLayout.JAVA_SHORT_UNALIGNED
                .withOrder(ByteOrder.LITTLE_ENDIAN);
        private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
        private static final ValueLayout.OfInt INT_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
        private static final ValueLayout.OfLong LONG_LE = ValueLayout.JAVA_LONG_UNALIGNED
                .withOrder(ByteOrder.LITTLE_ENDIAN);

        private final Pool home;
        /** The buffer's own memory, or {@code null} for a view of registered memory. */
        private final MemorySegment storage;
        private MemorySegment memory;
        private long base;
        private int length;
        private BufferPins.Pin pin;

        private RegionBuf(Pool home, MemorySegment storage) {
            super(0);
            this.home = home;
            this.storage = storage;
        }

        /** Empty, over its own storage. */
        private ByteBuf own() {
            return reset(storage, 0, (int) storage.byteSize(), null).setIndex(0, 0);
        }

        private RegionBuf reset(MemorySegment memory, long offset, int length, BufferPins.Pin pin) {
            if (!memory.isNative() || offset < 0 || length < 0 || offset > memory.byteSize() - length) {
                throw new IndexOutOfBoundsException("view [" + offset + ", +" + length + ") of a "
                        + (memory.isNative() ? memory.byteSize() + "-byte registration" : "heap segment"));
            }
            this.memory = memory;
            this.base = offset;
            this.length = length;
            this.pin = pin;
            maxCapacity(length);
            resetRefCnt();
            return this;
        }

        @Override
        protected void deallocate() {
            BufferPins.Pin p = pin;
            pin = null;
            memory = null;
            length = 0;
            maxCapacity(0);
            setIndex(0, 0);
            if (p != null) {
                p.release();
            }
            home.recycle(this);
        }

        // ---- shape ----

        @Override
        public int capacity() {
            return length;
        }

        @Override
        public ByteBuf capacity(int newCapacity) {
            throw new UnsupportedOperationException("a view of registered memory cannot be resized");
        }

        @Override
        public ByteBufAllocator alloc() {
            return UnpooledByteBufAllocator.DEFAULT;
        }

        @Override
        @SuppressWarnings("deprecation")
        public ByteOrder order() {
            return ByteOrder.BIG_ENDIAN;
        }

        @Override
        public ByteBuf unwrap() {
            return null;
        }

        @Override
        public boolean isDirect() {
            return true;
        }

        @Override
        public boolean isContiguous() {
            return true;
        }

        @Override
        public boolean hasArray() {
            return false;
        }

        @Override
        public byte[] array() {
            throw new UnsupportedOperationException("a view of registered memory has no array");
        }

        @Override
        public int arrayOffset() {
            throw new UnsupportedOperationException("a view of registered memory has no array");
        }

        @Override
        public boolean hasMemoryAddress() {
            return true;
        }

        @Override
        public long memoryAddress() {
            ensureAccessible();
            return memory.address() + base;
        }

        @Override
        public int nioBufferCount() {
            return 1;
        }

        @Override
        public ByteBuffer nioBuffer(int index, int length) {
            checkIndex(index, length);
            return memory.asSlice(base + index, length).asByteBuffer();
        }

        @Override
        public ByteBuffer internalNioBuffer(int index, int length) {
            return nioBuffer(index, length);
        }

        @Override
        public ByteBuffer[] nioBuffers(int index, int length) {
            return new ByteBuffer[] {nioBuffer(index, length)};
        }

        @Override
        public ByteBuf copy(int index, int length) {
            checkIndex(index, length);
            ByteBuf copy = alloc().directBuffer(length);
            copy.writeBytes(this, index, length);
            return copy;
        }

        // ---- bulk ----

        @Override
        public ByteBuf getBytes(int index, ByteBuf dst, int dstIndex, int length) {
            checkDstIndex(index, length, dstIndex, dst.capacity());
            if (dst.hasMemoryAddress()) {
                MemorySegment.copy(memory, base + index, ALL, dst.memoryAddress() + dstIndex, length);
            } else if (dst.hasArray()) {
                MemorySegment.copy(memory, ValueLayout.JAVA_BYTE, base + index, dst.array(),
                        dst.arrayOffset() + dstIndex, length);
            } else {
                dst.setBytes(dstIndex, nioBuffer(index, length));
            }
            return this;
        }

        @Override
        public ByteBuf getBytes(int index, byte[] dst, int dstIndex, int length) {
            checkDstIndex(index, length, dstIndex, dst.length);
            MemorySegment.copy(memory, ValueLayout.JAVA_BYTE, base + index, dst, dstIndex, length);
            return this;
        }

        @Override
        public ByteBuf getBytes(int index, ByteBuffer dst) {
            dst.put(nioBuffer(index, dst.remaining()));
            return this;
        }

        @Override
        public ByteBuf getBytes(int index, OutputStream out, int length) throws IOException {
            checkIndex(index, length);
            byte[] bytes = new byte[length];
            getBytes(index, bytes, 0, length);
            out.write(bytes);
            return this;
        }

        @Override
        public int getBytes(int index, GatheringByteChannel out, int length) throws IOException {
            return length == 0 ? 0 : out.write(nioBuffer(index, length));
        }

        @Override
        public int getBytes(int index, FileChannel out, long position, int length) throws IOException {
            return length == 0 ? 0 : out.write(nioBuffer(index, length), position);
        }

        @Override
        public ByteBuf setBytes(int index, ByteBuf src, int srcIndex, int length) {
            checkSrcIndex(index, length, srcIndex, src.capacity());
            if (src.hasMemoryAddress()) {
                MemorySegment.copy(ALL, src.memoryAddress() + srcIndex, memory, base + index, length);
            } else if (src.hasArray()) {
                MemorySegment.copy(src.array(), src.arrayOffset() + srcIndex, memory, ValueLayout.JAVA_BYTE,
                        base + index, length);
            } else {
                src.getBytes(srcIndex, nioBuffer(index, length));
            }
            return this;
        }

        @Override
        public ByteBuf setBytes(int index, byte[] src, int srcIndex, int length) {
            checkSrcIndex(index, length, srcIndex, src.length);
            MemorySegment.copy(src, srcIndex, memory, ValueLayout.JAVA_BYTE, base + index, length);
            return this;
        }

        @Override
        public ByteBuf setBytes(int index, ByteBuffer src) {
            nioBuffer(index, src.remaining()).put(src);
            return this;
        }

        @Override
        public int setBytes(int index, InputStream in, int length) throws IOException {
            checkIndex(index, length);
            byte[] bytes = in.readNBytes(length);
            if (bytes.length == 0 && length > 0) {
                return -1;
            }
            setBytes(index, bytes, 0, bytes.length);
            return bytes.length;
        }

        @Override
        public int setBytes(int index, ScatteringByteChannel in, int length) throws IOException {
            try {
                return in.read(nioBuffer(index, length));
            } catch (ClosedChannelException e) {
                return -1;
            }
        }

        @Override
        public int setBytes(int index, FileChannel in, long position, int length) throws IOException {
            try {
                return in.read(nioBuffer(index, length), position);
            } catch (ClosedChannelException e) {
                return -1;
            }
        }

        // ---- single values (AbstractByteBuf has checked the index) ----

        @Override
        protected byte _getByte(int index) {
            return memory.get(ValueLayout.JAVA_BYTE, base + index);
        }

        @Override
        protected short _getShort(int index) {
            return memory.get(SHORT, base + index);
        }

        @Override
        protected short _getShortLE(int index) {
            return memory.get(SHORT_LE, base + index);
        }

        @Override
        protected int _getUnsignedMedium(int index) {
            return (_getByte(index) & 0xff) << 16 | (_getByte(index + 1) & 0xff) << 8 | _getByte(index + 2) & 0xff;
        }

        @Override
        protected int _getUnsignedMediumLE(int index) {
            return _getByte(index) & 0xff | (_getByte(index + 1) & 0xff) << 8 | (_getByte(index + 2) & 0xff) << 16;
        }

        @Override
        protected int _getInt(int index) {
            return memory.get(INT, base + index);
        }

        @Override
        protected int _getIntLE(int index) {
            return memory.get(INT_LE, base + index);
        }

        @Override
        protected long _getLong(int index) {
            return memory.get(LONG, base + index);
        }

        @Override
        protected long _getLongLE(int index) {
            return memory.get(LONG_LE, base + index);
        }

        @Override
        protected void _setByte(int index, int value) {
            memory.set(ValueLayout.JAVA_BYTE, base + index, (byte) value);
        }

        @Override
        protected void _setShort(int index, int value) {
            memory.set(SHORT, base + index, (short) value);
        }

        @Override
        protected void _setShortLE(int index, int value) {
            memory.set(SHORT_LE, base + index, (short) value);
        }

        @Override
        protected void _setMedium(int index, int value) {
            _setByte(index, value >>> 16);
            _setByte(index + 1, value >>> 8);
            _setByte(index + 2, value);
        }

        @Override
        protected void _setMediumLE(int index, int value) {
            _setByte(index, value);
            _setByte(index + 1, value >>> 8);
            _setByte(index + 2, value >>> 16);
        }

        @Override
        protected void _setInt(int index, int value) {
            memory.set(INT, base + index, value);
        }

        @Override
        protected void _setIntLE(int index, int value) {
            memory.set(INT_LE, base + index, value);
        }

        @Override
        protected void _setLong(int index, long value) {
            memory.set(LONG, base + index, value);
        }

        @Override
        protected void _setLongLE(int index, long value) {
            memory.set(LONG_LE, base + index, value);
        }
    }
}
