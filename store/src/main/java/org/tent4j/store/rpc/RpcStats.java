package org.tent4j.store.rpc;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

import org.tent4j.store.master.PrometheusHistogram;

/** Per-RPC call counts, failures and a latency histogram, rendered as Prometheus text by the admin server. */
public final class RpcStats {
    /** Histogram bucket upper bounds in seconds. */
    static final double[] BUCKETS = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1};

    public static final class Method {
        final PrometheusHistogram latency = new PrometheusHistogram(BUCKETS);
        final LongAdder failures = new LongAdder();

        public long calls() {
            return latency.count();
        }

        public long failures() {
            return failures.sum();
        }

        public long nanos() {
            return latency.nanos();
        }

        void record(long elapsedNanos, boolean failed) {
            latency.record(elapsedNanos);
            if (failed) {
                failures.increment();
            }
        }
    }

    private final Map<String, Method> methods = new ConcurrentHashMap<>();
    /** Reads clients discarded because their lease ended while bytes moved, as reported with their heartbeats. */
    final LongAdder clientLeaseExpiries = new LongAdder();
    /** Calls closed {@code UNAUTHENTICATED}: no token proof, or a wrong one ({@link AuthInterceptor}). */
    final LongAdder unauthenticated = new LongAdder();
    final LongAdder clientChecksumFailures = new LongAdder();
    /** Connections closed because the limit's worth were open ({@link ConnectionGate}). */
    final LongAdder connectionsRefused = new LongAdder();
    /** Connections that never authenticated, closed to make room for newer ones. */
    final LongAdder unprovenEvicted = new LongAdder();
    /** Connections counted against the limit now; set by the server that owns the gate. */
    volatile java.util.function.IntSupplier connections = () -> 0;
    /** Messages refused because partly received messages had spent the inbound bytes budget ({@link InboundBudget}). */
    final LongAdder inboundRefused = new LongAdder();
    /** The inbound bytes budget and what it holds now; set by the server that owns the budget. */
    volatile long inboundBudget;
    volatile java.util.function.LongSupplier inboundHeld = () -> 0;

    public void addClientChecksumFailures(long n) {
        clientChecksumFailures.add(n);
    }

    /** Disk-replica reads clients found not matching their CRC32C (reported with their pings). */
    public long clientChecksumFailures() {
        return clientChecksumFailures.sum();
    }

    public void addClientLeaseExpiries(long n) {
        clientLeaseExpiries.add(n);
    }

    public long clientLeaseExpiries() {
        return clientLeaseExpiries.sum();
    }

    public void record(String method, long elapsedNanos, boolean failed) {
        methods.computeIfAbsent(method, m -> new Method()).record(elapsedNanos, failed);
    }

    /** Appends the {@code store_rpc_*} families. */
    public void appendPrometheus(StringBuilder sb) {
        sb.append("# HELP store_lease_expired_reads_total Reads clients discarded because the lease ended while bytes moved\n")
                .append("# TYPE store_lease_expired_reads_total counter\nstore_lease_expired_reads_total ").append(clientLeaseExpiries.sum()).append('\n');
        sb.append("# HELP store_rpc_unauthenticated_total Master RPCs refused before their handler for a missing or wrong token\n")
                .append("# TYPE store_rpc_unauthenticated_total counter\nstore_rpc_unauthenticated_total ").append(unauthenticated.sum()).append('\n');
        sb.append("# HELP store_rpc_connections Connections counted against the master's limit (with a token or TLS: those that authenticated)\n")
                .append("# TYPE store_rpc_connections gauge\nstore_rpc_connections ").append(connections.getAsInt()).append('\n');
        sb.append("# HELP store_rpc_connections_refused_total Connections closed because the master's connection limit was reached\n")
                .append("# TYPE store_rpc_connections_refused_total counter\nstore_rpc_connections_refused_total ").append(connectionsRefused.sum()).append('\n');
        sb.append("# HELP store_rpc_unproven_connections_evicted_total Connections closed before authenticating, to make room for newer ones\n")
                .append("# TYPE store_rpc_unproven_connections_evicted_total counter\nstore_rpc_unproven_connections_evicted_total ").append(unprovenEvicted.sum()).append('\n');
        sb.append("# HELP store_rpc_inbound_budget_bytes Bytes of partly received messages the master may hold (--inbound-bytes-budget)\n")
                .append("# TYPE store_rpc_inbound_budget_bytes gauge\nstore_rpc_inbound_budget_bytes ").append(inboundBudget).append('\n');
        sb.append("# HELP store_rpc_inbound_held_bytes Bytes of partly received messages charged to the inbound budget now\n")
                .append("# TYPE store_rpc_inbound_held_bytes gauge\nstore_rpc_inbound_held_bytes ").append(inboundHeld.getAsLong()).append('\n');
        sb.append("# HELP store_rpc_inbound_refused_total Messages refused RESOURCE_EXHAUSTED because the inbound budget was spent\n")
                .append("# TYPE store_rpc_inbound_refused_total counter\nstore_rpc_inbound_refused_total ").append(inboundRefused.sum()).append('\n');
        sb.append("# HELP store_rpc_requests_total Master RPCs served, by method\n# TYPE store_rpc_requests_total counter\n");
        methods.forEach((m, s) -> sb.append("store_rpc_requests_total{method=\"").append(m).append("\"} ").append(s.calls()).append('\n'));
        sb.append("# HELP store_rpc_failures_total Master RPCs (or batch items) that returned an error\n# TYPE store_rpc_failures_total counter\n");
        methods.forEach((m, s) -> sb.append("store_rpc_failures_total{method=\"").append(m).append("\"} ").append(s.failures.sum()).append('\n'));
        sb.append("# HELP store_rpc_latency_seconds Time the master spent serving an RPC\n# TYPE store_rpc_latency_seconds histogram\n");
        methods.forEach((m, s) -> s.latency.appendSamples(sb, "store_rpc_latency_seconds", "method=\"" + m + "\""));
    }

    public Map<String, Method> methods() {
        return methods;
    }
}
