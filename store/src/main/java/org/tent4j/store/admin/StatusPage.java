package org.tent4j.store.admin;

import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;

import org.tent4j.store.Tier;
import org.tent4j.store.master.DurableLog;
import org.tent4j.store.master.LogMetrics;
import org.tent4j.store.master.MasterState;
import org.tent4j.store.rpc.RpcStats;

/** The master's status page: one screen a person reads at a glance, refreshed every five seconds. Plain HTML, no script. */
final class StatusPage {
    private StatusPage() {
    }

    private static long tierSum(List<MasterState.SegmentView> segs, Tier tier, ToLongFunction<MasterState.SegmentView> f) {
        return segs.stream().filter(v -> v.tier() == tier).mapToLong(f).sum();
    }

    /** {@code role} and {@code log}: where a durable master stands in its group and what its log did; null in memory. */
    static String render(MasterState state, RpcStats rpc, long now, String self, DurableLog.Role role, LogMetrics log) {
        MasterState.Stats s = state.stats();
        List<MasterState.SegmentView> segs = state.segments();
        List<MasterState.ClientView> clients = state.clients(now);
        long cap = tierSum(segs, Tier.MEMORY, MasterState.SegmentView::capacity);
        long used = tierSum(segs, Tier.MEMORY, MasterState.SegmentView::used);
        long diskCap = tierSum(segs, Tier.DISK, MasterState.SegmentView::capacity);
        long diskUsed = tierSum(segs, Tier.DISK, MasterState.SegmentView::used);
        double hwm = state.config().highWatermark();
        StringBuilder h = new StringBuilder(8192);
        h.append("""
                <!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="5">
                <title>tent4j store master</title><style>
                body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2733;background:#f7f8fa}
                h1{font-size:20px;margin:0 0 4px} h2{font-size:15px;margin:22px 0 6px}
                .sub{color:#5b6775;margin-bottom:14px}
                .cards{display:flex;gap:12px;flex-wrap:wrap}
                .card{background:#fff;border:1px solid #dde2e8;border-radius:6px;padding:10px 14px;min-width:130px}
                .card b{display:block;font-size:20px} .card span{color:#5b6775;font-size:12px}
                table{border-collapse:collapse;background:#fff;border:1px solid #dde2e8;min-width:640px}
                th,td{padding:5px 10px;border-bottom:1px solid #eef1f4;text-align:left} th{background:#eef1f4;font-weight:600}
                td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
                .bar{width:160px;height:10px;background:#e6e9ee;border-radius:5px;position:relative;display:inline-block}
                .bar i{position:absolute;left:0;top:0;bottom:0;border-radius:5px;background:#3b82c4}
                .bar i.hot{background:#d9822b} .bar u{position:absolute;top:-2px;bottom:-2px;width:2px;background:#b3261e}
                .ok{color:#1e7d32;font-weight:600} .warn{color:#b3261e;font-weight:600}
                </style></head><body>
                """);
        h.append("<h1>tent4j store master</h1><div class=\"sub\">").append(segs.size()).append(" segments · ")
                .append(clients.size()).append(" clients alive · eviction above ").append(pct(hwm)).append(" (red mark)</div>");
        role(h, self, role, log);
        h.append("<div class=\"cards\">");
        card(h, Long.toString(s.objects()), "objects");
        card(h, bytes(s.objectBytes()), "object bytes");
        card(h, bytes(used) + " / " + bytes(cap), "memory used / capacity (" + pct(cap == 0 ? 0 : (double) used / cap) + ")");
        card(h, bytes(diskUsed) + " / " + bytes(diskCap), "disk used / capacity (" + pct(diskCap == 0 ? 0 : (double) diskUsed / diskCap) + ")");
        card(h, Long.toString(s.evictedObjects()), "evicted objects (" + bytes(s.evictedBytes()) + ")");
        card(h, Long.toString(s.leasesGranted()), "read leases granted");
        card(h, Long.toString(rpc.clientLeaseExpiries()), "reads discarded on lease expiry");
        card(h, Long.toString(s.clientsExpired()), "clients expired");
        MasterState.Repair repair = s.repair();
        card(h, Long.toString(repair.underReplicated()), "under-replicated objects (" + repair.inFlight() + " repairing; "
                + repair.completed() + " repaired, " + (repair.failed() + repair.expired()) + " failed or expired)");
        h.append("</div>");

        h.append("<h2>Segments</h2><table><tr><th>segment</th><th>tier</th><th>host</th><th>owner</th><th class=\"n\">capacity</th><th class=\"n\">used</th><th>use</th><th class=\"n\">largest free</th></tr>");
        for (MasterState.SegmentView v : segs) {
            double r = v.capacity() == 0 ? 0 : (double) v.used() / v.capacity();
            h.append("<tr><td>").append(esc(v.engineSegment())).append("<br><small>").append(esc(v.id())).append("</small></td><td>")
                    .append(v.tier().name().toLowerCase(java.util.Locale.ROOT)).append("</td><td>")
                    .append(esc(v.host())).append("</td><td><small>").append(esc(v.owner())).append("</small></td><td class=\"n\">")
                    .append(bytes(v.capacity())).append("</td><td class=\"n\">").append(bytes(v.used())).append("</td><td>")
                    .append(bar(r, hwm)).append(' ').append(pct(r)).append("</td><td class=\"n\">").append(bytes(v.largestFree())).append("</td></tr>");
        }
        if (segs.isEmpty()) {
            h.append("<tr><td colspan=\"8\" class=\"warn\">no segment mounted: puts fail until a client contributes memory</td></tr>");
        }
        h.append("</table>");

        h.append("<h2>Clients</h2><table><tr><th>client</th><th class=\"n\">segments</th><th class=\"n\">last heard</th><th>state</th></tr>");
        long ttl = state.config().clientTtl().toNanos();
        for (MasterState.ClientView c : clients) {
            boolean late = c.silentNanos() > ttl / 2;
            h.append("<tr><td>").append(esc(c.id())).append("</td><td class=\"n\">").append(c.segments()).append("</td><td class=\"n\">")
                    .append(c.silentNanos() / 1_000_000).append(" ms ago</td><td class=\"").append(late ? "warn\">late" : "ok\">alive").append("</td></tr>");
        }
        h.append("</table>");

        h.append("<h2>Evictions and puts</h2><table><tr><th>what</th><th class=\"n\">count</th></tr>");
        row(h, "eviction rounds", s.evictionRounds());
        row(h, "objects evicted", s.evictedObjects());
        row(h, "removals refused while leased", s.removalsBlockedByLease());
        row(h, "abandoned puts taken over", s.putsTakenOver());
        row(h, "abandoned puts reclaimed", s.putsReclaimed());
        row(h, "puts with fewer replicas than asked", s.partialAllocations());
        row(h, "puts refused for lack of space", s.allocationFailures());
        h.append("</table>");

        MasterState.Tiering t = s.tiering();
        h.append("<h2>Disk tier</h2><table><tr><th>what</th><th class=\"n\">count</th></tr>");
        row(h, "offloads started", t.offloadsStarted());
        row(h, "offloads started by write-through puts", t.writeThroughStarted());
        row(h, "offloads to another node's disk", t.offloadsRemote());
        row(h, "offloads completed", t.offloadsCompleted());
        row(h, "offloads in flight", t.offloadsInFlight());
        row(h, "offloads failed or expired", t.offloadsFailed());
        row(h, "offloads cancelled (object changed)", t.offloadsCancelled());
        row(h, "victims dropped: disk full", t.offloadsNoSpace());
        row(h, "reads served from disk", t.diskReads());
        row(h, "promotions back to memory (completed)", t.promotionsCompleted());
        row(h, "disk reads failing their checksum", rpc.clientChecksumFailures());
        row(h, "disk replicas dropped by eviction", t.diskEvictedObjects());
        row(h, "disk replicas dropped by scrubs", t.scrubDropped());
        h.append("</table>");

        h.append("<h2>Hot keys</h2><table><tr><th>key</th><th>reads (estimated from a sample)</th></tr>");
        List<Map.Entry<String, Long>> hot = state.hotKeys(10);
        for (Map.Entry<String, Long> e : hot) {
            h.append("<tr><td>").append(esc(e.getKey())).append("</td><td class=\"n\">").append(e.getValue()).append("</td></tr>");
        }
        if (hot.isEmpty()) {
            h.append("<tr><td colspan=\"2\">no reads yet</td></tr>");
        }
        h.append("</table>");

        h.append("<h2>RPCs</h2><table><tr><th>method</th><th class=\"n\">calls</th><th class=\"n\">failures</th><th class=\"n\">mean latency</th></tr>");
        rpc.methods().entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(e -> {
            long calls = e.getValue().calls();
            h.append("<tr><td>").append(e.getKey()).append("</td><td class=\"n\">").append(calls).append("</td><td class=\"n\">")
                    .append(e.getValue().failures()).append("</td><td class=\"n\">")
                    .append(calls == 0 ? "-" : String.format("%.1f µs", e.getValue().nanos() / 1e3 / calls)).append("</td></tr>");
        });
        h.append("</table></body></html>\n");
        return h.toString();
    }

