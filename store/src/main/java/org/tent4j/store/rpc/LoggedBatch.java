package org.tent4j.store.rpc;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.BiFunction;
import java.util.function.Function;

import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.proto.Status;

/**
 * A batch call's items as commands first and answers after, so a master on a durable log commits a batch as one
 * entry per {@link #ENTRY_ITEMS} items (one fsync, one replication round) instead of one per item, and a master in
 * memory applies them in one hold of its ordering point, their keys looked up together.
 */
final class LoggedBatch {
    /** Most commands in one entry: with keys of up to 4 KiB an entry stays well inside the log's 16 MiB write buffer. */
    static final int ENTRY_ITEMS = 1024;

    private LoggedBatch() {
    }

    /**
     * One item's command and how its result is answered; {@code held}, when not null, answers an item without an entry
     * when it can (a result that changes nothing, e.g. a read under a lease already held), else null. As a plain
     * function it applies one item's command alone; batches go through {@link #serve}.
     */
    record Step<I, R, T>(StoreMaster master, Function<I, Command<R>> command, BiFunction<I, R, T> answer,
                         Function<I, R> held) implements Function<I, T> {
        Step(StoreMaster master, Function<I, Command<R>> command, BiFunction<I, R, T> answer) {
            this(master, command, answer, null);
        }

        @Override
        public T apply(I item) {
            return answer.apply(item, master.apply(command.apply(item)));
        }
    }

    /**
     * Serves the items through the master's log, waiting on this thread for each entry: an item refused before it is
     * a command, or by its command, gets its own error; an entry the log could not commit fails each of its items
     * with that reason.
     */
    static <I, R, T> List<T> serve(StoreMaster master, String method, List<I> items, Step<I, R, T> step,
                                   Function<Status, T> onError, RpcStats stats) {
        long start = System.nanoTime();
        List<T> answers = new ArrayList<>(items.size());
        boolean failed = false;
        for (int from = 0; from < items.size(); from += ENTRY_ITEMS) {
            Entry<I, R, T> entry = new Entry<>(items.subList(from, Math.min(items.size(), from + ENTRY_ITEMS)), step);
            try {
                entry.committed(entry.commands.isEmpty() ? List.of() : master.applyAll(entry.commands), null);
            } catch (RuntimeException notCommitted) {
                entry.committed(null, notCommitted);
            }
            failed |= entry.answer(onError, answers);
        }
        stats.record(method, System.nanoTime() - start, failed);
        return answers;
    }

    /**
     * {@link #serve} of at most {@link #ENTRY_ITEMS} items (one entry) without waiting: the answers complete on the
     * log's applier thread once the entry is applied, so the thread that proposed it goes on serving other calls.
     */
    static <I, R, T> CompletableFuture<List<T>> serveAsync(StoreMaster master, String method, List<I> items,
                                                           Step<I, R, T> step, Function<Status, T> onError,
                                                           RpcStats stats) {
        if (items.size() > ENTRY_ITEMS) {
            throw new IllegalArgumentException(method + ": " + items.size() + " items are more than one entry holds");
        }
        long start = System.nanoTime();
        Entry<I, R, T> entry = new Entry<>(items, step);
        CompletableFuture<List<Object>> results;
        try {
            results = entry.commands.isEmpty() ? CompletableFuture.completedFuture(List.of()) : master.submitAll(entry.commands);
        } catch (RuntimeException notProposed) {
            results = CompletableFuture.failedFuture(notProposed);
        }
        return results.handle((r, err) -> {
            entry.committed(r, err == null ? null
                    : err instanceof CompletionException && err.getCause() != null ? err.getCause() : err);
            List<T> answers = new ArrayList<>(items.size());
            stats.record(method, System.nanoTime() - start, entry.answer(onError, answers));
            return answers;
        });
    }

    /** One entry's items: their commands, which item each result belongs to, and each item's outcome. */
    private static final class Entry<I, R, T> {
        final List<I> items;
        final Step<I, R, T> step;
        final Object[] outcome;
        final List<Command<?>> commands;
        final int[] slots;

        Entry(List<I> items, Step<I, R, T> step) {
            this.items = items;
            this.step = step;
            this.outcome = new Object[items.size()];
            this.commands = new ArrayList<>(items.size());
            this.slots = new int[items.size()];
            for (int i = 0; i < items.size(); i++) {
                try {
                    R held = step.held() == null ? null : step.held().apply(items.get(i));
                    if (held != null) {
                        outcome[i] = held;
                        continue;
                    }
                    commands.add(step.command().apply(items.get(i)));
                    slots[commands.size() - 1] = i;
                } catch (RuntimeException refused) {
                    outcome[i] = refused;
                }
            }
        }

        /** The entry's results, one per command; or why it was not committed, which every command's item gets. */
        void committed(List<Object> results, Throwable notCommitted) {
            for (int k = 0; k < commands.size(); k++) {
                outcome[slots[k]] = notCommitted != null ? notCommitted : results.get(k);
            }
        }

        /** Adds each item's answer (or error) to {@code answers}; whether any item failed. */
        @SuppressWarnings("unchecked")
        boolean answer(Function<Status, T> onError, List<T> answers) {
            boolean failed = false;
            for (int i = 0; i < items.size(); i++) {
                Object o = outcome[i];
                try {
                    if (o instanceof RuntimeException e) {
                        throw e;
                    }
                    if (o instanceof Throwable t) {
                        throw new StoreException(StoreError.INTERNAL_ERROR, "the master's log failed the call: " + t, t);
                    }
                    answers.add(step.answer().apply(items.get(i), (R) o));
                } catch (StoreException e) {
                    failed = true;
                    answers.add(onError.apply(Wire.status(e)));
                } catch (RuntimeException e) {
                    failed = true;
                    answers.add(onError.apply(Wire.internalError(e)));
                }
            }
            return failed;
        }
    }
}
