package org.tent4j.metadata.http;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.function.BooleanSupplier;

import com.sun.net.httpserver.HttpExchange;

/**
 * The metadata protocol ({@link MetadataHttpProtocol}) on one admitted request: GET/PUT/DELETE of a key, the long-poll
 * watch, strict decoding of the query, and the answers. Admission (slots, the waiting line, connection limits) is the
 * server's; everything a client sends is checked here.
 */
final class MetadataRequests {
    private static final long DEFAULT_WATCH_TIMEOUT_MS = 30_000;
    private static final long MAX_WATCH_TIMEOUT_MS = 300_000;

    private final MetadataTable table;
    private final int maxValueBytes;
    /** Whether the server is closing: a watch then answers at once instead of parking. */
    private final BooleanSupplier closing;

    MetadataRequests(MetadataTable table, int maxValueBytes, BooleanSupplier closing) {
        this.table = table;
        this.maxValueBytes = maxValueBytes;
        this.closing = closing;
    }

    /** A request the client got wrong: answered 400 with this message. */
    static final class BadRequestException extends RuntimeException {
        BadRequestException(String message) {
            super(message, null, false, false);
        }
    }

    void handleKey(HttpExchange ex) throws IOException, InterruptedException {
        String key = queryParam(ex, "key");
        if (key == null || key.isEmpty()) {
            throw new BadRequestException("missing query parameter 'key'");
        }
        switch (ex.getRequestMethod()) {
            case "GET" -> {
                MetadataTable.State s = table.get(key);
                ex.getResponseHeaders().set(MetadataHttpProtocol.VERSION_HEADER, s.version());
                if (s.present()) {
                    respond(ex, 200, s.value());
                } else {
                    respond(ex, 404, MetadataHttpProtocol.NOT_FOUND_BODY);
                }
            }
            case "PUT" -> {
                long ttl = 0;
                String ttlText = ex.getRequestHeaders().getFirst(MetadataHttpProtocol.TTL_HEADER);
                if (ttlText != null) {
                    try {
                        ttl = Long.parseLong(ttlText.strip());
                    } catch (NumberFormatException e) {
                        ttl = -1;
                    }
                    if (ttl < 0 || ttl > MetadataTable.MAX_TTL_MILLIS) {
                        throw new BadRequestException(MetadataHttpProtocol.TTL_HEADER + " must be an integer in 0.."
                                + MetadataTable.MAX_TTL_MILLIS + " (milliseconds), got '" + ttlText + "'");
                    }
                }
                String length = ex.getRequestHeaders().getFirst("Content-Length");
                if (length != null && length.strip().length() > 0 && !fits(length.strip())) {
                    respond(ex, 413, "value of '" + key + "' is larger than " + maxValueBytes + " bytes (Content-Length "
                            + length.strip() + ")");
                    return;
                }
                byte[] value;
                try (InputStream in = ex.getRequestBody()) {
                    value = in.readNBytes(maxValueBytes + 1);
                }
                if (value.length > maxValueBytes) {
                    respond(ex, 413, "value of '" + key + "' is larger than " + maxValueBytes + " bytes");
                    return;
                }
                long generation = table.put(key, value, ttl);
                try {
                    table.awaitDurable(generation);
                } catch (MetadataTable.DurabilityTimeoutException e) {
                    respond(ex, 503, e.getMessage());
                    return;
                } catch (IOException e) {
                    respond(ex, 500, "stored in memory but not on disk: " + e.getMessage());
                    return;
                }
                respond(ex, 200, MetadataHttpProtocol.UPDATED_BODY);
            }
            case "DELETE" -> {
                drain(ex);
                MetadataTable.Removal r = table.delete(key);
                try {
                    table.awaitDurable(r.generation());
                } catch (MetadataTable.DurabilityTimeoutException e) {
                    respond(ex, 503, e.getMessage());
                    return;
                } catch (IOException e) {
                    respond(ex, 500, "deleted in memory but not on disk: " + e.getMessage());
                    return;
                }
                ex.getResponseHeaders().set(MetadataHttpProtocol.EXISTED_HEADER, Boolean.toString(r.existed()));
                // Mooncake's Go server answers 200 whether or not the key existed; its clients expect that
                respond(ex, 200, MetadataHttpProtocol.DELETED_BODY);
            }
            default -> {
                drain(ex);
                ex.getResponseHeaders().set("Allow", "GET, PUT, DELETE");
                respond(ex, 405, "method " + ex.getRequestMethod() + " not allowed");
            }
        }
    }

