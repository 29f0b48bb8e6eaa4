package org.tent4j.store.cli;

import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/** {@code --name value} / {@code --name=value} / {@code --flag} command-line options, each name checked against a known set. */
final class Options {
    private final Map<String, String> values = new HashMap<>();

    Options(String[] args, Set<String> known, Set<String> flags) {
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument '" + a + "' (options start with --)");
            }
            String name = a.substring(2);
            int eq = name.indexOf('=');
            String inline = eq >= 0 ? name.substring(eq + 1) : null;
            name = eq >= 0 ? name.substring(0, eq) : name;
            if (!known.contains(name) && !flags.contains(name)) {
                throw new IllegalArgumentException("unknown option --" + name + " (known: " + new java.util.TreeSet<>(known) + " " + flags + ")");
            }
            String value;
            if (inline != null) {
                value = inline;
            } else if (flags.contains(name)) {
                value = "true";
            } else if (i + 1 < args.length) {
                value = args[++i];
            } else {
                throw new IllegalArgumentException("option --" + name + " needs a value");
            }
            values.put(name, value);
        }
    }

    String string(String name, String def) {
        return values.getOrDefault(name, def);
    }

    boolean flag(String name) {
        return Boolean.parseBoolean(values.getOrDefault(name, "false"));
    }

    int integer(String name, int def) {
        String v = values.get(name);
        try {
            return v == null ? def : Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " must be an integer: " + v);
        }
    }

    long size(String name, long def) {
        String v = values.get(name);
        return v == null ? def : parseSize(name, v);
    }

    Duration duration(String name, Duration def) {
        String v = values.get(name);
        if (v == null) {
            return def;
        }
        String s = v.trim().toLowerCase(Locale.ROOT);
        try {
            if (s.endsWith("ms")) {
                return Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - 2)));
            }
            if (s.endsWith("s")) {
                return Duration.ofMillis((long) (Double.parseDouble(s.substring(0, s.length() - 1)) * 1000));
            }
            if (s.endsWith("m")) {
                return Duration.ofSeconds(Long.parseLong(s.substring(0, s.length() - 1)) * 60);
            }
            return Duration.ofMillis(Long.parseLong(s));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " must be a duration like 500ms, 10s, 2m: " + v);
        }
    }

    static long parseSize(String name, String v) {
        String s = v.trim().toLowerCase(Locale.ROOT).replace("ib", "").replace("b", "");
        long mul = 1;
        char last = s.isEmpty() ? ' ' : s.charAt(s.length() - 1);
        switch (last) {
            case 'k' -> mul = 1L << 10;
            case 'm' -> mul = 1L << 20;
            case 'g' -> mul = 1L << 30;
            case 't' -> mul = 1L << 40;
            default -> {
            }
        }
        if (mul != 1) {
            s = s.substring(0, s.length() - 1);
        }
        try {
            return Long.parseLong(s) * mul;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " must be a size like 4096, 64k, 16m, 1g: " + v);
        }
    }
}
