package org.tent4j.store.master;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Read leases renewed ahead, together, on the leader of a group of masters. A read under a held lease
 * ({@link MasterState#heldRead}) takes no log entry, but one whose lease ran under a quarter of the TTL waits for a
 * {@link Command.GrantRead} entry of its own. So a held read whose lease is under {@link #OFFER_EIGHTHS} eighths of
 * the TTL offers its key here, and the leader's housekeeping renews every key offered at most every
 * {@link #PERIOD_PARTS}th of a TTL, in {@link Command.RenewReads} commands of at most {@link #COMMAND_KEYS} keys: a
 * key read on and on is renewed before its lease reaches the quarter, and a flood of reads over many keys costs a few
 * entries a second instead of one for every call that found a short lease (a group's followers pay for every entry).
 * Each command holds the ordering point for a few milliseconds only.
 *
 * <p>What waits here is the leader's own, not state: a new leader starts empty and its reads offer again. The
 * renewal itself is a command, applied by every master in log order ({@link #renew}).
 */
final class ReadRenewals {
    /** Offers come from reads with under 3/8 of a TTL left: renewed within a period, a lease stays over 1/4. */
    static final int OFFER_EIGHTHS = 3;
    /** Rounds run at most every TTL / this (housekeeping ticks decide when exactly). */
    static final int PERIOD_PARTS = 10;
    /** Keys per command: applying one holds the ordering point about a microsecond a key. */
    static final int COMMAND_KEYS = 8_192;
    /**
     * The most key characters waiting at once (a few entries of a few megabytes); keys offered past it are not kept
     * and take a {@link Command.GrantRead} when their lease is short, as without renewals.
     */
    static final long MAX_CHARS = 4L << 20;

    private final Set<String> offered = ConcurrentHashMap.newKeySet();
    private final AtomicLong chars = new AtomicLong();
    private final long periodNanos;
    /** A held read with less than this left offers its key ({@link #OFFER_EIGHTHS} eighths of the TTL). */
    private final long offerUnderNanos;
    /** When the last round ran (housekeeping thread only); MIN_VALUE: never. */
    private long lastRound = Long.MIN_VALUE;

    ReadRenewals(MasterConfig config) {
        this.periodNanos = config.leaseTtl().toNanos() / PERIOD_PARTS;
        this.offerUnderNanos = config.leaseTtl().toNanos() / 8 * OFFER_EIGHTHS;
    }

    /** A held read answered {@code key} with {@code leftNanos} of its lease left: offered when that is short. */
    void read(String key, long leftNanos) {
        if (leftNanos < offerUnderNanos && chars.get() < MAX_CHARS && !offered.contains(key)
                && offered.add(key)) {
            chars.addAndGet(key.length());
        }
    }

    /**
     * The keys to renew now, taken out, in commands of at most {@link #COMMAND_KEYS}; none before a period has passed
     * since the last round, or when none waits.
     */
    List<Command.RenewReads> due(long now) {
        if ((lastRound != Long.MIN_VALUE && now - lastRound < periodNanos) || offered.isEmpty()) {
            return List.of();
        }
        lastRound = now;
        List<Command.RenewReads> commands = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        for (Iterator<String> it = offered.iterator(); it.hasNext(); ) {
            String key = it.next();
            it.remove();
            chars.addAndGet(-key.length());
            keys.add(key);
            if (keys.size() == COMMAND_KEYS) {
                commands.add(new Command.RenewReads(keys));
                keys = new ArrayList<>();
            }
        }
        if (!keys.isEmpty()) {
            commands.add(new Command.RenewReads(keys));
        }
        return commands;
    }

    /** Forgets what was offered: this master no longer leads, and a later leader's reads offer their own. */
    void clear() {
        for (Iterator<String> it = offered.iterator(); it.hasNext(); ) {
            chars.addAndGet(-it.next().length());
            it.remove();
        }
    }

    /**
     * Applies {@link Command.RenewReads}: each key that is still a complete object with a memory replica holds its read
     * lease until at least {@code now} plus a TTL, as a {@link Command.GrantRead} would leave it (no answer and no
     * counter: nobody reads through this command). Any other key is skipped: it is gone, rewritten or on disk since.
     */
    static int renew(MasterState state, long now, List<String> keys) {
        long leaseNanos = state.config().leaseTtl().toNanos();
        int renewed = 0;
        for (String key : keys) {
            if (key == null) {
                continue; // a key over the limit needs no check: it was never put, so the table does not hold it
            }
            ObjectTable.Shard shard = state.objects.shard(key);
            synchronized (shard) {
                ObjectRecord rec = shard.map.get(key);
                if (rec != null && rec.state == ObjectRecord.COMPLETE && rec.hasReplicas()) {
                    rec.lease = Math.max(rec.lease, now + leaseNanos);
                    renewed++;
                }
            }
        }
        return renewed;
    }
}
