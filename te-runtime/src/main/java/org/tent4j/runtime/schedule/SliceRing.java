package org.tent4j.runtime.schedule;

/**
 * A growable ring of slices (FIFO with push-front for retries). Not thread-safe: its {@link PathGroup} locks its
 * {@link PathQueues}.
 */
public final class SliceRing {
    private RuntimeSlice[] items = new RuntimeSlice[64];
    private int head;
    private int size;

    int size() {
        return size;
    }

    RuntimeSlice peek() {
        return size == 0 ? null : items[head];
    }

    RuntimeSlice poll() {
        if (size == 0) {
            return null;
        }
        RuntimeSlice s = items[head];
        items[head] = null;
        head = (head + 1) & (items.length - 1);
        size--;
        return s;
    }

    void addLast(RuntimeSlice s) {
        grow();
        items[(head + size) & (items.length - 1)] = s;
        size++;
    }

    void addFirst(RuntimeSlice s) {
        grow();
        head = (head - 1) & (items.length - 1);
        items[head] = s;
        size++;
    }

    /**
     * Takes out the slices whose deadline passed by {@code now}, keeping the others in order; returns them, or
     * {@code null} if there are none (the common case allocates nothing).
     */
    java.util.List<RuntimeSlice> takeExpired(long now) {
        java.util.List<RuntimeSlice> out = null;
        int mask = items.length - 1;
        int kept = 0;
        for (int i = 0; i < size; i++) {
            RuntimeSlice s = items[(head + i) & mask];
            if (s.deadlineNanos() - now <= 0) {
                if (out == null) {
                    out = new java.util.ArrayList<>();
                }
                out.add(s);
            } else {
                items[(head + kept++) & mask] = s;
            }
        }
        for (int i = kept; i < size; i++) {
            items[(head + i) & mask] = null;
        }
        size = kept;
        return out;
    }

    private void grow() {
        if (size < items.length) {
            return;
        }
        RuntimeSlice[] next = new RuntimeSlice[items.length * 2];
        for (int i = 0; i < size; i++) {
            next[i] = items[(head + i) & (items.length - 1)];
        }
        items = next;
        head = 0;
    }
}
