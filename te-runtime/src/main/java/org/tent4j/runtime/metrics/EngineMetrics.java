package org.tent4j.runtime.metrics;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.DoubleSupplier;

import com.sun.net.httpserver.HttpServer;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;

/**
 * The engine's metrics, with stable Prometheus names (all labelled {@code segment}):
 * <ul>
 * <li>{@code tent4j_transfer_bytes_total{transport,operation}} bytes of completed requests</li>
 * <li>{@code tent4j_transfer_requests_total{transport,operation}} completed requests</li>
 * <li>{@code tent4j_transfer_errors_total{transport,operation}} requests that ended other than COMPLETED</li>
 * <li>{@code tent4j_transfer_latency_seconds{transport,operation}} submit → completion histogram</li>
 * <li>{@code tent4j_transport_fallbacks_total{from,to}} requests carried by another transport than preferred</li>
 * <li>{@code tent4j_transport_failovers_total{from,to}} slices moved to another transport after a failure</li>
 * <li>{@code tent4j_slice_stale_settlements_total} a transport settled a slice that was not in flight (twice, or after a cancel)</li>
 * <li>{@code tent4j_path_bandwidth_bytes_per_second{peer,transport,path}} EWMA of each path's delivered bandwidth</li>
 * <li>{@code tent4j_path_inflight_bytes{peer,transport,path}} bytes posted and not yet settled</li>
 * <li>{@code tent4j_path_paused{peer,transport,path}} 1 while a failing path cools down</li>
 * <li>{@code tent4j_path_slices_total{peer,transport,path,outcome}} slices completed / failed per path</li>
 * </ul>
 * Meters are created up front per (transport, operation), so recording allocates nothing.
 */
public final class EngineMetrics implements AutoCloseable {
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    /**
     * Upper bounds of the latency histogram's buckets: fixed, so each (transport, operation) costs 17 bucket series
     * (16 bounds and +Inf) rather than the ~110 of a percentile histogram.
     */
    static final Duration[] LATENCY_BUCKETS = {
            Duration.ofNanos(10_000), Duration.ofNanos(25_000), Duration.ofNanos(50_000), Duration.ofNanos(100_000),
            Duration.ofNanos(250_000), Duration.ofNanos(500_000), Duration.ofMillis(1), Duration.ofNanos(2_500_000),
            Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(25), Duration.ofMillis(50),
            Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofSeconds(1), Duration.ofSeconds(5)};

    private final String segment;
    private List<String> transports;
    private Counter[] bytes;
    private Counter[] requests;
    private Counter[] errors;
    private LatencyBuckets latency;
    private final Map<String, List<Meter>> pathMeters = new ConcurrentHashMap<>();
    private HttpServer server;
    private ExecutorService serverThreads;

    /**
     * How long the JDK's HTTP server lets a client take to send its request before closing the connection: without
     * it, a client that sends half a request holds a metrics thread forever. The JDK reads it once per JVM, when its
     * first server starts; a value set on the command line wins (the HTTP metadata server sets the same default).
     */
    private static final String REQUEST_TIME_PROPERTY = "sun.net.httpserver.maxReqTime";

    static {
        if (System.getProperty(REQUEST_TIME_PROPERTY) == null) {
            System.setProperty(REQUEST_TIME_PROPERTY, "30");
        }
    }

    public EngineMetrics(String segment) {
        this.segment = segment;
    }

    /** Creates the per-transport meters; called once, when the transports have started and before any transfer. */
    public void transports(List<String> transports) {
        this.transports = List.copyOf(transports);
        int n = (transports.size() + 1) * 2;
        bytes = new Counter[n];
        requests = new Counter[n];
        errors = new Counter[n];
        io.prometheus.metrics.model.snapshots.Labels[] latencyLabels = new io.prometheus.metrics.model.snapshots.Labels[n];
        for (int t = 0; t <= transports.size(); t++) {
            String tid = t < transports.size() ? transports.get(t) : "none";
            for (Opcode op : Opcode.values()) {
                int i = t * 2 + op.ordinal();
                String o = op.name().toLowerCase();
                bytes[i] = Counter.builder("tent4j.transfer.bytes").baseUnit("bytes").tags("segment", segment, "transport", tid, "operation", o).register(registry);
                requests[i] = Counter.builder("tent4j.transfer.requests").tags("segment", segment, "transport", tid, "operation", o).register(registry);
                errors[i] = Counter.builder("tent4j.transfer.errors").tags("segment", segment, "transport", tid, "operation", o).register(registry);
                latencyLabels[i] = io.prometheus.metrics.model.snapshots.Labels.of("operation", o, "segment", segment, "transport", tid);
            }
        }
        long[] bounds = new long[LATENCY_BUCKETS.length];
        for (int b = 0; b < bounds.length; b++) {
            bounds[b] = LATENCY_BUCKETS[b].toNanos();
        }
        latency = new LatencyBuckets(bounds, latencyLabels);
        registry.getPrometheusRegistry().register(latency);
    }

    /** @param transportIndex index of the transport that carried the request, or -1 if none was chosen */
    public void record(int transportIndex, Opcode op, boolean completed, long bytesMoved, long latencyNanos) {
        int i = (transportIndex < 0 ? transports.size() : transportIndex) * 2 + op.ordinal();
        if (completed) {
            bytes[i].increment(bytesMoved);
            requests[i].increment();
            latency.record(i, latencyNanos);
        } else {
            errors[i].increment();
        }
    }

