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
    /** How a value is parsed (see {@link org.tent4j.api.ConfigValues}). */
    public enum Type {
        /** A decimal {@code int}. */
        INT,
        /** A decimal {@code long}. */
        LONG,
        /** Bytes: {@code 4096}, {@code 64k}, {@code 1m}. */
        SIZE,
        /** {@code true}/{@code false} (also yes/no, on/off, 1/0). */
        BOOLEAN,
        /** Text as given. */
        STRING,
        /** {@code 250ms}, {@code 30s}, {@code 2m}, or plain milliseconds. */
        DURATION
    }

    /**
     * Checks the required components.
     *
     * @throws NullPointerException naming {@code name}, {@code type} or {@code defaultValue} when it is {@code null}
     */
    public OptionSpec {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(defaultValue, "defaultValue");
    }

    /**
     * The factory plugins use instead of the constructor.
     *
     * @param name         option name within the plugin
     * @param type         how the value is parsed
     * @param defaultValue the default, stored as {@link String#valueOf(Object)}
     * @param description  one line for docs and {@code tent4j doctor}
     * @return the spec
     */
    public static OptionSpec of(String name, Type type, Object defaultValue, String description) {

        return new OptionSpec(name, type, String.valueOf(defaultValue), description);
    }
}
