package org.tent4j.transport.rdma;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.ToLongFunction;

/**
 * An immutable table of non-overlapping address ranges, searched by binary search without allocating: how the data
 * path finds the memory-region keys of a local buffer or the rkeys of a remote one. Replaced whole on change.
 */
final class RangeTable<T> {
    private static final RangeTable<?> EMPTY = new RangeTable<>(List.of(), x -> 0, x -> 0);

    private final long[] starts;
    private final long[] lengths;
    private final Object[] values;

    private RangeTable(List<T> items, ToLongFunction<T> start, ToLongFunction<T> length) {
        List<T> sorted = new ArrayList<>(items);
        sorted.sort(Comparator.comparingLong(start));
        starts = new long[sorted.size()];
        lengths = new long[sorted.size()];
        values = new Object[sorted.size()];
        for (int i = 0; i < sorted.size(); i++) {
            starts[i] = start.applyAsLong(sorted.get(i));
            lengths[i] = length.applyAsLong(sorted.get(i));
            values[i] = sorted.get(i);
        }
    }

    @SuppressWarnings("unchecked")
    static <T> RangeTable<T> empty() {
        return (RangeTable<T>) EMPTY;
    }

    static <T> RangeTable<T> of(List<T> items, ToLongFunction<T> start, ToLongFunction<T> length) {
        return new RangeTable<>(items, start, length);
    }

    /** The item whose range holds {@code [address, address + length)}, or {@code null}. */
    @SuppressWarnings("unchecked")
    T find(long address, long length) {
        int lo = 0;
        int hi = starts.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (starts[mid] <= address) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        int i = hi; // last range starting at or before address
        if (i < 0 || length < 0) {
            return null;
        }
        long offset = address - starts[i];
        return offset >= 0 && offset <= lengths[i] - length ? (T) values[i] : null;
    }

    int size() {
        return starts.length;
    }

    @SuppressWarnings("unchecked")
    List<T> items() {
        List<T> out = new ArrayList<>(values.length);
        for (Object v : values) {
            out.add((T) v);
        }
        return out;
    }
}
