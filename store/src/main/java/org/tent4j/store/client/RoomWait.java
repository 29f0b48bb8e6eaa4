package org.tent4j.store.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.proto.PutStartRequest;
import org.tent4j.store.proto.PutStartResponse;

/**
 * A put the master refused for want of room that frees by itself (bytes leased by readers, puts in flight, offloads:
 * {@link StoreException#isTransient}) is asked again, with backoff from 1 ms doubling to 100 ms, until a bound (the
 * client's rpc timeout) has passed; then the last refusal is thrown (a batch: kept as that item's answer), saying
 * how long it waited. Any other failure is thrown (answered) at once. The wait is real time (it sleeps), not the
 * client's injectable clock: a virtual clock that never moves must not turn it into a spin.
 */
final class RoomWait {
    private static final Logger LOG = LoggerFactory.getLogger(RoomWait.class);
    private static final long FIRST_BACKOFF_NANOS = Duration.ofMillis(1).toNanos();
    private static final long MAX_BACKOFF_NANOS = Duration.ofMillis(100).toNanos();

    private final long boundNanos;

    RoomWait(Duration bound) {
        this.boundNanos = bound.toNanos();
    }

    <T> T call(String key, Supplier<T> attempt) {
        Schedule s = new Schedule();
        while (true) {
            try {
                return attempt.get();
            } catch (StoreException e) {
                if (!curable(e)) {
                    throw e;
                }
                if (s.tries == 1) {
                    LOG.debug("put of '{}' waits for room: {}", key, e.getMessage());
                }
                if (!s.pause()) {
                    throw s.gaveUp(key, e);
                }
            }
        }
    }

    /**
     * Starts a batch's puts with {@code start} (one batch call), asking again for only those refused for room that
     * frees by itself; the others' answers stand (space granted stays granted meanwhile). A put still refused at the
     * bound is answered its last refusal, saying how long it waited.
     */
    List<PutStartResponse> startAll(List<PutStartRequest> reqs, Function<List<PutStartRequest>, List<PutStartResponse>> start) {
        List<PutStartResponse> out = new ArrayList<>(start.apply(reqs));
        Schedule s = new Schedule();
        while (true) {
            List<Integer> again = new ArrayList<>();
            for (int i = 0; i < out.size(); i++) {
                if (out.get(i).getStatus().getCode() != 0 && curable(ClientErrors.error(out.get(i).getStatus()))) {
                    again.add(i);
                }
            }
            if (again.isEmpty()) {
                return out;
            }
            if (s.tries == 1) {
                LOG.debug("{} puts of a batch of {} wait for room, '{}' first", again.size(), reqs.size(),
                        reqs.get(again.getFirst()).getKey());
            }
            if (!s.pause()) {
                for (int i : again) {
                    StoreException e = s.gaveUp(reqs.get(i).getKey(), ClientErrors.error(out.get(i).getStatus()));
                    out.set(i, out.get(i).toBuilder().setStatus(out.get(i).getStatus().toBuilder().setMessage(e.getMessage())).build());
                }
                return out;
            }
            List<PutStartResponse> answers = start.apply(again.stream().map(reqs::get).toList());
            for (int j = 0; j < again.size(); j++) {
                out.set(again.get(j), answers.get(j));
            }
        }
    }

    private static boolean curable(StoreException e) {
        return e.error() == StoreError.NO_AVAILABLE_HANDLE && e.isTransient();
    }

    /** One wait's backoff, bounded by {@link #boundNanos}. */
    private final class Schedule {
        private final long started = System.nanoTime();
        private long backoff = FIRST_BACKOFF_NANOS;
        private int tries = 1;

        /** Sleeps the next backoff; false (no sleep) when it would pass the bound, or the thread was interrupted. */
        boolean pause() {
            if (System.nanoTime() - started + backoff > boundNanos) {
                return false;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(backoff);
            if (Thread.interrupted()) {
                Thread.currentThread().interrupt();
                return false;
            }
            backoff = Math.min(2 * backoff, MAX_BACKOFF_NANOS);
            tries++;
            return true;
        }

        StoreException gaveUp(String key, StoreException last) {
            return new StoreException(StoreError.NO_AVAILABLE_HANDLE, "put of '" + key + "' waited "
                    + (System.nanoTime() - started) / 1_000_000 + " ms (" + tries + " tries) for room; last answer: "
                    + last.getMessage(), last);
        }
    }
}
