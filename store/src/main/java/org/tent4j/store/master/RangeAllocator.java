package org.tent4j.store.master;

import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Hands out non-overlapping ranges of {@code [0, capacity)}, best fit, coalescing on free. Lengths are rounded up to
 * {@link #ALIGNMENT} so every replica starts on a cache line. Callers remember what they allocated (the object record
 * does), so the allocator keeps only free ranges: memory grows with fragmentation, not with the number of objects.
 * Thread-safe.
 */
public final class RangeAllocator {
    public static final long ALIGNMENT = 64;

    private final long capacity;
    /** offset -> length of each free range. */
    private final TreeMap<Long, Long> freeByOffset = new TreeMap<>();
    /** free ranges ordered by (length, offset), for best fit: (length << 0, offset) packed as a pair. */
    private final TreeSet<long[]> freeBySize = new TreeSet<>((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(a[1], b[1]));
    private long used;

    public RangeAllocator(long capacity) {
        if (capacity < ALIGNMENT) {
            throw new IllegalArgumentException("capacity must be at least " + ALIGNMENT + " bytes: " + capacity);
        }
        this.capacity = capacity - capacity % ALIGNMENT;
        addFree(0, this.capacity);
    }

    public static long aligned(long length) {
        return (length + ALIGNMENT - 1) & -ALIGNMENT;
    }

    /** Offset of a new range of {@code length} bytes, or -1 if no free range is large enough. */
    public synchronized long allocate(long length) {
        long need = aligned(length);
        long[] fit = freeBySize.ceiling(new long[]{need, -1});
        if (fit == null) {
            return -1;
        }
        removeFree(fit[1], fit[0]);
        if (fit[0] > need) {
            addFree(fit[1] + need, fit[0] - need);
        }
        used += need;
        return fit[1];
    }

    /** Returns a range given out by {@link #allocate} (same length as asked for). */
    public synchronized void free(long offset, long length) {
        long len = aligned(length);
        if (offset < 0 || offset + len > capacity) {
            throw new IllegalArgumentException("range [" + offset + ", " + (offset + len) + ") outside [0, " + capacity + ")");
        }
        long start = offset;
        long end = offset + len;
        Map.Entry<Long, Long> before = freeByOffset.floorEntry(offset);
        if (before != null && before.getKey() + before.getValue() > offset) {
            throw new IllegalStateException("double free of [" + offset + ", " + end + ")");
        }
        Map.Entry<Long, Long> after = freeByOffset.ceilingEntry(offset);
        if (after != null && after.getKey() < end) {
            throw new IllegalStateException("double free of [" + offset + ", " + end + ")");
        }
        if (before != null && before.getKey() + before.getValue() == offset) {
            removeFree(before.getKey(), before.getValue());
            start = before.getKey();
        }
        if (after != null && after.getKey() == end) {
            removeFree(after.getKey(), after.getValue());
            end = after.getKey() + after.getValue();
        }
        addFree(start, end - start);
        used -= len;
    }

    /**
     * Takes {@code [offset, offset + length)}, aligned and free, out of use: a range nothing may be placed in for a
     * while (its owner parks it).
     */
    synchronized void take(long offset, long length) {
        Map.Entry<Long, Long> f = freeByOffset.floorEntry(offset);
        if (((offset | length) & (ALIGNMENT - 1)) != 0 || length <= 0 || f == null
                || f.getKey() + f.getValue() < offset + length) {
            throw new IllegalStateException("range [" + offset + ", " + (offset + length) + ") is not an aligned free range");
        }
        long end = f.getKey() + f.getValue();
        removeFree(f.getKey(), f.getValue());
        if (f.getKey() < offset) {
            addFree(f.getKey(), offset - f.getKey());
        }
        if (end > offset + length) {
            addFree(offset + length, end - offset - length);
        }
        used += length;
    }

    public long capacity() {
        return capacity;
    }

    public synchronized long used() {
        return used;
    }

    public synchronized long largestFree() {
        return freeBySize.isEmpty() ? 0 : freeBySize.last()[0];
    }

    /** Makes {@code free} (offset to length, as {@link #freeRanges} gave) the free ranges; the rest is used. */
    synchronized void restore(Map<Long, Long> free) {
        freeByOffset.clear();
        freeBySize.clear();
        used = capacity;
        for (Map.Entry<Long, Long> e : free.entrySet()) {
            addFree(e.getKey(), e.getValue());
            used -= e.getValue();
        }
    }

    /** The free ranges, offset to length, in address order (a copy). */
    public synchronized TreeMap<Long, Long> freeRanges() {
        return new TreeMap<>(freeByOffset);
    }

    private void addFree(long offset, long length) {
        freeByOffset.put(offset, length);
        freeBySize.add(new long[]{length, offset});
    }

    private void removeFree(long offset, long length) {
        freeByOffset.remove(offset);
        freeBySize.remove(new long[]{length, offset});
    }
}
