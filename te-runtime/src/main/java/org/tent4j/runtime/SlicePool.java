package org.tent4j.runtime;

/**
 * Recycles {@link RuntimeSlice}s so the data path allocates nothing per slice in steady state. A plain array stack
 * under a lock: uncontended locking costs less than a slice's transfer, and unlike a lock-free stack of reused nodes
 * it has no ABA hazard. Grows when empty; keeps at most {@code max} idle slices.
 */
final class SlicePool {
    private final RuntimeSlice[] stack;
    private int size;

    SlicePool(int max) {
        stack = new RuntimeSlice[max];
    }

    RuntimeSlice take() {
        synchronized (this) {
            if (size > 0) {
                RuntimeSlice s = stack[--size];
                stack[size] = null;
                return s;
            }
        }
        return new RuntimeSlice(this);
    }

    void give(RuntimeSlice s) {
        synchronized (this) {
            if (size < stack.length) {
                stack[size++] = s;
            }
        }
    }
}
