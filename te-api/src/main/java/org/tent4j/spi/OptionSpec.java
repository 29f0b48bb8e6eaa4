package org.tent4j.spi;

import java.util.Objects;

/**
 * One typed option a plugin accepts, configured as {@code transports.<id>.<name>} (or the metadata / platform
 * equivalent). The runtime rejects unknown option names and values that do not parse as {@link #type()}.
 *
 * <p>Make one with {@code of(...)}. The canonical constructor is not part of the contract: a component added in a later
 * version changes it, while {@code of} keeps its signature beside a new overload (BoundariesTest keeps every module on
 * {@code of}).
 *
 * @param name         option name within the plugin, e.g. {@code lanes}
 * @param type         how the value is parsed
 * @param defaultValue the default, as text
 * @param description  one line for docs and {@code tent4j doctor}
 */
public record OptionSpec(String name, Type type, String defaultValue, String description) {
    public enum Type { INT, LONG, SIZE, BOOLEAN, STRING, DURATION }

    public OptionSpec {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(defaultValue, "defaultValue");
    }

    public static OptionSpec of(String name, Type type, Object defaultValue, String description) {
        return new OptionSpec(name, type, String.valueOf(defaultValue), description);
    }
}
