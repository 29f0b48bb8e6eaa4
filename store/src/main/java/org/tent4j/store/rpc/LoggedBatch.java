package org.tent4j.store.rpc;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.Function;

import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.proto.Status;

/**
 * A batch call's items as commands first and answers after, so a master on a durable log commits a batch as one
 * entry per {@link #ENTRY_ITEMS} items (one fsync, one replication round) instead of one per item.
 */
final class LoggedBatch {
    /** Most commands in one entry: with keys of up to 4 KiB an entry stays well inside the log's 16 MiB write buffer. */
    static final int ENTRY_ITEMS = 1024;

    private LoggedBatch() {
    }

    /**
     * One item's command and how its result is answered. As a plain function (the in-memory master) it applies the
     * command on the calling thread, as before.
     */
    record Step<I, R, T>(StoreMaster master, Function<I, Command<R>> command, BiFunction<I, R, T> answer)
            implements Function<I, T> {
        @Override
        public T apply(I item) {
            return answer.apply(item, master.apply(command.apply(item)));
        }
    }

    /**
     * Serves the items through the master's log: an item refused before it is a command, or by its command, gets its
     * own error; an entry the log could not commit fails each of its items with that reason.
     */
    @SuppressWarnings("unchecked")
    static <I, R, T> List<T> serve(StoreMaster master, String method, List<I> items, Step<I, R, T> step,
                                   Function<Status, T> onError, RpcStats stats) {
        long start = System.nanoTime();
        List<T> answers = new ArrayList<>(items.size());
        boolean failed = false;
        for (int from = 0; from < items.size(); from += ENTRY_ITEMS) {
            List<I> chunk = items.subList(from, Math.min(items.size(), from + ENTRY_ITEMS));
            Object[] outcome = new Object[chunk.size()];
            List<Command<?>> commands = new ArrayList<>(chunk.size());
            List<Integer> slots = new ArrayList<>(chunk.size());
            for (int i = 0; i < chunk.size(); i++) {
                try {
                    commands.add(step.command().apply(chunk.get(i)));
                    slots.add(i);
                } catch (RuntimeException refused) {
                    outcome[i] = refused;
                }
            }
            try {
                List<Object> results = commands.isEmpty() ? List.of() : master.applyAll(commands);
                for (int k = 0; k < slots.size(); k++) {
                    outcome[slots.get(k)] = results.get(k);
                }
            } catch (RuntimeException notCommitted) {
                slots.forEach(i -> outcome[i] = notCommitted);
            }
            for (int i = 0; i < chunk.size(); i++) {
                Object o = outcome[i];
                try {
                    if (o instanceof RuntimeException e) {
                        throw e;
                    }
                    answers.add(step.answer().apply(chunk.get(i), (R) o));
                } catch (StoreException e) {
                    failed = true;
                    answers.add(onError.apply(Wire.status(e)));
                } catch (RuntimeException e) {
                    failed = true;
                    answers.add(onError.apply(Status.newBuilder().setCode(StoreError.INTERNAL_ERROR.code())
                            .setMessage(StoreError.INTERNAL_ERROR + ": " + e).build()));
                }
            }
        }
        stats.record(method, System.nanoTime() - start, failed);
        return answers;
    }
}
