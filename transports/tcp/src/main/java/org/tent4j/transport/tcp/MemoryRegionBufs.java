package org.tent4j.transport.tcp;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;
import io.netty.buffer.UnpooledUnsafeDirectByteBuf;
import io.netty.util.internal.PlatformDependent;

/**
 * Netty buffers that are views of registered memory: sockets read into and write from them directly, no copy.
 *
 * <p>Why not {@code Unpooled.wrappedBuffer(address, length, false)}: on Java 25 Netty disables {@code sun.misc.Unsafe}
 * unless the JVM runs with {@code --sun-misc-unsafe-memory-access=allow}, and that method then throws. These views are
 * built from {@link MemorySegment#asByteBuffer()} instead and pick the Unsafe-backed Netty class only when Netty has
 * Unsafe. Both are subclasses so that Netty's final release of a view drops the {@link BufferPins.Pin} it carries:
 * that release is the moment the socket can no longer touch the memory (for io_uring it may come after the channel
 * closed, when the cancelled kernel read completes).
 *
 * <p>Per view this allocates the view object, its reference count and one {@code ByteBuffer} slice of the
 * registration (cached whole per registration); nothing per byte.
 */
final class MemoryRegionBufs {
    private static final boolean UNSAFE = PlatformDependent.hasUnsafe();

    private MemoryRegionBufs() {
    }

    /**
     * {@code memory} as one ByteBuffer to slice views from, or {@code null} when it cannot be one (over 2 GiB, or
     * read-only); views of such memory are built from segment slices instead.
     */
    static ByteBuffer wholeOf(MemorySegment memory) {
        if (memory.byteSize() > Integer.MAX_VALUE || memory.isReadOnly()) {
            return null;
        }
        return memory.asByteBuffer();
    }

    /**
     * A readable view of {@code length} bytes at {@code offset} of {@code memory} (what a socket sends);
     * {@code whole} is {@link #wholeOf}{@code (memory)} if the caller has it, else {@code null}.
     */
    static ByteBuf readable(ByteBuffer whole, MemorySegment memory, long offset, int length, BufferPins.Pin pin) {
        return view(whole != null ? whole.slice((int) offset, length) : byteBuffer(memory, offset, length), pin);
    }

    /** An empty view with room for exactly {@code length} bytes at {@code offset} (where a socket receives). */
    static ByteBuf landing(ByteBuffer whole, MemorySegment memory, long offset, int length, BufferPins.Pin pin) {
        ByteBuffer bytes = whole != null ? whole.slice((int) offset, length)
                : memory.asSlice(offset, length).asByteBuffer();
        return view(bytes, pin).clear();
    }

    /** Whether the process uses Unsafe-backed views (for the report in {@code description()}). */
    static boolean unsafeViews() {
        return UNSAFE;
    }

    private static ByteBuffer byteBuffer(MemorySegment memory, long offset, int length) {
        MemorySegment s = memory.asSlice(offset, length);
        if (s.isReadOnly()) {
            // Netty rejects read-only ByteBuffers; sending only reads, so a writable alias of the same bytes is safe
            return MemorySegment.ofAddress(s.address()).reinterpret(length).asByteBuffer();
        }
        return s.asByteBuffer();
    }

    private static ByteBuf view(ByteBuffer bytes, BufferPins.Pin pin) {
        return UNSAFE ? new UnsafeView(bytes, pin) : new SafeView(bytes, pin);
    }

    private static final class UnsafeView extends UnpooledUnsafeDirectByteBuf {
        private final BufferPins.Pin pin;

        UnsafeView(ByteBuffer bytes, BufferPins.Pin pin) {
            super(UnpooledByteBufAllocator.DEFAULT, false, bytes, bytes.remaining());
            this.pin = pin;
        }

        @Override
        protected void deallocate() {
            super.deallocate(); // never frees: the memory belongs to the registration
            if (pin != null) {
                pin.release();
            }
        }
    }

    private static final class SafeView extends UnpooledDirectByteBuf {
        private final BufferPins.Pin pin;

        SafeView(ByteBuffer bytes, BufferPins.Pin pin) {
            super(UnpooledByteBufAllocator.DEFAULT, bytes, bytes.remaining());
            this.pin = pin;
        }

        @Override
        protected void deallocate() {
            super.deallocate();
            if (pin != null) {
                pin.release();
            }
        }
    }
}
