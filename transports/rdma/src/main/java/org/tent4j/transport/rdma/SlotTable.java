package org.tent4j.transport.rdma;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

import org.tent4j.spi.Slice;

/**
 * The work requests in flight on one completion queue. A slot holds a posted slice, the lane it went out on and its
 * deadline; the {@code wr_id} of the work request names the slot, so a completion finds its slice without a map or an
 * allocation. The table is preallocated and sized to the CQ, so the CQ can never overflow.
 *
 * <p>{@code wr_id = generation << 32 | index}. The generation advances every time the slot is freed, so a stale or
 * duplicated {@code wr_id} can never reach a later occupant of the slot.
 *
 * <p>Exactly-once: a slot's state moves ATTACHED → DETACHED by one compare-and-set, and only the caller that wins it
 * gets the slice (to complete, fail or time out). A detached slot stays occupied until its work request has left the
 * hardware (its completion, possibly a flush, arrived), and only then is it {@linkplain #free freed}.
 *
 * <p>Threads: any thread may {@link #acquire}; {@link #free} is called by the completion poller, or by the poster when
 * the post itself failed (no completion will come); {@link #take} by anyone.
 */
final class SlotTable {
    private static final long FREE = -1L;
    private static final long DETACHED = Long.MIN_VALUE;
    private static final long INDEX_MASK = 0xFFFF_FFFFL;

    private final int capacity;
    /** Per slot: FREE, the wr_id while attached, or wr_id | DETACHED once its slice was taken. */
    private final AtomicLongArray state;
    private final int[] generation;
    private final Slice[] slices;
    private final Lane[] lanes;
    private final long[] deadlines;
    /** Free list: a Treiber stack of slot indexes; head = tag << 32 | (index + 1), low word 0 = empty. */
    private final int[] next;
    private final AtomicLong head = new AtomicLong();
    private final AtomicInteger occupied = new AtomicInteger();

    SlotTable(int capacity) {
        if (capacity < 1 || capacity > (1 << 24)) {
            throw new IllegalArgumentException("slot table capacity " + capacity + " out of range 1..2^24");
        }
        this.capacity = capacity;
        state = new AtomicLongArray(capacity);
        generation = new int[capacity];
        slices = new Slice[capacity];
        lanes = new Lane[capacity];
        deadlines = new long[capacity];
        next = new int[capacity];
        for (int i = 0; i < capacity; i++) {
            state.set(i, FREE);
            next[i] = i + 2 <= capacity ? i + 2 : 0; // 1-based link to the following slot
        }
        head.set(1);
    }

    int capacity() {
        return capacity;
    }

    /** Slots occupied (attached or detached but not yet freed). */
    int occupied() {
        return occupied.get();
    }

    static int index(long wrId) {
        return (int) (wrId & INDEX_MASK);
    }

    /**
     * Claims a slot for {@code slice} posted on {@code lane}.
     *
     * @return the {@code wr_id} to post with, or {@code -1} when every slot is occupied
     */
    long acquire(Slice slice, Lane lane, long deadlineNanos) {
        int i = pop();
        if (i < 0) {
            return -1;
        }
        long wrId = ((long) generation[i] << 32) | i;
        slices[i] = slice;
        lanes[i] = lane;
        deadlines[i] = deadlineNanos;
        occupied.incrementAndGet();
        state.set(i, wrId); // publishes the plain writes above to whoever reads the state
        return wrId;
    }

    /** The lane of an occupied slot, or {@code null} if {@code wrId} names no occupied slot (stale). */
    Lane lane(long wrId) {
        int i = index(wrId);
        if (i < 0 || i >= capacity || (state.get(i) & ~DETACHED) != wrId) {
            return null;
        }
        return lanes[i];
    }

    /**
     * Detaches the slice of {@code wrId}: returns it to exactly one caller, {@code null} to every other (and for a
     * stale {@code wrId}). The slot stays occupied until {@link #free}.
     */
    Slice take(long wrId) {
        int i = index(wrId);
        if (wrId < 0 || i >= capacity || state.get(i) != wrId) {
            return null;
        }
        // read before detaching: once detached, the poller may free the slot and a poster refill it at any moment.
        // If the CAS below succeeds the state never left wrId, so this is still the slice posted under wrId.
        Slice s = slices[i];
        return state.compareAndSet(i, wrId, wrId | DETACHED) ? s : null;
    }

    /**
     * Releases the slot of {@code wrId} once its work request has left the hardware. Its slice must have been
     * {@linkplain #take taken}; a still-attached slice is detached and dropped, so call {@code take} first.
     *
     * @return whether the slot was occupied by {@code wrId} (false for a stale or repeated completion)
     */
    boolean free(long wrId) {
        int i = index(wrId);
        if (wrId < 0 || i >= capacity) {
            return false;
        }
        long s = state.get(i);
        if ((s & ~DETACHED) != wrId || !state.compareAndSet(i, s, FREE)) {
            return false;
        }
        slices[i] = null;
        lanes[i] = null;
        generation[i] = (generation[i] + 1) & 0x7FFF_FFFF;
        occupied.decrementAndGet();
        push(i);
        return true;
    }

    /**
     * Detaches every attached slice whose deadline has passed and hands it to {@code expired}; the slots stay occupied
     * until the completions of their work requests arrive. Allocation-free.
     */
    void expire(long nowNanos, ExpiredSlices expired) {
        for (int i = 0; i < capacity; i++) {
            long s = state.get(i);
            if (s >= 0 && deadlines[i] - nowNanos < 0) {
                Lane lane = lanes[i];
                Slice slice = take(s);
                if (slice != null) {
                    expired.expired(slice, lane);
                }
            }
        }
    }

    /** Detaches every attached slice posted on {@code lane} (the lane is closing) and hands it to {@code detached}. */
    void detachAll(Lane lane, ExpiredSlices detached) {
        for (int i = 0; i < capacity; i++) {
            long s = state.get(i);
            if (s >= 0 && lanes[i] == lane) {
                Slice slice = take(s);
                if (slice != null) {
                    detached.expired(slice, lane);
                }
            }
        }
    }

    /**
     * Frees every slot still occupied by {@code lane}, for a lane whose queue pair was destroyed (its completions will
     * never arrive). Attached slices are dropped, so {@link #detachAll} first.
     *
     * @return how many slots were freed
     */
    int reclaim(Lane lane) {
        int n = 0;
        for (int i = 0; i < capacity; i++) {
            long s = state.get(i);
            if (s != FREE && lanes[i] == lane && free(s & ~DETACHED)) {
                n++;
            }
        }
        return n;
    }

    @FunctionalInterface
    interface ExpiredSlices {
        void expired(Slice slice, Lane lane);
    }

    private int pop() {
        while (true) {
            long h = head.get();
            int top = (int) h;
            if (top == 0) {
                return -1;
            }
            int i = top - 1;
            long newHead = ((h >>> 32) + 1) << 32 | (next[i] & INDEX_MASK);
            if (head.compareAndSet(h, newHead)) {
                return i;
            }
        }
    }

    private void push(int i) {
        while (true) {
            long h = head.get();
            next[i] = (int) h;
            long newHead = ((h >>> 32) + 1) << 32 | (i + 1);
            if (head.compareAndSet(h, newHead)) {
                return;
            }
        }
    }
}
