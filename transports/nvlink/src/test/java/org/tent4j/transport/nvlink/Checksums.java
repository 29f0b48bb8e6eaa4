package org.tent4j.transport.nvlink;

import java.lang.foreign.MemorySegment;
import java.util.Random;
import java.util.zip.CRC32C;

final class Checksums {
    private Checksums() {
    }

    static long crc(MemorySegment s) {
        CRC32C c = new CRC32C();
        c.update(s.asByteBuffer());
        return c.getValue();
    }

    static void fill(MemorySegment s, long seed) {
        Random r = new Random(seed);
        byte[] chunk = new byte[8192];
        for (long off = 0; off < s.byteSize(); off += chunk.length) {
            r.nextBytes(chunk);
            int n = (int) Math.min(chunk.length, s.byteSize() - off);
            MemorySegment.copy(MemorySegment.ofArray(chunk), 0, s, off, n);
        }
    }
}
