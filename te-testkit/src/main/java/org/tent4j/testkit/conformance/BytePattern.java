package org.tent4j.testkit.conformance;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.zip.CRC32C;

/**
 * Reproducible test bytes and the checks on them. A pattern is a function of (seed, position from the start of the
 * fill), so two processes that agree on a seed produce the same bytes without exchanging them, and no run of equal
 * bytes hides a shifted copy.
 */
public final class BytePattern {
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED;

    private BytePattern() {
    }

    /**
     * Writes the pattern of {@code seed} into {@code [offset, offset + length)} of {@code memory}.
     *
     * @param memory where to write
     * @param offset first byte to write
     * @param length bytes to write
     * @param seed   selects the pattern; a different seed gives different bytes at every word
     */
    public static void fill(MemorySegment memory, long offset, long length, long seed) {
        long k = 0;
        for (; k + 8 <= length; k += 8) {
            memory.set(WORD, offset + k, word(seed, k >>> 3));
        }
        if (k < length) {
            long last = word(seed, k >>> 3);
            for (int i = 0; k + i < length; i++) {
                memory.set(ValueLayout.JAVA_BYTE, offset + k + i, (byte) (last >>> (8 * i)));
            }
        }
    }

    /**
     * CRC32C of {@code [offset, offset + length)}.
     *
     * @param memory the memory
     * @param offset first byte
     * @param length bytes, any size
     * @return the checksum
     */
    public static long crc32c(MemorySegment memory, long offset, long length) {
        CRC32C crc = new CRC32C();
        long chunk = 1L << 30; // a ByteBuffer view holds at most 2 GiB
        for (long at = 0; at < length; at += chunk) {
            crc.update(memory.asSlice(offset + at, Math.min(chunk, length - at)).asByteBuffer());
        }
        return crc.getValue();
    }

    /**
     * Offset (from the start of the ranges) of the first byte that differs, or -1 if the ranges are equal.
     *
     * @param a       one memory
     * @param aOffset where its range starts
     * @param b       the other memory
     * @param bOffset where its range starts
     * @param length  bytes to compare
     * @return the offset of the first difference, or -1
     */
    public static long firstDifference(MemorySegment a, long aOffset, MemorySegment b, long bOffset, long length) {
        return MemorySegment.mismatch(a, aOffset, aOffset + length, b, bOffset, bOffset + length);
    }

    /**
     * Offset (from {@code offset}) of the first byte in the range that is not {@code value}, or -1 if none.
     *
     * @param memory the memory
     * @param offset first byte
     * @param length bytes to look at
     * @param value  the byte expected everywhere
     * @return the offset from {@code offset} of the first other byte, or -1
     */
    public static long firstNot(MemorySegment memory, long offset, long length, byte value) {
        for (long i = 0; i < length; i++) {
            if (memory.get(ValueLayout.JAVA_BYTE, offset + i) != value) {
                return i;
            }
        }
        return -1;
    }

    private static long word(long seed, long index) {
        // SplitMix64 finaliser: every word distinct, every bit depends on the position
        long z = seed + (index + 1) * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
