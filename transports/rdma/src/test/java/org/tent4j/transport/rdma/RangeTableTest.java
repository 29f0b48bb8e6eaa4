package org.tent4j.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.List;

import org.junit.jupiter.api.Test;

class RangeTableTest {
    record R(long start, long length) {
    }

    private final R a = new R(0x1000, 0x1000);
    private final R b = new R(0x4000, 0x100);
    private final R c = new R(0x2000, 0x800); // adjacent to a
    private final RangeTable<R> t = RangeTable.of(List.of(b, a, c), R::start, R::length);

    @Test
    void findsTheRangeHoldingTheWholeRequest() {
        assertEquals(a, t.find(0x1000, 0x1000));
        assertEquals(a, t.find(0x1fff, 1));
        assertEquals(c, t.find(0x2000, 1));
        assertEquals(c, t.find(0x2400, 0x400));
        assertEquals(b, t.find(0x40ff, 1));
    }

    @Test
    void missesOutsideAndAcrossRanges() {
        assertNull(t.find(0xfff, 1));
        assertNull(t.find(0x1800, 0x1000), "runs from a into c: not one buffer");
        assertNull(t.find(0x2800, 1));
        assertNull(t.find(0x4100, 1));
        assertNull(t.find(0x1000, -1));
        assertNull(RangeTable.<R>empty().find(0x1000, 1));
    }
}
