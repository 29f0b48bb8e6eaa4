package org.tent4j.store.admin;

import java.util.List;
import java.util.Locale;

import org.tent4j.store.Tier;
import org.tent4j.store.master.DurableLog;
import org.tent4j.store.master.LogMetrics;
import org.tent4j.store.master.MasterState;
import org.tent4j.store.rpc.RpcStats;

/** The master's metrics in Prometheus text format; names are stable ({@code store_*}). */
final class Metrics {
    private Metrics() {
    }

    /**
     * {@code role}: where a durable master stands in its group, and {@code log} what its log did; both null for a
     * master in memory (which always leads).
     */
    static String render(MasterState state, RpcStats rpc, DurableLog.Role role, LogMetrics log) {
        StringBuilder sb = new StringBuilder(4096);
        MasterState.Stats s = state.stats();
        gauge(sb, "store_master_is_leader", "1 when this master leads its group (serves and applies), 0 for a follower",
                role == null || role.leader() ? 1 : 0);
        gauge(sb, "store_master_term", "The Raft term this master is in (0 in memory)", role == null ? 0 : role.term());
        if (role != null) {
            gauge(sb, "store_raft_commit_index", "Ratis's last log index committed on a majority, as this master knows it",
                    role.commitIndex());
            gauge(sb, "store_raft_applied_index", "Ratis's last log index applied to this master's state", role.appliedIndex());
            gauge(sb, "store_raft_log_start_index", "The first index this master's log holds (what came before is in its "
                    + "snapshot)", role.startIndex());
        }
        if (log != null) {
            log.appendPrometheus(sb);
        }
        gauge(sb, "store_objects", "Objects held (readable or being written)", s.objects());
        gauge(sb, "store_object_bytes", "Bytes of readable objects (one replica each)", s.objectBytes());
        gauge(sb, "store_clients", "Clients the master considers alive", s.clients());
        long cap = 0;
        long used = 0;
        List<MasterState.SegmentView> segments = state.segments();
        for (MasterState.SegmentView v : segments) {
            cap += v.capacity();
            used += v.used();
        }
        segmentSeries(sb, segments);
        gauge(sb, "store_capacity_bytes", "Bytes of all mounted segments", cap);
        gauge(sb, "store_used_bytes", "Bytes allocated to replicas over all segments", used);
        counter(sb, "store_evicted_objects_total", "Objects evicted", s.evictedObjects());
        counter(sb, "store_evicted_bytes_total", "Replica bytes freed by eviction", s.evictedBytes());
        counter(sb, "store_eviction_rounds_total", "Eviction rounds (watermark or failed allocation)", s.evictionRounds());
        counter(sb, "store_leases_granted_total", "Read leases granted", s.leasesGranted());
        counter(sb, "store_removals_blocked_by_lease_total", "Removals refused because a reader held a lease", s.removalsBlockedByLease());
        counter(sb, "store_puts_taken_over_total", "Abandoned puts taken over by a later put of the key", s.putsTakenOver());
        counter(sb, "store_puts_reclaimed_total", "Abandoned puts whose space was reclaimed", s.putsReclaimed());
        counter(sb, "store_partial_allocations_total", "Puts given fewer replicas than asked for", s.partialAllocations());
        counter(sb, "store_allocation_failures_total", "Puts refused for lack of space", s.allocationFailures());
        counter(sb, "store_clients_expired_total", "Clients dropped for missing heartbeats", s.clientsExpired());
        counter(sb, "store_segments_replaced_total", "Segments dropped because their node restarted (a mount of a new "
                + "incarnation named them or their memory)", s.segmentsReplaced());
        gauge(sb, "store_reserved_bytes", "Bytes reserved for clients' batch puts and not yet committed (part of used)", s.reservedBytes());
        counter(sb, "store_reservations_granted_total", "Reservations granted to clients", s.reservationsGranted());
        counter(sb, "store_reservations_released_total", "Reservations retired, expired with their client or unused", s.reservationsReleased());
        counter(sb, "store_objects_committed_total", "Objects made readable by a commit into a reservation", s.objectsCommitted());
        tierSeries(sb, segments);
        MasterState.Tiering t = s.tiering();
        counter(sb, "store_offloads_started_total", "Evicted objects handed to their node to copy to its disk", t.offloadsStarted());
        counter(sb, "store_offloads_completed_total", "Offloads made durable and switched to their disk replica", t.offloadsCompleted());
        counter(sb, "store_offloads_failed_total", "Offloads the node reported failed or that expired", t.offloadsFailed());
        counter(sb, "store_offloads_cancelled_total", "Offloads given up because the object changed meanwhile", t.offloadsCancelled());
        counter(sb, "store_offloads_duplicate_total", "Offloads asked for an object already offloaded or offloading (refused; never expected)", t.offloadsDuplicate());
        counter(sb, "store_offloads_no_space_total", "Victims dropped because no disk segment had room", t.offloadsNoSpace());
        counter(sb, "store_offloads_write_through_started_total", "Offloads started as a write-through put ended (also in store_offloads_started_total)", t.writeThroughStarted());
        counter(sb, "store_offloads_remote_started_total", "Offloads to another node's disk, pulled by that node (also in store_offloads_started_total)", t.offloadsRemote());
        gauge(sb, "store_offloads_in_flight", "Offloads handed out and not yet reported", t.offloadsInFlight());
        counter(sb, "store_promotions_started_total", "Disk-only objects being copied back into memory after enough reads", t.promotionsStarted());
        counter(sb, "store_promotions_completed_total", "Objects copied back into memory (beside their disk replica)", t.promotionsCompleted());
        counter(sb, "store_scrub_dropped_total", "Disk replicas a node's scrub found not matching their CRC32C, dropped", t.scrubDropped());
        counter(sb, "store_disk_reads_total", "Read leases granted on objects whose only replica is on disk", t.diskReads());
        counter(sb, "store_disk_evicted_objects_total", "Disk replicas dropped to keep the disk under its watermark (an object also in memory stays there)", t.diskEvictedObjects());
        MasterState.Repair r = s.repair();
        gauge(sb, "store_objects_under_replicated", "Readable objects with fewer memory replicas than their put asked for "
                + "and no disk replica", r.underReplicated());
        gauge(sb, "store_repairs_in_flight", "Repairs handed to a node and not yet reported", r.inFlight());
        sb.append("# HELP store_repairs_total Repairs that ended, by result (completed: the replica was added)\n"
                + "# TYPE store_repairs_total counter\n");
        long[] ended = {r.completed(), r.failed(), r.expired(), r.cancelled()};
        String[] results = {"completed", "failed", "expired", "cancelled"};
        for (int i = 0; i < ended.length; i++) {
            sb.append("store_repairs_total{result=\"").append(results[i]).append("\"} ").append(ended[i]).append('\n');
        }
        counter(sb, "store_checksum_failures_total", "Disk-replica reads whose bytes did not match their CRC32C (reported by clients)", rpc.clientChecksumFailures());
        rpc.appendPrometheus(sb);
        return sb.toString();
    }

