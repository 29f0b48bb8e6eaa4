package org.tent4j.store.master;

import java.time.InstantSource;
import java.util.concurrent.atomic.LongAdder;

/**
 * What a durable master's log did, for {@code /metrics} and the status page: how long the calls it proposed took to
 * be committed and applied (a fixed-bucket histogram, as {@code store_rpc_latency_seconds}), how often the leader it
 * knows changed, and its latest snapshot (index and when it was written, on an injectable wall clock).
 */
public final class LogMetrics {
    /** Commit latency bucket upper bounds in seconds: an fsync is a millisecond or more, an election a second. */
    static final double[] BUCKETS = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5};
    /** Ratis's index of "none". */
    static final long NONE = -1;

    private final InstantSource clock;
    private final PrometheusHistogram commits = new PrometheusHistogram(BUCKETS);
    private final LongAdder leaderChanges = new LongAdder();
    private final LongAdder renewalEntries = new LongAdder();
    private final LongAdder renewedAhead = new LongAdder();
    /** The last leader this master knew of (null before the first); guarded by this. */
    private String lastLeader;
    private volatile long snapshotIndex = NONE;
    private volatile long snapshotMillis;

    LogMetrics(InstantSource clock) {
        this.clock = clock;
    }

    /**
     * A call this master proposed was committed and applied, {@code nanos} after it was submitted (its wait to be
     * merged into an entry included).
     */
    void committed(long nanos) {
        commits.record(nanos);
    }

    /**
     * Ratis names the leader this master now knows. Counted when it differs from the last one known (the first leader
     * after start included); an election in between, with no leader known, is not a change by itself.
     */
    synchronized void leaderIs(String leader) {
        if (leader != null && !leader.equals(lastLeader)) {
            lastLeader = leader;
            leaderChanges.increment();
        }
    }

    /**
     * As a group's leader this master proposed one {@link Command.RenewReads} entry, and {@code renewed} of its keys
     * were still readable when it was applied ({@link ReadRenewals}). Counted here, not in the state: which master
     * renews is the leader's own business, and a follower or a restart counts from zero.
     */
    void renewedAhead(int renewed) {
        renewalEntries.increment();
        renewedAhead.add(renewed);
    }

    /** {@link Command.RenewReads} entries this master proposed as a leader since it started. */
    public long renewalEntries() {
        return renewalEntries.sum();
    }

    /** Read leases this master renewed ahead as a leader since it started. */
    public long renewedAhead() {
        return renewedAhead.sum();
    }

    /** The latest snapshot is now the one at Ratis index {@code index}, written at {@code millis} (epoch). */
    void snapshotAt(long index, long millis) {
        snapshotMillis = millis;
        snapshotIndex = index;
    }

    /** The wall clock, for a snapshot taken now. */
    long nowMillis() {
        return clock.millis();
    }

    /** Calls this master proposed that were committed and applied since it started. */
    public long commits() {
        return commits.count();
    }

    public long leaderChanges() {
        return leaderChanges.sum();
    }

    /** Ratis's index of the latest snapshot this master holds, {@code -1} before its first. */
    public long snapshotIndex() {
        return snapshotIndex;
    }

    /** Seconds since the latest snapshot was written, {@code -1} when there is none. */
    public double snapshotAgeSeconds() {
        return snapshotIndex == NONE ? NONE : Math.max(0, clock.millis() - snapshotMillis) / 1e3;
    }

    /** Mean commit latency in microseconds, or -1 before the first commit. */
    public double meanCommitMicros() {
        long n = commits.count();
        return n == 0 ? -1 : commits.nanos() / 1e3 / n;
    }

    /** Appends the {@code store_raft_*} families of this log (the role and indexes are rendered beside them). */
    public void appendPrometheus(StringBuilder sb) {
        sb.append("# HELP store_raft_commit_latency_seconds Time from proposing an entry (one command or a batch) to "
                + "its commit and apply on this master, for entries this master proposed\n"
                + "# TYPE store_raft_commit_latency_seconds histogram\n");
        commits.appendSamples(sb, "store_raft_commit_latency_seconds", "");
        sb.append("# HELP store_raft_leader_changes_total Times the leader this master knows changed (the first one "
                + "known after start included)\n# TYPE store_raft_leader_changes_total counter\nstore_raft_leader_changes_total ")
                .append(leaderChanges.sum()).append('\n');
        sb.append("# HELP store_read_renewal_entries_total Read-lease renewal entries this master proposed as a group's "
                + "leader (each renews the keys read under a short lease since the last)\n"
                + "# TYPE store_read_renewal_entries_total counter\nstore_read_renewal_entries_total ")
                .append(renewalEntries.sum()).append('\n');
        sb.append("# HELP store_read_leases_renewed_ahead_total Read leases this master renewed ahead as a group's leader "
                + "(keys still readable when their renewal was applied)\n"
                + "# TYPE store_read_leases_renewed_ahead_total counter\nstore_read_leases_renewed_ahead_total ")
                .append(renewedAhead.sum()).append('\n');
        sb.append("# HELP store_raft_snapshot_index Ratis's log index of this master's latest snapshot (-1: none yet)\n"
                + "# TYPE store_raft_snapshot_index gauge\nstore_raft_snapshot_index ").append(snapshotIndex).append('\n');
        if (snapshotIndex != NONE) {
            // absent, not 0, before the first snapshot: an age of 0 would read as "just taken"
            sb.append("# HELP store_raft_snapshot_age_seconds Seconds since this master's latest snapshot was written\n"
                    + "# TYPE store_raft_snapshot_age_seconds gauge\nstore_raft_snapshot_age_seconds ")
                    .append(snapshotAgeSeconds()).append('\n');
        }
    }
}
