package org.tent4j.metadata.http;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/**
 * Behaves as Mooncake's reference Go server ({@code example/http-metadata-server/main.go}): an in-memory map on
 * {@code GET|PUT|DELETE /metadata?key=}, DELETE answering 200 whether or not the key existed, no TTL, no watch, and
 * 404 for every other path.
 */
final class PlainMooncakeServer implements AutoCloseable {
    private final HttpServer server;
    private final Map<String, byte[]> store = new ConcurrentHashMap<>();

    PlainMooncakeServer() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
        server.createContext("/", this::handle);
        server.start();
    }

    String endpoint() {
        return "http://127.0.0.1:" + server.getAddress().getPort() + "/metadata";
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            byte[] body;
            try (InputStream in = ex.getRequestBody()) {
                body = in.readAllBytes();
            }
            if (!ex.getRequestURI().getRawPath().equals("/metadata")) {
                send(ex, 404, "404 page not found".getBytes(StandardCharsets.UTF_8));
                return;
            }
            String key = MetadataRequests.queryParam(ex.getRequestURI().getRawQuery(), "key");
            key = key == null ? "" : key;
            switch (ex.getRequestMethod()) {
                case "GET" -> {
                    byte[] v = store.get(key);
                    if (v == null) {
                        send(ex, 404, "metadata not found".getBytes(StandardCharsets.UTF_8));
                    } else {
                        send(ex, 200, v);
                    }
                }
                case "PUT" -> {
                    store.put(key, body);
                    send(ex, 200, "metadata updated".getBytes(StandardCharsets.UTF_8));
                }
                case "DELETE" -> {
                    store.remove(key);
                    send(ex, 200, "metadata deleted".getBytes(StandardCharsets.UTF_8));
                }
                default -> send(ex, 405, new byte[0]);
            }
        }
    }

    private static void send(HttpExchange ex, int status, byte[] body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", "application/json; charset=utf-8");
        ex.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
        if (body.length > 0) {
            try (OutputStream out = ex.getResponseBody()) {
                out.write(body);
            }
        }
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
