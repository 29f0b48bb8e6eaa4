package org.tent4j.integration.nixl.spi;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * One option a backend accepts: its key, type, default and what it does. An agent shows these before a backend is
 * created, rejects keys no spec names, and checks each value against its type.
 */
public record OptionSpec(String key, Type type, String defaultValue, String doc) {
    public enum Type { STRING, INT, BOOLEAN, SIZE, DURATION }

    public OptionSpec {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(defaultValue, "default of " + key);
        parse(key, type, defaultValue);
    }

    /** {@code value} as this option's type; {@link IllegalArgumentException} naming the key and value otherwise. */
    public Object parse(String value) {
        return parse(key, type, value);
    }

    private static Object parse(String key, Type type, String value) {
        String v = value.strip();
        try {
            return switch (type) {
                case STRING -> v;
                case INT -> Integer.parseInt(v);
                case BOOLEAN -> switch (v.toLowerCase(Locale.ROOT)) {
                    case "true" -> true;
                    case "false" -> false;
                    default -> throw new IllegalArgumentException("not true or false");
                };
                case SIZE -> size(v);
                case DURATION -> duration(v);
            };
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("option '" + key + "' (" + type.name().toLowerCase(Locale.ROOT) + "): bad value '"
                    + value + "': " + e.getMessage(), e);
        }
    }

    private static long size(String v) {
        String s = v.toLowerCase(Locale.ROOT).replace("ib", "").replace("b", "");
        long unit = 1;
        char last = s.isEmpty() ? ' ' : s.charAt(s.length() - 1);
        switch (last) {
            case 'k' -> unit = 1L << 10;
            case 'm' -> unit = 1L << 20;
            case 'g' -> unit = 1L << 30;
            default -> { }
        }
        long n = Long.parseLong(unit == 1 ? s : s.substring(0, s.length() - 1));
        if (n < 0) {
            throw new IllegalArgumentException("negative size");
        }
        return Math.multiplyExact(n, unit);
    }

    private static Duration duration(String v) {
        String s = v.toLowerCase(Locale.ROOT);
        Duration d;
        if (s.endsWith("ms")) {
            d = Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - 2)));
        } else if (s.endsWith("s")) {
            d = Duration.ofSeconds(Long.parseLong(s.substring(0, s.length() - 1)));
        } else if (s.endsWith("m")) {
            d = Duration.ofMinutes(Long.parseLong(s.substring(0, s.length() - 1)));
        } else {
            d = Duration.ofMillis(Long.parseLong(s));
        }
        if (d.isNegative()) {
            throw new IllegalArgumentException("negative duration");
        }
        return d;
    }
}