    /** The per-segment series; package-private so a test can hand it ids that mount validation would refuse. */
    static void segmentSeries(StringBuilder sb, List<MasterState.SegmentView> segments) {
        sb.append("# HELP store_segment_capacity_bytes Bytes a mounted segment contributes\n# TYPE store_segment_capacity_bytes gauge\n");
        for (MasterState.SegmentView v : segments) {
            sb.append("store_segment_capacity_bytes{segment=\"").append(label(v.id())).append("\",host=\"").append(label(v.host()))
                    .append("\"} ").append(v.capacity()).append('\n');
        }
        sb.append("# HELP store_segment_used_bytes Bytes of a segment allocated to replicas\n# TYPE store_segment_used_bytes gauge\n");
        for (MasterState.SegmentView v : segments) {
            sb.append("store_segment_used_bytes{segment=\"").append(label(v.id())).append("\",host=\"").append(label(v.host()))
                    .append("\"} ").append(v.used()).append('\n');
        }
    }

    /** Capacity and use per tier (memory, disk), every tier named even when nothing of it is mounted. */
    private static void tierSeries(StringBuilder sb, List<MasterState.SegmentView> segments) {
        long[] cap = new long[Tier.values().length];
        long[] used = new long[Tier.values().length];
        for (MasterState.SegmentView v : segments) {
            cap[v.tier().ordinal()] += v.capacity();
            used[v.tier().ordinal()] += v.used();
        }
        sb.append("# HELP store_tier_capacity_bytes Bytes the mounted segments of a tier contribute\n# TYPE store_tier_capacity_bytes gauge\n");
        for (Tier t : Tier.values()) {
            sb.append("store_tier_capacity_bytes{tier=\"").append(t.name().toLowerCase(Locale.ROOT)).append("\"} ").append(cap[t.ordinal()]).append('\n');
        }
        sb.append("# HELP store_tier_used_bytes Bytes of a tier allocated to replicas (and offloads in flight)\n# TYPE store_tier_used_bytes gauge\n");
        for (Tier t : Tier.values()) {
            sb.append("store_tier_used_bytes{tier=\"").append(t.name().toLowerCase(Locale.ROOT)).append("\"} ").append(used[t.ordinal()]).append('\n');
        }
    }

    /**
     * A label value as the Prometheus text format escapes it (backslash, double quote, newline); ids are validated at
     * mount, but a value restored from an older snapshot was not, and one forged line is a forged series.
     */
    static String label(String value) {
        if (value.indexOf('\\') < 0 && value.indexOf('"') < 0 && value.indexOf('\n') < 0) {
            return value;
        }
        return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }

    private static void gauge(StringBuilder sb, String name, String help, long v) {
        sb.append("# HELP ").append(name).append(' ').append(help).append("\n# TYPE ").append(name).append(" gauge\n")
                .append(name).append(' ').append(v).append('\n');
    }

    private static void counter(StringBuilder sb, String name, String help, long v) {
        sb.append("# HELP ").append(name).append(' ').append(help).append("\n# TYPE ").append(name).append(" counter\n")
                .append(name).append(' ').append(v).append('\n');
    }
}
