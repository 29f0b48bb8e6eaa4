package org.tent4j.transport.nvmeof;

import org.tent4j.spi.Slice;

/**
 * A bounded queue of (slice, file) pairs from posting threads to one I/O thread. Two parallel arrays instead of a
 * queue of pairs, so posting allocates nothing.
 */
final class Inbox {
    private final Slice[] slices;
    private final OpenFile[] files;
    private int head;
    private volatile int count;

    Inbox(int capacity) {
        this.slices = new Slice[capacity];
        this.files = new OpenFile[capacity];
    }

    /** {@code false} when full. */
    synchronized boolean offer(Slice slice, OpenFile file) {
        int n = count;
        if (n == slices.length) {
            return false;
        }
        int at = (head + n) % slices.length;
        slices[at] = slice;
        files[at] = file;
        count = n + 1;
        notifyAll();
        return true;
    }

    boolean isEmpty() {
        return count == 0;
    }

    /** Hands up to {@code max} entries to {@code sink}, oldest first; returns how many. */
    synchronized int drain(Sink sink, int max) {
        int n = Math.min(max, count);
        for (int i = 0; i < n; i++) {
            Slice s = slices[head];
            OpenFile f = files[head];
            slices[head] = null;
            files[head] = null;
            head = (head + 1) % slices.length;
            count--;
            sink.accept(s, f);
        }
        return n;
    }

    /** Waits until an entry is there or {@code stop} says so (checked on every {@link #wakeAll}). */
    synchronized void await(java.util.function.BooleanSupplier stop) throws InterruptedException {
        while (count == 0 && !stop.getAsBoolean()) {
            wait();
        }
    }

    synchronized void wakeAll() {
        notifyAll();
    }

    @FunctionalInterface
    interface Sink {
        void accept(Slice slice, OpenFile file);
    }
}
