package org.tent4j.api;

import java.time.Duration;
import java.util.Locale;

/** Parses configuration values as {@link EngineConfig} documents them; errors name the key. */
public final class ConfigValues {
    private ConfigValues() {
    }

    /**
     * {@code 4096}, {@code 64k}, {@code 64KiB}, {@code 1m}, {@code 2g}, {@code 1t} (binary multiples).
     *
     * @param key  the key the value came from, named in errors
     * @param text the value
     * @return bytes
     * @throws ConfigException naming {@code key} for a malformed, negative or overflowing size
     */
    public static long parseSize(String key, String text) {
        String t = text.strip().toLowerCase(Locale.ROOT);
        if (t.endsWith("ib")) {
            t = t.substring(0, t.length() - 2);
        } else if (t.endsWith("b")) {
            t = t.substring(0, t.length() - 1);
        }
        int shift = 0;
        if (!t.isEmpty()) {
            switch (t.charAt(t.length() - 1)) {
                case 'k' -> shift = 10;
                case 'm' -> shift = 20;
                case 'g' -> shift = 30;
                case 't' -> shift = 40;
                default -> shift = -1;
            }
            if (shift >= 0) {
                t = t.substring(0, t.length() - 1).strip();
            } else {
                shift = 0;
            }
        }
        try {
            long v = Long.parseLong(t);
            if (v < 0) {
                throw new ConfigException(key, "size must not be negative, got '" + text + "'");
            }
            if (shift > 0 && v > (Long.MAX_VALUE >> shift)) {
                throw new ConfigException(key, "size '" + text + "' is too large");
            }
            return v << shift;
        } catch (NumberFormatException e) {
            throw new ConfigException(key, "expected a size such as 4096, 64k or 1m, got '" + text + "'");
        }
    }

    /**
     * {@code 250ms}, {@code 30s}, {@code 2m}, {@code 1h}, or plain milliseconds.
     *
     * @param key  the key the value came from, named in errors
     * @param text the value
     * @return the duration
     * @throws ConfigException naming {@code key} for a malformed duration
     */
    public static Duration parseDuration(String key, String text) {
        String t = text.strip().toLowerCase(Locale.ROOT);
        try {
            if (t.endsWith("ms")) {
                return Duration.ofMillis(Long.parseLong(t.substring(0, t.length() - 2).strip()));
            } else if (t.endsWith("us")) {
                return Duration.ofNanos(1000 * Long.parseLong(t.substring(0, t.length() - 2).strip()));
            } else if (t.endsWith("s")) {
                return Duration.ofSeconds(Long.parseLong(t.substring(0, t.length() - 1).strip()));
            } else if (t.endsWith("m")) {
                return Duration.ofMinutes(Long.parseLong(t.substring(0, t.length() - 1).strip()));
            } else if (t.endsWith("h")) {
                return Duration.ofHours(Long.parseLong(t.substring(0, t.length() - 1).strip()));
            }
            return Duration.ofMillis(Long.parseLong(t));
        } catch (NumberFormatException e) {
            throw new ConfigException(key, "expected a duration such as 250ms, 30s or 2m, got '" + text + "'");
        }
    }

    /**
     * {@code true}/{@code yes}/{@code on}/{@code 1} or {@code false}/{@code no}/{@code off}/{@code 0}, any case.
     *
     * @param key  the key the value came from, named in errors
     * @param text the value
     * @return the flag
     * @throws ConfigException naming {@code key} for anything else
     */
    public static boolean parseBoolean(String key, String text) {
        return switch (text.strip().toLowerCase(Locale.ROOT)) {
            case "true", "yes", "on", "1" -> true;
            case "false", "no", "off", "0" -> false;
            default -> throw new ConfigException(key, "expected true or false, got '" + text + "'");
        };
    }

    /**
     * A decimal {@code int}.
     *
     * @param key  the key the value came from, named in errors
     * @param text the value
     * @return the number
     * @throws ConfigException naming {@code key} when it is not one
     */
    public static int parseInt(String key, String text) {
        try {
            return Integer.parseInt(text.strip());
        } catch (NumberFormatException e) {
            throw new ConfigException(key, "expected an integer, got '" + text + "'");
        }
    }

    /**
     * A decimal {@code long}.
     *
     * @param key  the key the value came from, named in errors
     * @param text the value
     * @return the number
     * @throws ConfigException naming {@code key} when it is not one
     */
    public static long parseLong(String key, String text) {

        try {
            return Long.parseLong(text.strip());
        } catch (NumberFormatException e) {
            throw new ConfigException(key, "expected an integer, got '" + text + "'");
        }
    }
}
