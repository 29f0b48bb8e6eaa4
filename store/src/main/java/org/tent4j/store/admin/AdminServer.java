package org.tent4j.store.admin;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.MasterState;
import org.tent4j.store.master.MasterState.ClientView;
import org.tent4j.store.master.MasterState.KeyView;
import org.tent4j.store.master.MasterState.SegmentView;
import org.tent4j.store.rpc.MasterServer;

/**
 * The master's admin HTTP endpoints: {@code /health}, {@code /metrics} (Prometheus), {@code /segments},
 * {@code /clients}, {@code /keys?limit=}, {@code /key?key=} (JSON), and {@code /} (a status page for people).
 * Read-only.
 */
public final class AdminServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AdminServer.class);
    private static final int MAX_KEYS = 10_000;
    /**
     * How long the JDK's HTTP server lets a client take to send its request before closing the connection: without it,
     * two clients that send half a request each hold both admin threads, and the page and /health stop answering. The
     * JDK reads it once per JVM, when its first HTTP server starts; a value set on the command line wins.
     */
    static final String REQUEST_TIME_PROPERTY = "sun.net.httpserver.maxReqTime";

    static {
        if (System.getProperty(REQUEST_TIME_PROPERTY) == null) {
            System.setProperty(REQUEST_TIME_PROPERTY, "30");
        }
    }

    private final MasterServer master;
    private final HttpServer http;

    private AdminServer(MasterServer master, HttpServer http) {
        this.master = master;
        this.http = http;
    }

    public static AdminServer start(MasterServer master, String host, int port) throws IOException {
        HttpServer http = HttpServer.create(new InetSocketAddress(host, port), 0);
        AdminServer admin = new AdminServer(master, http);
        http.createContext("/", admin::handle);
        http.setExecutor(Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "store-admin-http");
            t.setDaemon(true);
            return t;
        }));
        http.start();
        LOG.info("store admin HTTP on {}:{}", host, http.getAddress().getPort());
        if (!MasterServer.isLoopback(host)) {
            // the admin port has no authentication of its own: it shows keys, segments and clients to whoever asks
            LOG.warn("store admin HTTP on {}:{} has no authentication: it shows every key, segment, client and metric "
                    + "to EVERYONE who reaches this address. Bind 127.0.0.1, or firewall it", host, http.getAddress().getPort());
        }
        return admin;
    }

    public int port() {
        return http.getAddress().getPort();
    }

    private void handle(HttpExchange ex) throws IOException {
        try {
            if (!"GET".equals(ex.getRequestMethod())) {
                send(ex, 405, "text/plain", "only GET is served here\n");
                return;
            }
            Map<String, String> q = query(ex.getRequestURI().getRawQuery());
            MasterState state = master.master().state();
            long now = master.master().now();
            switch (ex.getRequestURI().getPath()) {
                case "/" -> {
                    var log = master.master().log();
                    send(ex, 200, "text/html; charset=utf-8", StatusPage.render(state, master.stats(), now,
                            log == null ? null : log.id(), log == null ? null : log.role(), log == null ? null : log.metrics()));
                }
                case "/health" -> send(ex, 200, "application/json", health(state));
                case "/metrics" -> {
                    var log = master.master().log();
                    send(ex, 200, "text/plain; version=0.0.4", Metrics.render(state, master.stats(),
                            log == null ? null : log.role(), log == null ? null : log.metrics()));
                }
                case "/segments" -> send(ex, 200, "application/json", segmentsJson(state.segments()));
                case "/clients" -> send(ex, 200, "application/json", clientsJson(state.clients(now)));
                case "/keys" -> {
                    int limit = Math.min(MAX_KEYS, Math.max(0, parseInt(q.get("limit"), 100)));
                    StringBuilder sb = new StringBuilder("[");
                    List<String> keys = state.keys(limit);
                    for (int i = 0; i < keys.size(); i++) {
                        sb.append(i > 0 ? "," : "").append(Json.str(keys.get(i)));
                    }
                    send(ex, 200, "application/json", sb.append("]\n").toString());
                }
                case "/key" -> {
                    String key = q.get("key");
                    KeyView v = key == null ? null : state.describe(now, key);
                    if (v == null) {
                        send(ex, 404, "application/json", "{\"error\":\"OBJECT_NOT_FOUND\",\"key\":" + Json.str(key == null ? "" : key) + "}\n");
                    } else {
                        send(ex, 200, "application/json", keyJson(v));
                    }
                }
                default -> send(ex, 404, "text/plain", "no such page: " + ex.getRequestURI().getPath() + "\n");
            }
        } catch (StoreException e) {
            send(ex, 400, "application/json", "{\"error\":" + Json.str(e.error().name()) + ",\"message\":" + Json.str(e.getMessage()) + "}\n");
        } catch (RuntimeException e) {
            LOG.warn("admin request {} failed", ex.getRequestURI(), e);
            send(ex, 500, "text/plain", "internal error: " + e + "\n");
        } finally {
            ex.close();
        }
    }

    private static String segmentsJson(List<SegmentView> segs) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < segs.size(); i++) {
            SegmentView s = segs.get(i);
            sb.append(i > 0 ? "," : "").append("{\"id\":").append(Json.str(s.id())).append(",\"engineSegment\":").append(Json.str(s.engineSegment()))
                    .append(",\"host\":").append(Json.str(s.host())).append(",\"owner\":").append(Json.str(s.owner()))
                    .append(",\"capacity\":").append(s.capacity()).append(",\"used\":").append(s.used())
                    .append(",\"largestFree\":").append(s.largestFree())
                    .append(",\"tier\":\"").append(s.tier().name().toLowerCase(java.util.Locale.ROOT)).append("\"}");
        }
        return sb.append("]\n").toString();
    }

    private static String clientsJson(List<ClientView> clients) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < clients.size(); i++) {
            ClientView c = clients.get(i);
            sb.append(i > 0 ? "," : "").append("{\"id\":").append(Json.str(c.id())).append(",\"segments\":").append(c.segments())
                    .append(",\"silentMillis\":").append(c.silentNanos() / 1_000_000)
                    .append(",\"reservedBytes\":").append(c.reservedBytes()).append('}');
        }
        return sb.append("]\n").toString();
    }

    private static String keyJson(KeyView v) {
        StringBuilder sb = new StringBuilder("{\"key\":").append(Json.str(v.key())).append(",\"size\":").append(v.size())
                .append(",\"state\":").append(Json.str(v.state())).append(",\"leaseRemainingMillis\":").append(v.leaseRemainingNanos() / 1_000_000)
                .append(",\"hardPin\":").append(v.hardPin()).append(",\"softPin\":").append(v.softPin())
                .append(",\"askedReplicas\":").append(v.askedReplicas()).append(",\"replicas\":[");
        for (int i = 0; i < v.replicas().size(); i++) {
            var r = v.replicas().get(i);
            sb.append(i > 0 ? "," : "").append("{\"segment\":").append(Json.str(r.segmentId())).append(",\"engineSegment\":")
                    .append(Json.str(r.engineSegment())).append(",\"address\":").append(r.address()).append('}');
        }
        return sb.append("]}\n").toString();
    }

    private static Map<String, String> query(String raw) {
        Map<String, String> q = new HashMap<>();
        if (raw == null || raw.length() > 8192) {
            return q;
        }
        for (String part : raw.split("&")) {
            int eq = part.indexOf('=');
            if (eq > 0) {
                q.put(URLDecoder.decode(part.substring(0, eq), StandardCharsets.UTF_8), URLDecoder.decode(part.substring(eq + 1), StandardCharsets.UTF_8));
            }
        }
        return q;
    }

    private static int parseInt(String s, int def) {
        try {
            return s == null ? def : Integer.parseInt(s);
        } catch (NumberFormatException e) {
            return def;
        }
    }

    private static void send(HttpExchange ex, int code, String type, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", type);
        ex.sendResponseHeaders(code, b.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(b);
        }
    }

    /**
     * {@code status}, the role ({@code leader}: this master applies and serves; {@code follower}: it refuses every
     * store call with {@code NOT_LEADER}; a master in memory always leads), and on a durable master its term and the
     * leader it knows ({@code null} when none), so operators and scripts tell them apart.
     */
    private String health(org.tent4j.store.master.MasterState state) {
        var log = master.master().log();
        StringBuilder b = new StringBuilder("{\"status\":\"ok\"");
        if (log == null) {
            b.append(",\"role\":\"leader\"");
        } else {
            var role = log.role();
            b.append(",\"role\":\"").append(role.leader() ? "leader" : "follower").append('"')
                    .append(",\"id\":").append(Json.str(log.id()))
                    .append(",\"term\":").append(role.term())
                    .append(",\"leader_id\":").append(role.leaderId() == null ? "null" : Json.str(role.leaderId()))
                    .append(",\"leader_address\":").append(role.leaderRpc() == null ? "null" : Json.str(role.leaderRpc()));
        }
        return b.append(",\"objects\":").append(state.objectCount()).append(",\"segments\":")
                .append(state.segments().size()).append("}\n").toString();
    }

    @Override
    public void close() {
        http.stop(0);
        ((java.util.concurrent.ExecutorService) http.getExecutor()).shutdownNow();
    }
}
