package org.tent4j.spi;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.tent4j.api.ConfigException;
import org.tent4j.api.ConfigValues;

/** A plugin's parsed options. Names are those of its {@link OptionSpec}s; asking for an undeclared name throws. */
public interface OptionValues {
    int getInt(String name);

    long getLong(String name);

    /** A size in bytes ({@code 64k}, {@code 1m} and so on are parsed). */
    long getSize(String name);

    boolean getBoolean(String name);

    String getString(String name);

    Duration getDuration(String name);

    /**
     * Validates and parses {@code values} (option name → text) against {@code specs}; every spec's default fills
     * what is not given. An unknown name or a bad value throws {@link ConfigException} naming {@code prefix + name}.
     */
    static OptionValues parse(String prefix, List<OptionSpec> specs, Map<String, String> values) {
        Map<String, OptionSpec> byName = new HashMap<>();
        for (OptionSpec s : specs) {
            byName.put(s.name(), s);
        }
        for (String name : values.keySet()) {
            if (!byName.containsKey(name)) {
                throw new ConfigException(prefix + name, "unknown option; known: "
                        + specs.stream().map(OptionSpec::name).sorted().toList());
            }
        }
        Map<String, Object> parsed = new HashMap<>();
        for (OptionSpec s : specs) {
            String key = prefix + s.name();
            String text = values.getOrDefault(s.name(), s.defaultValue());
            Object v = switch (s.type()) {
                case INT -> ConfigValues.parseInt(key, text);
                case LONG -> ConfigValues.parseLong(key, text);
                case SIZE -> ConfigValues.parseSize(key, text);
                case BOOLEAN -> ConfigValues.parseBoolean(key, text);
                case STRING -> text;
                case DURATION -> ConfigValues.parseDuration(key, text);
            };
            parsed.put(s.name(), v);
        }
        return new OptionValues() {
            private Object value(String name) {
                OptionSpec s = byName.get(name);
                if (s == null) {
                    throw new IllegalArgumentException("option '" + prefix + name + "' was never declared");
                }
                return parsed.get(name);
            }

            @Override
            public int getInt(String name) {
                return ((Number) value(name)).intValue();
            }

            @Override
            public long getLong(String name) {
                return ((Number) value(name)).longValue();
            }

            @Override
            public long getSize(String name) {
                return ((Number) value(name)).longValue();
            }

            @Override
            public boolean getBoolean(String name) {
                return (Boolean) value(name);
            }

            @Override
            public String getString(String name) {
                return String.valueOf(value(name));
            }

            @Override
            public Duration getDuration(String name) {
                return (Duration) value(name);
            }
        };
    }
}
