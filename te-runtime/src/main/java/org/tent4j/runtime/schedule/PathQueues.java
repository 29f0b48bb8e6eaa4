package org.tent4j.runtime.schedule;

import java.util.List;

/**
 * The three priority queues of one {@link PathGroup} (HIGH, MEDIUM, LOW) and what they hold. Its monitor is the
 * group's lock: every method but {@link #queued} is called with it held, and the group also guards its connection
 * state with it. Queues are served HIGH first, except that a MEDIUM or LOW slice that has waited longer than the
 * aging limit (twice that for LOW) goes first, so low priority is never starved.
 */
final class PathQueues {
    private final SliceRing[] rings = {new SliceRing(), new SliceRing(), new SliceRing()};
    /** Read without the lock: a submitter and the drain loop check it before taking the lock. */
    private volatile int queued;
    private long queuedBytes;

    /** How many slices are queued. */
    int queued() {
        return queued;
    }

    /** Bytes of the queued slices. */
    long queuedBytes() {
        return queuedBytes;
    }

    void add(RuntimeSlice s, boolean front) {
        SliceRing q = rings[s.priority()];
        if (front) {
            q.addFirst(s);
        } else {
            q.addLast(s);
        }
        queued++;
        queuedBytes += s.length();
    }

    /** The queue to serve next: an aged MEDIUM/LOW head first, else the highest non-empty priority. */
    SliceRing next(long now, long agingNanos) {
        RuntimeSlice low = rings[2].peek();
        if (low != null && now - low.queuedSince() > 2 * agingNanos) {
            return rings[2];
        }
        RuntimeSlice medium = rings[1].peek();
        if (medium != null && now - medium.queuedSince() > agingNanos) {
            return rings[1];
        }
        for (SliceRing q : rings) {
            if (q.size() > 0) {
                return q;
            }
        }
        return null;
    }

    /** {@code s}, the head of {@code q}, leaves the queues. */
    void poll(SliceRing q, RuntimeSlice s) {
        q.poll();
        queued--;
        queuedBytes -= s.length();
    }

    /** Takes out the slices whose deadline passed by {@code now}; null if none. */
    List<RuntimeSlice> takeExpired(long now) {
        List<RuntimeSlice> expired = null;
        for (SliceRing q : rings) {
            List<RuntimeSlice> out = q.takeExpired(now);
            if (out == null) {
                continue;
            }
            if (expired == null) {
                expired = out;
            } else {
                expired.addAll(out);
            }
            for (RuntimeSlice s : out) {
                queued--;
                queuedBytes -= s.length();
            }
        }
        return expired;
    }

    /** Takes every queued slice out. */
    RuntimeSlice[] takeAll() {
        RuntimeSlice[] out = new RuntimeSlice[queued];
        int i = 0;
        for (SliceRing q : rings) {
            for (RuntimeSlice s; (s = q.poll()) != null; ) {
                out[i++] = s;
            }
        }
        queued = 0;
        queuedBytes = 0;
        return out;
    }
}
