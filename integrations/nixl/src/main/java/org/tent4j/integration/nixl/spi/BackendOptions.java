package org.tent4j.integration.nixl.spi;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A backend's effective options: every spec's key with the caller's value or the default, already type-checked. */
public final class BackendOptions {
    private final Map<String, String> raw;
    private final Map<String, Object> typed;

    private BackendOptions(Map<String, String> raw, Map<String, Object> typed) {
        this.raw = Collections.unmodifiableMap(raw);
        this.typed = typed;
    }

    /**
     * Validates {@code given} against {@code specs}: unknown keys and bad values fail with an
     * {@link IllegalArgumentException} naming the key (and, for an unknown key, the keys the backend accepts).
     */
    public static BackendOptions resolve(String backendId, List<OptionSpec> specs, Map<String, String> given) {
        Map<String, OptionSpec> byKey = new LinkedHashMap<>();
        specs.forEach(s -> byKey.put(s.key(), s));
        for (String k : given.keySet()) {
            if (!byKey.containsKey(k)) {
                throw new IllegalArgumentException("backend '" + backendId + "' has no option '" + k + "' (it accepts " + byKey.keySet() + ")");
            }
        }
        Map<String, String> raw = new LinkedHashMap<>();
        Map<String, Object> typed = new LinkedHashMap<>();
        for (OptionSpec s : specs) {
            String v = given.getOrDefault(s.key(), s.defaultValue());
            typed.put(s.key(), s.parse(v));
            raw.put(s.key(), v);
        }
        return new BackendOptions(raw, typed);
    }

    /** Effective values as strings, in spec order. */
    public Map<String, String> values() {
        return raw;
    }

    public String string(String key) {
        return (String) get(key);
    }

    public int integer(String key) {
        return (Integer) get(key);
    }

    public boolean bool(String key) {
        return (Boolean) get(key);
    }

    public long size(String key) {
        return (Long) get(key);
    }

    public Duration duration(String key) {
        return (Duration) get(key);
    }

    private Object get(String key) {
        Object v = typed.get(key);
        if (v == null) {
            throw new IllegalArgumentException("no option '" + key + "' (known: " + typed.keySet() + ")");
        }
        return v;
    }
}
