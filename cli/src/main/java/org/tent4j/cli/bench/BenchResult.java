package org.tent4j.cli.bench;

import java.util.Locale;

/**
 * What one te-bench run measured.
 *
 * @param elapsedNanos time from the end of warm-up until the last measured request completed
 * @param bytes        bytes of measured requests that COMPLETED
 * @param operations   measured requests that COMPLETED
 * @param errors       requests that did not complete, plus blocks whose bytes failed the consistency check
 * @param mismatches   blocks whose bytes failed the consistency check (included in {@code errors})
 * @param firstError   message of the first error, or {@code null}
 * @param latency      per-request latency in nanoseconds, submit to completion
 */
public record BenchResult(String protocol, String operation, long blockSize, int batchSize, int threads,
                          long elapsedNanos, long bytes, long operations, long errors, long mismatches,
                          String firstError, LatencyHistogram latency) {

    public double seconds() {
        return elapsedNanos / 1e9;
    }

    /** Gigabytes (10^9 bytes) per second. */
    public double gigabytesPerSecond() {
        return elapsedNanos == 0 ? 0 : bytes / (double) elapsedNanos;
    }

    public double operationsPerSecond() {
        return elapsedNanos == 0 ? 0 : operations * 1e9 / elapsedNanos;
    }

    public double percentileMicros(double percentile) {
        return latency.percentile(percentile) / 1000.0;
    }

    /** The report for people: a few lines, no trailing newline. */
    public String summary() {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "te-bench %s %s: block %d B, batch %d, %d thread(s), %.2f s measured%n",
                protocol, operation, blockSize, batchSize, threads, seconds()));
        sb.append(String.format(Locale.ROOT, "  throughput  %.3f GB/s (10^9 B/s), %.0f ops/s, %d bytes in %d requests%n",
                gigabytesPerSecond(), operationsPerSecond(), bytes, operations));
        sb.append(String.format(Locale.ROOT,
                "  latency     p50 %.1f us, p99 %.1f us, p999 %.1f us, max %.1f us (per request, batch submit to its completion)%n",
                percentileMicros(50), percentileMicros(99), percentileMicros(99.9), latency.max() / 1000.0));
        sb.append(String.format(Locale.ROOT, "  errors      %d", errors));
        if (mismatches > 0) {
            sb.append(String.format(Locale.ROOT, " (%d block(s) failed the consistency check)", mismatches));
        }
        if (firstError != null) {
            sb.append(String.format(Locale.ROOT, "%n  first error %s", firstError));
        }
        return sb.toString();
    }

    /** One JSON object on one line; {@code gbps} is gigabytes (10^9 bytes) per second, like the text report. */
    public String toJson() {
        StringBuilder sb = new StringBuilder(320).append('{');
        field(sb, "protocol", protocol);
        field(sb, "operation", operation);
        number(sb, "block_size", blockSize);
        number(sb, "batch_size", batchSize);
        number(sb, "threads", threads);
        decimal(sb, "duration_s", seconds(), 3);
        number(sb, "bytes", bytes);
        decimal(sb, "gbps", gigabytesPerSecond(), 4);
        decimal(sb, "ops_per_sec", operationsPerSecond(), 1);
        decimal(sb, "p50_us", percentileMicros(50), 1);
        decimal(sb, "p99_us", percentileMicros(99), 1);
        decimal(sb, "p999_us", percentileMicros(99.9), 1);
        number(sb, "errors", errors);
        number(sb, "mismatches", mismatches);
        sb.setLength(sb.length() - 1);
        return sb.append('}').toString();
    }

    private static void field(StringBuilder sb, String key, String value) {
        sb.append('"').append(key).append("\":");
        if (value == null) {
            sb.append("null,");
            return;
        }
        sb.append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append("\",");
    }

    private static void number(StringBuilder sb, String key, long value) {
        sb.append('"').append(key).append("\":").append(value).append(',');
    }

    private static void decimal(StringBuilder sb, String key, double value, int digits) {
        sb.append('"').append(key).append("\":")
                .append(String.format(Locale.ROOT, "%." + digits + "f", Double.isFinite(value) ? value : 0.0))
                .append(',');
    }
}