    /** {@code tent4j_slice_stale_settlements_total}: settlements of slices not in flight (a transport's bug). */
    public void staleSettlements(java.util.concurrent.atomic.AtomicLong count) {
        // the counter must be held by its owner: Micrometer keeps only a weak reference to it
        FunctionCounter.builder("tent4j.slice.stale.settlements", count, java.util.concurrent.atomic.AtomicLong::get)
                .tags("segment", segment).register(registry);
    }

    /**
     * A count its owner keeps (the control plane's refusals, say), read at each scrape as {@code <name>_total}. The
     * owner must outlive the engine's metrics: Micrometer holds it weakly.
     */
    public <T> void count(String name, String description, T owner, java.util.function.ToDoubleFunction<T> value, String... tags) {
        FunctionCounter.builder(name, owner, value).description(description).tags(tags).tags("segment", segment).register(registry);
    }

    /** A level its owner keeps (buffers pinned now, connections open), read at each scrape; held weakly like {@link #count}. */
    public <T> void gauge(String name, String description, T owner, java.util.function.ToDoubleFunction<T> value, String... tags) {
        Gauge.builder(name, owner, value).description(description).tags(tags).tags("segment", segment).register(registry);
    }

    public void fallback(String from, String to) {
        registry.counter("tent4j.transport.fallbacks", "segment", segment, "from", from, "to", to).increment();
    }

    public void failover(String from, String to) {
        registry.counter("tent4j.transport.failovers", "segment", segment, "from", from, "to", to).increment();
    }

    /** What the scheduler knows of one path. */
    public interface PathView {
        String name();

        double bandwidthBytesPerSecond();

        double inflightBytes();

        boolean paused();

        double completedSlices();

        double failedSlices();
    }

    /** (Re)registers the gauges of every path to {@code peer} over {@code transport}, replacing those of an older connection. */
    public synchronized void paths(String peer, String transport, List<? extends PathView> paths) {
        // An older connection's meters share names and tags, and registering returns the meter already there: so they
        // go first, or the gauges would go on reading the dead connection's paths (they did after every reconnect)
        List<Meter> old = pathMeters.remove(peer + '\0' + transport);
        if (old != null) {
            old.forEach(registry::remove);
        }
        List<Meter> meters = new ArrayList<>();
        for (PathView p : paths) {
            String[] tags = {"segment", segment, "peer", peer, "transport", transport, "path", p.name()};
            meters.add(Gauge.builder("tent4j.path.bandwidth", p, PathView::bandwidthBytesPerSecond).baseUnit("bytes.per.second").tags(tags).register(registry));
            meters.add(Gauge.builder("tent4j.path.inflight", p, PathView::inflightBytes).baseUnit("bytes").tags(tags).register(registry));
            meters.add(Gauge.builder("tent4j.path.paused", p, v -> v.paused() ? 1 : 0).tags(tags).register(registry));
            meters.add(FunctionCounter.builder("tent4j.path.slices", p, PathView::completedSlices).tags(tags).tag("outcome", "completed").register(registry));
            meters.add(FunctionCounter.builder("tent4j.path.slices", p, PathView::failedSlices).tags(tags).tag("outcome", "failed").register(registry));
        }
        pathMeters.put(peer + '\0' + transport, meters);
    }

    /** What a transport reports its own metrics through: {@code tent4j_transport_<name>{segment,transport,...}}. */
    public org.tent4j.spi.TransportMetrics forTransport(String transportId) {
        return new org.tent4j.spi.TransportMetrics() {
            @Override
            public Counter counter(String name, String description, String... tags) {
                io.micrometer.core.instrument.Counter c = io.micrometer.core.instrument.Counter.builder(meterName(name))
                        .description(description).tags(tags).tags("segment", segment, "transport", transportId).register(registry);
                return c::increment;
            }

            @Override
            public void gauge(String name, String description, DoubleSupplier value, String... tags) {
                Gauge.builder(meterName(name), value, DoubleSupplier::getAsDouble).description(description).tags(tags)
                        .tags("segment", segment, "transport", transportId).strongReference(true).register(registry);
            }
        };
    }

    private static String meterName(String name) {
        if (name == null || !name.matches("[a-z][a-z0-9_.]{0,62}")) {
            throw new IllegalArgumentException("metric name must be lower case letters, digits, '_' or '.', got '" + name + "'");
        }
        return "tent4j.transport." + name;
    }

    public PrometheusMeterRegistry registry() {
        return registry;
    }

    public String scrape() {
        return registry.scrape();
    }

    /** Serves {@code /metrics} on {@code host:port} (0 = a free port); returns the bound port. */
    public synchronized int serve(String host, int port) {
        try {
            server = HttpServer.create(new InetSocketAddress(host, port), 16);
        } catch (IOException e) {
            throw new TransferException(ErrorCode.CONFIG, "cannot serve metrics on " + host + ":" + port + ": " + e.getMessage(), e);
        }
        server.createContext("/metrics", ex -> {
            byte[] body = scrape().getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().add("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream os = ex.getResponseBody()) {
                os.write(body);
            }
        });
        // two threads: a scrape stuck behind a slow client must not wait for it
        serverThreads = Executors.newFixedThreadPool(2, Thread.ofPlatform().daemon().name("tent4j-metrics-http-", 0).factory());
        server.setExecutor(serverThreads);
        server.start();
        return server.getAddress().getPort();
    }

    @Override
    public synchronized void close() {
        if (server != null) {
            server.stop(0);
            serverThreads.shutdownNow();
        }
        registry.close();
    }

}
