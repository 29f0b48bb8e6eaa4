package org.tent4j.spi;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.tent4j.api.ConfigException;
import org.tent4j.api.ConfigValues;

/** A plugin's parsed options. Names are those of its {@link OptionSpec}s; asking for an undeclared name throws. */
public interface OptionValues {
    /**
     * An INT option.
     *
     * @param name the option's name
     * @return its value
     */
    int getInt(String name);

    /**
     * A LONG option.
     *
     * @param name the option's name
     * @return its value
     */
    long getLong(String name);

    /**
     * A size in bytes ({@code 64k}, {@code 1m} and so on are parsed).
     *
     * @param name the option's name
     * @return bytes
     */
    long getSize(String name);

    /**
     * A BOOLEAN option.
     *
     * @param name the option's name
     * @return its value
     */
    boolean getBoolean(String name);

    /**
     * A STRING option, or any option as text.
     *
     * @param name the option's name
     * @return its value
     */
    String getString(String name);

    /**
     * A DURATION option.
     *
     * @param name the option's name
     * @return its value
     */
    Duration getDuration(String name);

    /**
     * Validates and parses {@code values} (option name → text) against {@code specs}; every spec's default fills
     * what is not given. An unknown name or a bad value throws {@link ConfigException} naming {@code prefix + name}.
     *
     * @param prefix the options' key prefix, e.g. {@code transports.tcp.}
     * @param specs  the declared options
     * @param values option name to text, as configured
     * @return the parsed values; a getter for an undeclared name throws {@link IllegalArgumentException}
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
