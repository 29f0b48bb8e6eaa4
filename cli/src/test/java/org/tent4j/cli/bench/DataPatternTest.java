package org.tent4j.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.junit.jupiter.api.Test;

class DataPatternTest {

    @Test
    void filledBlocksVerifyAtAnyAlignmentAndLength() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment whole = arena.allocate(4096);
            DataPattern.fill(whole, 0, 9);
            assertEquals(-1, DataPattern.firstMismatch(whole, 0, 9));
            // a block cut out at an odd offset carries the same bytes as the pattern at that offset
            for (long off : new long[]{0, 1, 3, 7, 8, 13, 1000}) {
                for (long len : new long[]{1, 5, 8, 9, 100, 1001}) {
                    MemorySegment block = whole.asSlice(off, len);
                    assertEquals(-1, DataPattern.firstMismatch(block, off, 9), "off " + off + " len " + len);
                    MemorySegment copy = arena.allocate(len);
                    DataPattern.fill(copy, off, 9);
                    assertEquals(-1, copy.mismatch(block), "fill at off " + off + " len " + len);
                }
            }
        }
    }

    @Test
    void aLargeFillMatchesThePatternByteForByte() {
        try (Arena arena = Arena.ofConfined()) {
            // past the chunked path's size, at an odd pattern offset, with a tail of odd length
            MemorySegment big = arena.allocate(3 * 32768 + 13);
            DataPattern.fill(big, 5, 9);
            for (long i = 0; i < big.byteSize(); i++) {
                if (big.get(ValueLayout.JAVA_BYTE, i) != DataPattern.expectedByte(5 + i, 9)) {
                    fail("byte " + i + " differs from the pattern");
                }
            }
            assertEquals(-1, DataPattern.firstMismatch(big, 5, 9));
        }
    }

    @Test
    void findsTheFirstWrongByte() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment block = arena.allocate(1000);
            DataPattern.fill(block, 3, 1);
            for (long at : new long[]{0, 4, 5, 12, 500, 999}) {
                byte b = block.get(ValueLayout.JAVA_BYTE, at);
                block.set(ValueLayout.JAVA_BYTE, at, (byte) ~b);
                assertEquals(at, DataPattern.firstMismatch(block, 3, 1));
                block.set(ValueLayout.JAVA_BYTE, at, b);
            }
        }
    }

    @Test
    void zeroesShiftedDataAndOtherSeedsFail() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment block = arena.allocate(4096);
            assertNotEquals(-1, DataPattern.firstMismatch(block, 0, DataPattern.TARGET_SEED), "zeroes pass");
            DataPattern.fill(block, 4096, DataPattern.TARGET_SEED);
            assertNotEquals(-1, DataPattern.firstMismatch(block, 0, DataPattern.TARGET_SEED), "wrong block passes");
            assertNotEquals(-1, DataPattern.firstMismatch(block, 4096, DataPattern.TARGET_SEED + 1), "stale seed passes");
            assertEquals(-1, DataPattern.firstMismatch(block, 4096, DataPattern.TARGET_SEED));
        }
    }
}
