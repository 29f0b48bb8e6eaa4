package org.tent4j.cli.bench;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * A deterministic byte pattern over a buffer's offsets: the byte at offset {@code o} depends only on {@code o} and a
 * seed. Blocks written at one offset therefore never match another offset's bytes, and a fresh seed tells a new write
 * from stale data. The words are a SplitMix64 hash, so a shifted or truncated copy cannot pass by accident.
 */
public final class DataPattern {
    /** The pattern a target fills its buffer with, and that reads are checked against. */
    public static final long TARGET_SEED = 0x7e47_4a5eL;

    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final int CHUNK_WORDS = 4096;

    private DataPattern() {
    }

    /** Fills {@code memory}, whose first byte stands at {@code patternOffset} of the pattern. */
    public static void fill(MemorySegment memory, long patternOffset, long seed) {
        long n = memory.byteSize();
        long i = 0;
        while (i < n && ((patternOffset + i) & 7) != 0) {
            memory.set(ValueLayout.JAVA_BYTE, i, expectedByte(patternOffset + i, seed));
            i++;
        }
        if (n - i >= 8L * CHUNK_WORDS) {
            // a whole buffer at start runs in the interpreter, where an array store is one bytecode and a segment
            // store a chain of var-handle calls: words go through an array and one bulk copy per chunk
            long[] chunk = new long[CHUNK_WORDS];
            for (; n - i >= 8L * CHUNK_WORDS; i += 8L * CHUNK_WORDS) {
                long first = (patternOffset + i) >>> 3;
                for (int w = 0; w < CHUNK_WORDS; w++) {
                    chunk[w] = word(first + w, seed);
                }
                MemorySegment.copy(chunk, 0, memory, WORD, i, CHUNK_WORDS);
            }
        }
        for (; i + 8 <= n; i += 8) {
            memory.set(WORD, i, word((patternOffset + i) >>> 3, seed));
        }
        for (; i < n; i++) {
            memory.set(ValueLayout.JAVA_BYTE, i, expectedByte(patternOffset + i, seed));
        }
    }

    /** Index (within {@code memory}) of the first byte that differs from the pattern, or -1 if all match. */
    public static long firstMismatch(MemorySegment memory, long patternOffset, long seed) {
        long n = memory.byteSize();
        long i = 0;
        while (i < n && ((patternOffset + i) & 7) != 0) {
            if (memory.get(ValueLayout.JAVA_BYTE, i) != expectedByte(patternOffset + i, seed)) {
                return i;
            }
            i++;
        }
        for (; i + 8 <= n; i += 8) {
            long expected = word((patternOffset + i) >>> 3, seed);
            long actual = memory.get(WORD, i);
            if (actual != expected) {
                return i + (Long.numberOfTrailingZeros(actual ^ expected) >>> 3);
            }
        }
        for (; i < n; i++) {
            if (memory.get(ValueLayout.JAVA_BYTE, i) != expectedByte(patternOffset + i, seed)) {
                return i;
            }
        }
        return -1;
    }

    public static byte expectedByte(long offset, long seed) {
        return (byte) (word(offset >>> 3, seed) >>> ((offset & 7) * 8));
    }

    private static long word(long wordIndex, long seed) {
        long z = seed * 0x9E37_79B9_7F4A_7C15L + wordIndex + 0x632B_E59B_D9B4_E019L;
        z = (z ^ (z >>> 30)) * 0xBF58_476D_1CE4_E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D0_49BB_1331_11EBL;
        return z ^ (z >>> 31);
    }
}
