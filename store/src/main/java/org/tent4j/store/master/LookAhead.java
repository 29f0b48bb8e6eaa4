package org.tent4j.store.master;

import java.util.List;

/**
 * Looks up the records of keys about to be used, one key after another without waiting on each, so the CPU overlaps
 * their cache misses; the commands or reads that follow find what they need in the cache. Under a get flood the master
 * otherwise spent a third of its time waiting on memory for one key's shard, table and node after another (other
 * processes' copies through the shared cache leave little of the object table there). It takes no shard lock: the
 * caller holds the ordering point, under which every change to a shard's map is applied.
 */
final class LookAhead {
    private final ObjectTable objects;
    private final int maxKeyBytes;
    /** What the last look-ahead read; nothing reads it (a use of what was read, so it is read). */
    private long seen;

    LookAhead(ObjectTable objects, int maxKeyBytes) {
        this.objects = objects;
        this.maxKeyBytes = maxKeyBytes;
    }

    /** The keys of a batch's commands (those that name one). */
    void commands(List<? extends Command<?>> commands) {
        long s = 0;
        for (Command<?> c : commands) {
            s += touch(switch (c) {
                case Command.GrantRead g -> g.key();
                case Command.PutStart p -> p.key();
                case Command.PutEnd p -> p.key();
                default -> null;
            });
        }
        seen = s;
    }

    /** The keys a commit names (a batch put's 32 keys are one command, and all of them missed one after another). */
    void commit(Command.Commit commit) {
        long s = 0;
        for (Command.CommitItem item : commit.items()) {
            s += touch(item.key());
        }
        seen = s;
    }

    /** Keys about to be read. */
    void keys(List<String> keys) {
        long s = 0;
        for (String key : keys) {
            s += touch(key);
        }
        seen = s;
    }

    private long touch(String key) {
        if (key == null || key.length() > maxKeyBytes) {
            return 0; // left to the command or read, which refuses it
        }
        ObjectRecord rec = objects.shard(key).map.get(key);
        // the record and its replica array, read in place (replicas() would build a copy for every key)
        return rec == null ? 0 : rec.size + rec.replica0 + (rec.more == null ? 0 : rec.more.length);
    }
}
