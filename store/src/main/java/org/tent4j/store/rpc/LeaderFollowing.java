package org.tent4j.store.rpc;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiConsumer;
import java.util.function.Supplier;

import org.tent4j.store.NotLeaderException;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * How {@link MasterClient} finds and follows the leader among the masters of a group: which calls are sent again
 * where, and when it gives up. The client owns the connection; this decides, and tells it where to move.
 */
final class LeaderFollowing {
    private final List<String> masters;
    private final Duration timeout;
    private final Supplier<String> current;
    /** (from, to): send later calls to {@code to}, unless another thread already moved away from {@code from}. */
    private final BiConsumer<String, String> moveTo;

    LeaderFollowing(List<String> masters, Duration timeout, Supplier<String> current, BiConsumer<String, String> moveTo) {
        this.masters = masters;
        this.timeout = timeout;
        this.current = current;
        this.moveTo = moveTo;
    }

    List<String> masters() {
        return masters;
    }

    /** {@code h1:p1,h2:p2,...}: each a host:port, none named twice; refused naming what is wrong. */
    static List<String> parse(String addresses) {
        List<String> list = new java.util.ArrayList<>();
        for (String a : addresses.split(",")) {
            String m = a.trim();
            int colon = m.lastIndexOf(':');
            boolean port;
            try {
                port = colon > 0 && Integer.parseInt(m.substring(colon + 1)) >= 0;
            } catch (NumberFormatException e) {
                port = false;
            }
            if (!port) {
                throw new IllegalArgumentException("master address '" + m + "' (of '" + addresses + "') is not host:port");
            }
            if (list.contains(m)) {
                throw new IllegalArgumentException("master address " + m + " is named twice in '" + addresses + "'");
            }
            list.add(m);
        }
        return List.copyOf(list);
    }

    /**
     * Runs {@code attempt} against the current master, following the leader: on {@code NOT_LEADER} (nothing was
     * applied) to the leader it names, or the next master when it names none or itself; on a master unreachable, a
     * broken stream or a timeout, to the next master in the list. A call that may have been applied where it broke
     * ({@code repeatable} false: a mutation without a request id) is not sent again: it fails, naming the master, and
     * only the next call goes to the next master. Reads and mutations carrying a request id are {@code repeatable}
     * (the state answers a repeated request rather than apply it twice). Gives up once the call's timeout has passed,
     * naming every master tried and its answer.
     */
    <T> T follow(String what, boolean repeatable, Supplier<T> attempt) {
        long deadline = System.nanoTime() + timeout.toNanos();
        Map<String, String> tried = new LinkedHashMap<>();
        int round = 0;
        while (true) {
            String at = current.get();
            String next;
            StoreException last;
            try {
                return attempt.get();
            } catch (NotLeaderException e) {
                last = e;
                tried.put(at, "not the leader" + (e.leader() == null ? "" : ", named " + e.leader()));
                next = e.leader() != null && !e.leader().equals(at) ? e.leader() : nextAfter(at);
            } catch (StoreException e) {
                boolean broken = e.error() == StoreError.RPC_FAIL || e.error() == StoreError.RPC_TIMEOUT;
                if (!broken || masters.size() == 1) {
                    throw e;
                }
                tried.put(at, e.error() == StoreError.RPC_TIMEOUT ? "no answer in time" : "unreachable or broke");
                next = nextAfter(at);
                if (!repeatable) {
                    moveTo.accept(at, next);
                    throw e;
                }
                last = e;
            }
            if (System.nanoTime() - deadline > 0) {
                // the next call starts elsewhere: a master that kept this one waiting (stopped, partitioned) would
                // otherwise hold every later call until it timed out too, and the client would never fail over
                moveTo.accept(at, next);
                throw new StoreException(StoreError.NOT_LEADER, what + ": no leader found among the masters "
                        + masters + " within " + timeout.toMillis() + " ms; last answers: " + tried, last);
            }
            if (next.equals(at) || (tried.containsKey(next) && round++ >= masters.size())) {
                // an election in progress: each master said it does not lead (or is not ready yet); wait a little
                LockSupport.parkNanos(Math.min(200_000_000L, 20_000_000L << Math.min(round, 4)));
            }
            moveTo.accept(at, next);
        }
    }

    private String nextAfter(String at) {
        int i = masters.indexOf(at);
        return masters.get((i + 1) % masters.size());
    }
}
