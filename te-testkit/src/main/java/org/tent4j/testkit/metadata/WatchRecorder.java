package org.tent4j.testkit.metadata;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

import org.tent4j.spi.MetadataStore;

/**
 * A {@link MetadataStore.MetadataListener} that records every event it is given, so a test can wait for a value and
 * then look at the whole sequence. Values are kept as given ({@code null} = deleted or expired).
 */
public final class WatchRecorder implements MetadataStore.MetadataListener {
    /**
     * One delivered change.
     *
     * @param key   the key that changed
     * @param value its new value, or {@code null} when deleted or expired
     */
    public record Event(String key, byte[] value) {
        /**
         * Whether the key was deleted or expired.
         *
         * @return {@code true} when the value is {@code null}
         */
        public boolean deleted() {
            return value == null;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Event e && key.equals(e.key) && Arrays.equals(value, e.value);
        }

        @Override
        public int hashCode() {
            return key.hashCode() * 31 + Arrays.hashCode(value);
        }

        @Override
        public String toString() {
            return key + "=" + (value == null ? "<deleted>" : describe(value));
        }
    }

    private final List<Event> events = new ArrayList<>();
    private final List<String> threadNames = new ArrayList<>();

    /** A recorder that has seen nothing yet. */
    public WatchRecorder() {
    }


    @Override
    public synchronized void changed(String key, byte[] value) {
        events.add(new Event(key, value == null ? null : value.clone()));
        threadNames.add(Thread.currentThread().getName());
        notifyAll();
    }

    /**
     * A copy of every event so far, in delivery order.
     *
     * @return an immutable copy
     */
    public synchronized List<Event> events() {
        return List.copyOf(events);
    }

    /**
     * Names of the threads each event was delivered on.
     *
     * @return one name per event, in delivery order
     */
    public synchronized List<String> threadNames() {
        return List.copyOf(threadNames);
    }

    /**
     * The events with consecutive repeats collapsed: delivery is at least once, so a store may repeat an event, but
     * the distinct states must come in the order they happened.
     *
     * @return the collapsed events
     */
    public synchronized List<Event> distinctInOrder() {
        List<Event> out = new ArrayList<>();
        for (Event e : events) {
            if (out.isEmpty() || !out.getLast().equals(e)) {
                out.add(e);
            }
        }
        return out;
    }

    /**
     * Waits until an event with exactly {@code value} ({@code null} = deleted) for {@code key} has arrived after the
     * first {@code fromIndex} events; returns its index. Fails with the events seen so far after {@code timeout}.
     *
     * @param key       the key
     * @param value     the value expected, or {@code null} for a deletion
     * @param fromIndex how many events to skip
     * @param timeout   how long to wait
     * @return the event's index
     * @throws InterruptedException when the waiting thread is interrupted
     */
    public synchronized int await(String key, byte[] value, int fromIndex, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            for (int i = fromIndex; i < events.size(); i++) {
                Event e = events.get(i);
                if (e.key().equals(key) && Arrays.equals(e.value(), value)) {
                    return i;
                }
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new AssertionError("no event " + key + "=" + (value == null ? "<deleted>" : describe(value))
                        + " within " + timeout.toMillis() + " ms (from index " + fromIndex + "); events: " + events);
            }
            wait(Math.max(1, left / 1_000_000));
        }
    }

    /**
     * {@link #await(String, byte[], int, Duration)} from the first event.
     *
     * @param key     the key
     * @param value   the value expected, or {@code null} for a deletion
     * @param timeout how long to wait
     * @return the event's index
     * @throws InterruptedException when the waiting thread is interrupted
     */
    public int await(String key, byte[] value, Duration timeout) throws InterruptedException {
        return await(key, value, 0, timeout);
    }

    /**
     * The number of events so far.
     *
     * @return the count
     */
    public synchronized int size() {
        return events.size();
    }

    static String describe(byte[] value) {
        if (value.length <= 64) {
            String s = new String(value, StandardCharsets.UTF_8);
            if (Arrays.equals(s.getBytes(StandardCharsets.UTF_8), value)) {
                return "\"" + s + "\"";
            }
        }
        return "<" + value.length + " bytes, hash " + Arrays.hashCode(value) + ">";
    }

    @Override
    public synchronized String toString() {
        return "WatchRecorder" + Objects.toString(events);
    }
}