    void handleWatch(HttpExchange ex) throws IOException, InterruptedException {
        drain(ex);
        if (!ex.getRequestMethod().equals("GET")) {
            ex.getResponseHeaders().set("Allow", "GET");
            respond(ex, 405, "watch takes GET");
            return;
        }
        String key = queryParam(ex, "key");
        if (key == null || key.isEmpty()) {
            throw new BadRequestException("missing query parameter 'key'");
        }
        String known = queryParam(ex, "version");
        long timeout = DEFAULT_WATCH_TIMEOUT_MS;
        String t = queryParam(ex, "timeout_ms");
        if (t != null) {
            try {
                timeout = Math.clamp(Long.parseLong(t), 0, MAX_WATCH_TIMEOUT_MS);
            } catch (NumberFormatException e) {
                respond(ex, 400, "timeout_ms must be an integer, got '" + t + "'");
                return;
            }
        }
        MetadataTable.State changed = closing.getAsBoolean() ? null : table.awaitChange(key, known, timeout);
        if (changed == null) {
            ex.getResponseHeaders().set(MetadataHttpProtocol.VERSION_HEADER, table.get(key).version());
            ex.sendResponseHeaders(304, -1);
            return;
        }
        ex.getResponseHeaders().set(MetadataHttpProtocol.VERSION_HEADER, changed.version());
        if (changed.present()) {
            respond(ex, 200, changed.value());
        } else {
            respond(ex, 404, MetadataHttpProtocol.NOT_FOUND_BODY);
        }
    }

    /** Whether a Content-Length of {@code text} is at most the value limit (digits only; anything else is left to the reader). */
    private boolean fits(String text) {
        if (!text.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return true;
        }
        return text.length() <= 10 && Long.parseLong(text) <= maxValueBytes;
    }

    private static void drain(HttpExchange ex) throws IOException {
        try (InputStream in = ex.getRequestBody()) {
            in.transferTo(OutputStream.nullOutputStream());
        }
    }

    static void respond(HttpExchange ex, int status, String body) throws IOException {
        respond(ex, status, body.getBytes(StandardCharsets.UTF_8));
    }

    static void respond(HttpExchange ex, int status, byte[] body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", MetadataHttpProtocol.CONTENT_TYPE);
        ex.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
        if (body.length > 0) {
            try (OutputStream out = ex.getResponseBody()) {
                out.write(body);
            }
        }
    }

    /** The first value of {@code name} in the query, decoded as Go's {@code Query().Get} does ('+' is a space). */
    static String queryParam(HttpExchange ex, String name) {
        return queryParam(ex.getRequestURI().getRawQuery(), name);
    }

    static String queryParam(String rawQuery, String name) {
        if (rawQuery == null) {
            return null;
        }
        for (String pair : rawQuery.split("&")) {
            int eq = pair.indexOf('=');
            String n = eq < 0 ? pair : pair.substring(0, eq);
            if (decode(n, "query parameter name").equals(name)) {
                return eq < 0 ? "" : decode(pair.substring(eq + 1), "query parameter '" + name + "'");
            }
        }
        return null;
    }

    /**
     * Decodes form encoding ('+' is a space, %XX a byte) strictly: a bad escape or bytes that are not UTF-8 are the
     * client's error, where {@link java.net.URLDecoder} would throw or silently substitute U+FFFD (and two
     * different keys would then name one entry).
     */
    static String decode(String text, String what) {
        if (text.indexOf('%') < 0 && text.indexOf('+') < 0) {
            return text;
        }
        byte[] raw = text.getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[raw.length];
        int n = 0;
        for (int i = 0; i < raw.length; i++) {
            byte b = raw[i];
            if (b == '+') {
                out[n++] = ' ';
            } else if (b == '%') {
                int hi = i + 2 < raw.length ? Character.digit(raw[i + 1], 16) : -1;
                int lo = hi >= 0 ? Character.digit(raw[i + 2], 16) : -1;
                if (lo < 0) {
                    throw new BadRequestException(what + " has a bad %-escape at character " + i
                            + " (expected %XX with two hex digits)");
                }
                out[n++] = (byte) (hi << 4 | lo);
                i += 2;
            } else {
                out[n++] = b;
            }
        }
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(out, 0, n)).toString();
        } catch (CharacterCodingException e) {
            throw new BadRequestException(what + " is not valid UTF-8 once %-decoded");
        }
    }
}
