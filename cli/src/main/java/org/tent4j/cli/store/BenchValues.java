package org.tent4j.cli.store;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

/**
 * The values' bytes: one body for every value of a run (the same in every process, so a reader can check what
 * another wrote), with an 8-byte stamp of the key and the block index at the start of every {@link #BLOCK} bytes.
 * A put rewrites only the stamps of its buffer (size / 512 stores), not the whole value, as redis-benchmark sends
 * one buffer; a check compares the whole value byte for byte against the body with the key's stamps.
 */
final class BenchValues {
    static final int BLOCK = 512;

    private BenchValues() {
    }

    static MemorySegment body(long size) {
        SplittableRandom r = new SplittableRandom(0x5EED_B0D7L);
        MemorySegment b = MemorySegment.ofArray(new long[(int) ((size + 7) / 8)]).asSlice(0, size);
        for (long k = 0; k + 8 <= size; k += 8) {
            b.set(ValueLayout.JAVA_LONG_UNALIGNED, k, r.nextLong());
        }
        for (long k = size & ~7L; k < size; k++) {
            b.set(ValueLayout.JAVA_BYTE, k, (byte) r.nextInt());
        }
        return b;
    }

    /** Writes the stamps of value {@code i} of {@code prefix} over a buffer that holds the body. */
    static void stamp(MemorySegment s, String prefix, long i) {
        long seed = seed(prefix, i);
        long n = s.byteSize();
        for (long at = 0, block = 0; at + 8 <= n; at += BLOCK, block++) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, at, stamp(seed, block));
        }
    }

    static long seed(String prefix, long i) {
        long h = (prefix.hashCode() * 0x9E3779B97F4A7C15L + i) * 0xBF58476D1CE4E5B9L;
        return h ^ (h >>> 31);
    }

    static long stamp(long seed, long block) {
        long h = (seed + block) * 0x94D049BB133111EBL;
        return h ^ (h >>> 29);
    }
}
