package org.tent4j.transport.shm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.zip.CRC32;

/** Deterministic byte patterns and checksums for checking that bytes arrive intact. */
final class Patterns {
    private Patterns() {
    }

    /** Fills {@code [offset, offset + length)} with the pattern of {@code seed}; byte i depends on (seed, i). */
    static void fill(MemorySegment segment, long offset, long length, long seed) {
        long word = 0;
        for (long i = 0; i < length; i++) {
            if ((i & 7) == 0) {
                word = mix(seed + (i >>> 3));
            }
            segment.set(ValueLayout.JAVA_BYTE, offset + i, (byte) (word >>> ((i & 7) << 3)));
        }
    }

    /** CRC32 of the pattern of {@code seed} over {@code length} bytes, without a buffer holding it. */
    static long crcOfPattern(long length, long seed) {
        CRC32 crc = new CRC32();
        long word = 0;
        for (long i = 0; i < length; i++) {
            if ((i & 7) == 0) {
                word = mix(seed + (i >>> 3));
            }
            crc.update((int) (word >>> ((i & 7) << 3)) & 0xff);
        }
        return crc.getValue();
    }

    static long crc(MemorySegment segment, long offset, long length) {
        CRC32 crc = new CRC32();
        crc.update(segment.asSlice(offset, length).asByteBuffer());
        return crc.getValue();
    }

    /** Whether every byte of {@code [offset, offset + length)} is {@code value}. */
    static boolean allEqual(MemorySegment segment, long offset, long length, byte value) {
        for (long i = 0; i < length; i++) {
            if (segment.get(ValueLayout.JAVA_BYTE, offset + i) != value) {
                return false;
            }
        }
        return true;
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
