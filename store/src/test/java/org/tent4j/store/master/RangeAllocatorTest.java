package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;

import org.junit.jupiter.api.Test;

class RangeAllocatorTest {

    @Test
    void randomAllocateAndFreeNeverOverlapAndCoalesceBackToOneRange() {
        RangeAllocator a = new RangeAllocator(1 << 20);
        Random rnd = new Random(7);
        TreeMap<Long, Long> live = new TreeMap<>();
        for (int i = 0; i < 20_000; i++) {
            if (live.isEmpty() || rnd.nextInt(3) > 0) {
                long len = 1 + rnd.nextInt(8192);
                long off = a.allocate(len);
                if (off >= 0) {
                    var below = live.floorEntry(off);
                    assertTrue(below == null || below.getKey() + RangeAllocator.aligned(below.getValue()) <= off, "overlap below " + off);
                    var above = live.ceilingEntry(off);
                    assertTrue(above == null || off + RangeAllocator.aligned(len) <= above.getKey(), "overlap above " + off);
                    assertEquals(0, off % RangeAllocator.ALIGNMENT);
                    live.put(off, len);
                }
            } else {
                List<Long> keys = new ArrayList<>(live.keySet());
                long off = keys.get(rnd.nextInt(keys.size()));
                a.free(off, live.remove(off));
            }
        }
        live.forEach(a::free);
        assertEquals(0, a.used());
        assertEquals(1 << 20, a.largestFree());
    }

    @Test
    void doubleFreeIsRefused() {
        RangeAllocator a = new RangeAllocator(4096);
        long off = a.allocate(100);
        a.free(off, 100);
        assertThrows(IllegalStateException.class, () -> a.free(off, 100));
    }

    @Test
    void fullAllocatorSaysSo() {
        RangeAllocator a = new RangeAllocator(4096);
        assertEquals(0, a.allocate(4096));
        assertEquals(-1, a.allocate(1));
    }
}
