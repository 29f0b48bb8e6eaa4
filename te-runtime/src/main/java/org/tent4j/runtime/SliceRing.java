package org.tent4j.runtime;

/** A growable ring of slices (FIFO with push-front for retries). Not thread-safe: its {@link PathGroup} locks it. */
final class SliceRing {
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
