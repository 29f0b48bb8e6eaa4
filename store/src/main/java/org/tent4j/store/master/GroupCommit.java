package org.tent4j.store.master;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Merges concurrent calls' commands into fewer log entries. While as many entries of this master as its limit allows
 * are proposed and not yet applied, a call's commands wait here; when one of them is applied, every call that waited is
 * proposed as one entry (up to {@link #ENTRY_COMMANDS} commands, more entries for the rest), each call keeping its own
 * commands' results. A Ratis entry costs the masters far more than the commands in it (the leader's log write, checksum
 * and fsync, the replication round, each master's applier hand-off, the protobuf messages around it): on two cores a
 * durable master put 4 KiB values in batches of 128 as fast as the in-memory master and in batches of 32 at 0.6x of it
 * (docs/perf-notes/store.md, "Session 25"). Order is kept: calls are proposed in the order they came, and an entry's
 * commands are applied in that order, so a stream's calls are still applied as they came.
 */
final class GroupCommit {
    /**
     * Entries a master alone proposes before calls wait to be merged: with one, the log would sit idle while the
     * applier works and the applier while the log syncs; with four, one is written while others are applied, and a
     * busy master still merges (16 client threads' 4 KiB batch puts: 2.3 calls an entry on one master, 6.2 with one;
     * the rates of one and four in flight stay inside each other's spread).
     */
    static final int IN_FLIGHT_ALONE = 4;
    /**
     * Entries the leader of a group proposes before calls wait: one. Every master of the group writes, syncs and
     * applies every entry, on cores they share with nodes and clients, so fewer entries beat the overlap: three
     * masters put 4 KiB batches 1.2-1.9x and got them 1.5-1.8x as fast with one in flight as with four
     * (docs/perf-notes/store.md, "Session 27").
     */
    static final int IN_FLIGHT_GROUP = 1;
    /**
     * The most commands one entry takes from several calls (one call's commands go out whole, however many), so a
     * merged entry stays within the log's write buffer as a batch call's entry does.
     */
    static final int ENTRY_COMMANDS = 1024;

    /** Proposes one entry of {@code commands} at {@code now}: completes with their results once applied. */
    interface Proposer {
        CompletableFuture<List<Object>> propose(long now, List<Command<?>> commands);
    }

    private record Call(long now, List<Command<?>> commands, CompletableFuture<List<Object>> results, long since) {
    }

    private final Proposer proposer;
    private final LogMetrics metrics;
    private final int inFlightLimit;
    private final ReentrantLock lock = new ReentrantLock();
    /** Calls waiting for an entry; guarded by {@link #lock}. */
    private final ArrayDeque<Call> waiting = new ArrayDeque<>();
    /** Entries proposed and not yet applied or failed; guarded by {@link #lock}. */
    private int inFlight;

    /**
     * Merges past {@code inFlightLimit} entries proposed and not yet applied ({@link #IN_FLIGHT_ALONE},
     * {@link #IN_FLIGHT_GROUP}).
     */
    GroupCommit(Proposer proposer, LogMetrics metrics, int inFlightLimit) {
        this.proposer = proposer;
        this.metrics = metrics;
        this.inFlightLimit = inFlightLimit;
    }

    /**
     * Proposes {@code commands} at once if fewer than the limit's entries are in flight, else with the calls
     * that wait beside it once one is applied; completes with their results, or as the entry failed.
     */
    CompletableFuture<List<Object>> submit(long now, List<Command<?>> commands) {
        Call call = new Call(now, commands, new CompletableFuture<>(), System.nanoTime());
        lock.lock();
        try {
            waiting.add(call);
            if (inFlight < inFlightLimit) {
                proposeWaiting();
            }
        } finally {
            lock.unlock();
        }
        return call.results();
    }

    /** Proposes the calls waiting, as many as fit one entry; holds the lock, so entries reach the log in call order. */
    private void proposeWaiting() {
        List<Call> calls = new ArrayList<>();
        int n = 0;
        long now = Long.MIN_VALUE;
        while (!waiting.isEmpty() && (calls.isEmpty() || n + waiting.peek().commands().size() <= ENTRY_COMMANDS)) {
            Call c = waiting.poll();
            calls.add(c);
            n += c.commands().size();
            // the latest reading: a lease or deadline the entry starts then ends no sooner than its caller expects
            now = Math.max(now, c.now());
        }
        List<Command<?>> commands;
        if (calls.size() == 1) {
            commands = calls.getFirst().commands();
        } else {
            commands = new ArrayList<>(n);
            for (Call c : calls) {
                commands.addAll(c.commands());
            }
        }
        inFlight++;
        CompletableFuture<List<Object>> entry;
        try {
            entry = proposer.propose(now, commands);
        } catch (RuntimeException e) {
            // a command that cannot be proposed (encoded) fails the calls it came with, and frees its place
            entry = CompletableFuture.failedFuture(e);
        }
        entry.whenComplete((results, err) -> done(calls, results, err));
    }

    private void done(List<Call> calls, List<Object> results, Throwable err) {
        lock.lock();
        try {
            inFlight--;
            if (!waiting.isEmpty()) {
                // before the answers: the log worker starts on the next entry while this thread answers
                proposeWaiting();
            }
        } finally {
            lock.unlock();
        }
        int from = 0;
        long end = System.nanoTime();
        for (Call c : calls) {
            int to = from + c.commands().size();
            if (err != null) {
                c.results().completeExceptionally(err);
            } else {
                // before the answer: whoever sees the call answered sees it counted
                metrics.committed(end - c.since());
                c.results().complete(calls.size() == 1 ? results : results.subList(from, to));
            }
            from = to;
        }
    }
}
