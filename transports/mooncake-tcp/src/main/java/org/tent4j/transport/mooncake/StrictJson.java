package org.tent4j.transport.mooncake;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * A small, strict JSON reader for Mooncake's metadata (RFC 8259, nothing more): objects become {@link Map}s in
 * document order, arrays {@link List}s, integers {@link BigInteger} (Mooncake writes u64 addresses), other numbers
 * {@link BigDecimal}, {@code null} Java null. A plugin on te-api only has no JSON library, and this input comes
 * from the network, so nesting is bounded, duplicate keys and trailing text are refused, and every error names the
 * offset. Writing is {@link #quote} only: Mooncake's descriptors are flat enough to build by hand.
 */
final class StrictJson {
    private static final int MAX_DEPTH = 32;

    private final String text;
    private int at;

    private StrictJson(String text) {
        this.text = text;
    }

    /** Parses one JSON value; trailing whitespace (jsoncpp ends with a newline) is allowed, anything else is not. */
    static Object parse(String text) {
        StrictJson p = new StrictJson(text);
        p.skipSpace();
        Object v = p.value(0);
        p.skipSpace();
        if (p.at != text.length()) {
            throw p.error("unexpected text after the value");
        }
        return v;
    }

    /**
     * Reads a JSON object of at most {@code maxBytes} UTF-8 bytes; {@code bad} builds the error for the whole value
     * ("over the limit", "not JSON", "not a JSON object"), so each caller names its own key.
     */
    static Map<?, ?> parseObject(byte[] json, int maxBytes, Function<String, RuntimeException> bad) {
        if (json.length > maxBytes) {
            throw bad.apply(json.length + " bytes, over the " + (maxBytes >> 20) + " MiB limit"
                    + " (MC_HANDSHAKE_MAX_LENGTH)");
        }
        Object root;
        try {
            root = parse(new String(json, StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            throw bad.apply("not JSON: " + e.getMessage());
        }
        if (!(root instanceof Map<?, ?> object)) {
            throw bad.apply("not a JSON object");
        }
        return object;
    }

    private Object value(int depth) {
        if (depth > MAX_DEPTH) {
            throw error("nested deeper than " + MAX_DEPTH + " levels");
        }
        if (at >= text.length()) {
            throw error("unexpected end of input");
        }
        char c = text.charAt(at);
        return switch (c) {
            case '{' -> object(depth);
            case '[' -> array(depth);
            case '"' -> string();
            case 't' -> literal("true", Boolean.TRUE);
            case 'f' -> literal("false", Boolean.FALSE);
            case 'n' -> literal("null", null);
            default -> {
                if (c == '-' || (c >= '0' && c <= '9')) {
                    yield number();
                }
                throw error("unexpected character '" + c + "'");
            }
        };
    }

    private Map<String, Object> object(int depth) {
        at++;
        Map<String, Object> out = new LinkedHashMap<>();
        skipSpace();
        if (peek() == '}') {
            at++;
            return out;
        }
        while (true) {
            skipSpace();
            if (peek() != '"') {
                throw error("expected a member name in double quotes");
            }
            int keyAt = at;
            String key = string();
            skipSpace();
            expect(':');
            skipSpace();
            Object v = value(depth + 1);
            if (out.containsKey(key)) {
                at = keyAt;
                throw error("member \"" + key + "\" appears twice");
            }
            out.put(key, v);
            skipSpace();
            char c = peek();
            at++;
            if (c == '}') {
                return out;
            }
            if (c != ',') {
                at--;
                throw error("expected ',' or '}' in an object");
            }
        }
    }

    private List<Object> array(int depth) {
        at++;
        List<Object> out = new ArrayList<>();
        skipSpace();
        if (peek() == ']') {
            at++;
            return out;
        }
        while (true) {
            skipSpace();
            out.add(value(depth + 1));
            skipSpace();
            char c = peek();
            at++;
            if (c == ']') {
                return out;
            }
            if (c != ',') {
                at--;
                throw error("expected ',' or ']' in an array");
            }
        }
    }

    private String string() {
        at++;
        StringBuilder sb = new StringBuilder();
        while (true) {
            if (at >= text.length()) {
                throw error("unterminated string");
            }
            char c = text.charAt(at++);
            if (c == '"') {
                return sb.toString();
            }
            if (c < 0x20) {
                at--;
                throw error("control character in a string");
            }
            if (c != '\\') {
                sb.append(c);
                continue;
            }
            if (at >= text.length()) {
                throw error("unterminated escape");
            }
            char e = text.charAt(at++);
            switch (e) {
                case '"', '\\', '/' -> sb.append(e);
                case 'b' -> sb.append('\b');
                case 'f' -> sb.append('\f');
                case 'n' -> sb.append('\n');
                case 'r' -> sb.append('\r');
                case 't' -> sb.append('\t');
                case 'u' -> {
                    if (at + 4 > text.length()) {
                        throw error("truncated \\u escape");
                    }
                    try {
                        sb.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                    } catch (NumberFormatException ex) {
                        throw error("bad \\u escape");
                    }
                    at += 4;
                }
                default -> {
                    at--;
                    throw error("bad escape '\\" + e + "'");
                }
            }
        }
    }

    private Object number() {
        int start = at;
        if (peek() == '-') {
            at++;
        }
        if (peek() == '0') {
            at++;
        } else if (isDigit(peek())) {
            while (isDigit(peek())) {
                at++;
            }
        } else {
            throw error("a number needs digits");
        }
        boolean integral = true;
        if (peek() == '.') {
            integral = false;
            at++;
            if (!isDigit(peek())) {
                throw error("a fraction needs digits");
            }
            while (isDigit(peek())) {
                at++;
            }
        }
        if (peek() == 'e' || peek() == 'E') {
            integral = false;
            at++;
            if (peek() == '+' || peek() == '-') {
                at++;
            }
            if (!isDigit(peek())) {
                throw error("an exponent needs digits");
            }
            while (isDigit(peek())) {
                at++;
            }
        }
        if (at - start > 400) {
            at = start;
            throw error("number longer than 400 characters");
        }
        String n = text.substring(start, at);
        return integral ? new BigInteger(n) : new BigDecimal(n);
    }

    private Object literal(String word, Object value) {
        if (!text.startsWith(word, at)) {
            throw error("unexpected word");
        }
        at += word.length();
        return value;
    }

    private void expect(char c) {
        if (peek() != c) {
            throw error("expected '" + c + "'");
        }
        at++;
    }

    private char peek() {
        return at < text.length() ? text.charAt(at) : '\0';
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private void skipSpace() {
        while (at < text.length()) {
            char c = text.charAt(at);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            at++;
        }
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException(what + " at offset " + at);
    }

    /** {@code s} as a JSON string literal. */
    static String quote(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.append('"').toString();
    }
}
