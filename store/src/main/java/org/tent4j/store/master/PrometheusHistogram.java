package org.tent4j.store.master;

import java.util.concurrent.atomic.LongAdder;

/**
 * A latency histogram with fixed bucket bounds, rendered in Prometheus's text format: the master's
 * {@code store_rpc_latency_seconds} (one per RPC method) and {@code store_raft_commit_latency_seconds}.
 */
public final class PrometheusHistogram {
    private final double[] bounds;
    private final LongAdder[] buckets;
    private final LongAdder count = new LongAdder();
    private final LongAdder nanos = new LongAdder();

    /** Upper bounds of the buckets in seconds, ascending ({@code +Inf} is implied). */
    public PrometheusHistogram(double... boundsSeconds) {
        this.bounds = boundsSeconds.clone();
        this.buckets = new LongAdder[bounds.length];
        for (int i = 0; i < buckets.length; i++) {
            buckets[i] = new LongAdder();
        }
    }

    public void record(long elapsedNanos) {
        count.increment();
        nanos.add(elapsedNanos);
        double s = elapsedNanos / 1e9;
        for (int i = 0; i < bounds.length; i++) {
            if (s <= bounds[i]) {
                buckets[i].increment();
                break;
            }
        }
    }

    public long count() {
        return count.sum();
    }

    /** The sum of what was recorded, in nanoseconds. */
    public long nanos() {
        return nanos.sum();
    }

    /**
     * Appends the {@code _bucket} (cumulative, then {@code +Inf}), {@code _sum} and {@code _count} samples of
     * {@code name}; {@code labels} ({@code method="Put"}, or empty for none) go before {@code le}.
     */
    public void appendSamples(StringBuilder sb, String name, String labels) {
        String prefix = labels.isEmpty() ? "" : labels + ",";
        String own = labels.isEmpty() ? "" : "{" + labels + "}";
        long n = count.sum();
        long cum = 0;
        for (int i = 0; i < bounds.length; i++) {
            cum += buckets[i].sum();
            sb.append(name).append("_bucket{").append(prefix).append("le=\"").append(bounds[i]).append("\"} ").append(cum).append('\n');
        }
        sb.append(name).append("_bucket{").append(prefix).append("le=\"+Inf\"} ").append(n).append('\n');
        sb.append(name).append("_sum").append(own).append(' ').append(nanos.sum() / 1e9).append('\n');
        sb.append(name).append("_count").append(own).append(' ').append(n).append('\n');
    }
}
