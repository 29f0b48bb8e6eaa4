package org.tent4j.platform.common;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The wire form of a CUDA or HIP IPC handle as tent4j exports it: the runtime's handle bytes followed by the
 * little-endian offset of the exported range inside its block (8 bytes). A runtime handle always names the whole
 * block and opening it returns the block's base, so without the offset an importer of a sub-range would land on the
 * wrong bytes.
 */
public final class IpcHandleOffset {
    private static final ValueLayout.OfLong OFFSET = JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN).withByteAlignment(1);

    private IpcHandleOffset() {
    }

    /** {@code handle} (the runtime's {@code handleBytes} bytes) followed by {@code offset}. */
    public static byte[] encode(MemorySegment handle, int handleBytes, long offset) {
        byte[] out = new byte[handleBytes + Long.BYTES];
        MemorySegment o = MemorySegment.ofArray(out);
        o.copyFrom(handle.asSlice(0, handleBytes));
        o.set(OFFSET, handleBytes, offset);
        return out;
    }

    /** The offset that {@link #encode} put after the runtime's {@code handleBytes} bytes. */
    public static long offset(byte[] handle, int handleBytes) {
        return MemorySegment.ofArray(handle).get(OFFSET, handleBytes);
    }
}