    /**
     * This master's role, term and log position (a follower's page shows its possibly lagging copy of the state), and
     * its log's commit latency, leader changes and latest snapshot.
     */
    private static void role(StringBuilder h, String self, DurableLog.Role role, LogMetrics log) {
        if (role == null) {
            h.append("<div class=\"sub\" id=\"role\"><span class=\"ok\">leader</span> · in memory (no log, no term)</div>");
            return;
        }
        h.append("<div class=\"sub\" id=\"role\">master ").append(esc(self)).append(": ")
                .append(role.leader() ? "<span class=\"ok\">leader</span>" : "<span class=\"warn\">follower</span>")
                .append(" · term <b id=\"term\">").append(role.term()).append("</b> · leader ")
                .append(role.leaderId() == null ? "unknown (election running)" : esc(role.leaderId())
                        + (role.leaderRpc() == null ? "" : " at " + esc(role.leaderRpc())))
                .append(" · log from ").append(role.startIndex()).append(", committed ").append(role.commitIndex())
                .append(", applied ").append(role.appliedIndex())
                .append("</div>");
        double mean = log.meanCommitMicros();
        h.append("<div class=\"sub\" id=\"log\">commits <b id=\"commits\">").append(log.commits()).append("</b> (mean ")
                .append(mean < 0 ? "-" : String.format("%.1f µs", mean)).append(") · leader changes <b id=\"leader-changes\">")
                .append(log.leaderChanges()).append("</b> · snapshot <span id=\"snapshot\">")
                .append(log.snapshotIndex() < 0 ? "none yet" : "at index " + log.snapshotIndex()
                        + String.format(", %.0f s old", log.snapshotAgeSeconds()))
                .append("</span></div>");
    }

    private static void card(StringBuilder h, String value, String label) {
        h.append("<div class=\"card\"><b>").append(esc(value)).append("</b><span>").append(esc(label)).append("</span></div>");
    }

    private static void row(StringBuilder h, String what, long n) {
        h.append("<tr><td>").append(what).append("</td><td class=\"n\">").append(n).append("</td></tr>");
    }

    private static String bar(double ratio, double hwm) {
        return "<span class=\"bar\"><i" + (ratio > hwm ? " class=\"hot\"" : "") + " style=\"width:" + Math.round(Math.min(1, ratio) * 100)
                + "%\"></i><u style=\"left:" + Math.round(hwm * 100) + "%\"></u></span>";
    }

    private static String pct(double r) {
        return String.format("%.1f%%", r * 100);
    }

    static String bytes(long b) {
        if (b < 1024) {
            return b + " B";
        }
        String[] u = {"KiB", "MiB", "GiB", "TiB"};
        double v = b;
        int i = -1;
        while (v >= 1024 && i < u.length - 1) {
            v /= 1024;
            i++;
        }
        return String.format("%.1f %s", v, u[i]);
    }

    private static String esc(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
