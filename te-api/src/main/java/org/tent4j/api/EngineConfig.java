package org.tent4j.api;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What an engine is built from: flat dotted keys ({@code slice.size}, {@code transports.tcp.lanes}) with string
 * values, an optional JSON or properties file, and environment overrides.
 *
 * <p>Precedence, lowest first: built-in defaults, fallbacks set on the builder ({@link Builder#fallback}), the file
 * (nested JSON objects are flattened with dots), values set on the builder, then environment variables. A key
 * {@code a.b_c} is overridden by {@code TENT4J_A_B_C}; the variable {@code TENT4J_CONFIG} names a file when the
 * builder names none. The engine rejects an unknown key or a bad value with a {@link ConfigException} naming the key.
 *
 * <p>Values are strings; sizes accept {@code 4096}, {@code 64k}, {@code 1m}, {@code 1MiB}, {@code 2g};
 * durations accept {@code 250ms}, {@code 30s}, {@code 2m}, or plain milliseconds.
 */
public final class EngineConfig {
    /** Name of this engine's segment. Default: {@code host:port} of the control plane in p2p mode. */
    public static final String SEGMENT_NAME = "segment.name";
    /** Metadata store URI(s), comma separated: {@code p2p} (default), {@code memory://name}, {@code etcd://…}. */
    public static final String METADATA_URI = "metadata.uri";
    /** Host the control plane binds to and advertises. Default: the first non-loopback IPv4 address. */
    public static final String CONTROL_HOST = "control.host";
    /** Port of the control plane; 0 picks a free one. */
    public static final String CONTROL_PORT = "control.port";
    /** Transports this engine runs, comma separated, or {@code *} for all that are available. */
    public static final String TRANSPORTS_ENABLED = "transports.enabled";
    /** Default preference order of transports, comma separated; those not listed follow in their own rank order. */
    public static final String TRANSPORTS_PREFERENCE = "transports.preference";
    /** Whether a request may fall back to a transport after the preferred one (logged as a WARN line). */
    public static final String TRANSPORTS_FALLBACK = "transports.fallback";
    /** Largest piece a request is cut into before it is handed to a transport. */
    public static final String SLICE_SIZE = "slice.size";
    /** Worker threads for blocking transport work and completions. */
    public static final String WORKERS = "workers";
    /** How long a task may wait for a peer before it fails (when the request sets no deadline). */
    public static final String TRANSFER_TIMEOUT = "transfer.timeout";
    /** Port of the Prometheus endpoint; -1 (default) serves none, 0 picks a free one. */
    public static final String METRICS_PORT = "metrics.port";

    private final Map<String, String> fallbacks;
    private final Map<String, String> values;
    private final Path file;
    private final Map<String, String> environment;

    private EngineConfig(Builder b) {
        this.fallbacks = Map.copyOf(b.fallbacks);
        this.values = Map.copyOf(b.values);
        this.file = b.file;
        this.environment = Map.copyOf(b.environment);
    }

    /**
     * A builder with no values set.
     *
     * @return a builder consulting {@link System#getenv()} for overrides
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Defaults plus whatever the environment says.
     *
     * @return a config with no builder values and no file
     */
    public static EngineConfig defaults() {
        return builder().build();
    }

    /**
     * Values set on the builder (not yet merged with file, defaults or environment).
     *
     * @return an unmodifiable map
     */
    public Map<String, String> values() {
        return values;
    }

    /**
     * Fallbacks set on the builder: values that hold only where the file, the builder's values and the environment
     * name nothing.
     *
     * @return key to value, as set
     */
    public Map<String, String> fallbacks() {
        return fallbacks;
    }

    /**
     * The file named on the builder.
     *
     * @return the file, or empty when the builder named none ({@code TENT4J_CONFIG} may still name one)
     */
    public Optional<Path> file() {
        return Optional.ofNullable(file);
    }

    /**
     * The environment consulted for overrides.
     *
     * @return an unmodifiable map of variable to value
     */
    public Map<String, String> environment() {
        return environment;
    }

    /**
     * The environment variable that overrides {@code key}.
     *
     * @param key a dotted key, e.g. {@code slice.size}
     * @return {@code TENT4J_} and the key upper-cased, every other character than a letter or digit as {@code _}
     */
    public static String environmentVariable(String key) {
        StringBuilder sb = new StringBuilder("TENT4J_");
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            sb.append(Character.isLetterOrDigit(c) ? Character.toUpperCase(c) : '_');
        }
        return sb.toString();
    }

    /** Collects the values of an {@link EngineConfig}; not thread-safe. */
    public static final class Builder {
        private final Map<String, String> fallbacks = new LinkedHashMap<>();
        private final Map<String, String> values = new LinkedHashMap<>();
        private Path file;
        private Map<String, String> environment = System.getenv();

        private Builder() {
        }

        /**
         * Sets one key; the engine checks keys and values when it is built.
         *
         * @param key   a dotted key
         * @param value its value, stored as {@link String#valueOf(Object)}
         * @return this builder
         * @throws NullPointerException naming the key when {@code value} is {@code null}
         */
        public Builder set(String key, Object value) {
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(value, () -> "value of " + key);
            values.put(key, String.valueOf(value));
            return this;
        }

        /**
         * Sets a fallback for one key: a value of the program's choosing that its user's file, a value set on this
         * builder and the environment each override (a tool's own default, where {@link #set} would override the
         * user's file).
         *
         * @param key   a dotted key
         * @param value its value, stored as {@link String#valueOf(Object)}
         * @return this builder
         * @throws NullPointerException naming the key when {@code value} is {@code null}
         */
        public Builder fallback(String key, Object value) {
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(value, () -> "value of " + key);
            fallbacks.put(key, String.valueOf(value));
            return this;
        }

        /**
         * Sets every entry, as {@link #set} would.
         *
         * @param entries keys and values
         * @return this builder
         */
        public Builder setAll(Map<String, ?> entries) {
            entries.forEach(this::set);
            return this;
        }

        /**
         * A JSON ({@code .json}) or properties file to load below the builder's own values.
         *
         * @param file the file, read when the engine is built
         * @return this builder
         */
        public Builder file(Path file) {
            this.file = file;
            return this;
        }

        /**
         * Replaces the environment consulted for overrides (tests; embedding hosts with their own config).
         *
         * @param environment variable to value; copied
         * @return this builder
         */
        public Builder environment(Map<String, String> environment) {
            this.environment = Map.copyOf(environment);
            return this;
        }

        /**
         * The config; nothing is checked until an engine is built from it.
         *
         * @return a new immutable config
         */
        public EngineConfig build() {

            return new EngineConfig(this);
        }
    }
}
