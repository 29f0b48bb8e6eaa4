package org.tent4j.runtime.select;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.ToIntFunction;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.tent4j.api.ConfigException;
import org.tent4j.api.ConfigValues;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Priority;
import org.tent4j.api.TransferRequest;

/**
 * One rule of the {@code policy} config key (a JSON array, evaluated in order, first match wins), as TENT's:
 * <pre>{"name": "kv-fast", "segment_type": "memory", "local_memory": "cpu", "remote_memory": "*", "priority": "high",
 *  "min_size": "64k", "max_size": "1g", "same_host": false, "transports": ["rdma", "tcp"], "devices": ["lane-0"]}</pre>
 * Every field but {@code name} and {@code transports} is optional. A request naming a policy uses that rule whatever it
 * matches. {@code transports} is the ordered list of transports the rule allows; {@code devices} restricts the paths.
 */
public record Policy(String name, MemoryKind localMemory, MemoryKind remoteMemory, Priority priority, long minSize,
              long maxSize, Boolean sameHost, List<String> transports, Set<String> devices, int[] order) {
    public static final String KEY = "policy";
    private static final Set<String> FIELDS = Set.of("name", "segment_type", "local_memory", "remote_memory", "priority",
            "min_size", "max_size", "same_host", "transports", "devices");

    boolean matches(TransferRequest r, MemoryKind local, MemoryKind remote, boolean sameMachine) {
        return (localMemory == null || localMemory == local) && (remoteMemory == null || remoteMemory == remote)
                && (priority == null || priority == r.priority()) && r.length() >= minSize && r.length() <= maxSize
                && (sameHost == null || sameHost == sameMachine);
    }

    /**
     * @param known   every transport id on the class path (a rule may name one this engine does not run)
     * @param indexOf index of a running transport, or -1
     */
    public static List<Policy> parse(String json, Set<String> known, ToIntFunction<String> indexOf) {
        if (json == null || json.isBlank()) {
            return List.of();
        }
        JsonNode root;
        try {
            root = new ObjectMapper().readTree(json);
        } catch (IOException e) {
            throw new ConfigException(KEY, "not valid JSON: " + e.getMessage());
        }
        if (root == null || !root.isArray()) {
            throw new ConfigException(KEY, "must be a JSON array of rules");
        }
        List<Policy> out = new ArrayList<>();
        Set<String> names = new LinkedHashSet<>();
        int n = 0;
        for (JsonNode rule : root) {
            n++;
            String where = "rule " + n;
            if (!rule.isObject()) {
                throw new ConfigException(KEY, where + " is not an object");
            }
            for (Iterator<String> it = rule.fieldNames(); it.hasNext(); ) {
                String f = it.next();
                if (!FIELDS.contains(f)) {
                    throw new ConfigException(KEY, where + ": unknown field '" + f + "' (known: " + FIELDS.stream().sorted().toList() + ")");
                }
            }
            String name = rule.path("name").asText("");
            if (name.isEmpty()) {
                throw new ConfigException(KEY, where + ": 'name' is required");
            }
            where = where + " ('" + name + "')";
            if (!names.add(name)) {
                throw new ConfigException(KEY, where + ": a rule of that name already exists");
            }
            String segType = rule.path("segment_type").asText("memory");
            if (!segType.equals("memory")) {
                throw new ConfigException(KEY, where + ": segment_type '" + segType + "' is not supported (only memory segments exist yet)");
            }
            List<String> transports = new ArrayList<>();
            for (JsonNode t : rule.path("transports")) {
                String id = t.asText();
                if (!known.contains(id)) {
                    throw new ConfigException(KEY, where + ": no transport '" + id + "' on the class path (found: " + known + ")");
                }
                transports.add(id);
            }
            if (transports.isEmpty()) {
                throw new ConfigException(KEY, where + ": 'transports' must list at least one transport");
            }
            Set<String> devices = null;
            if (rule.has("devices")) {
                devices = new LinkedHashSet<>();
                for (JsonNode d : rule.get("devices")) {
                    devices.add(d.asText());
                }
            }
            int[] order = transports.stream().mapToInt(indexOf).filter(i -> i >= 0).toArray();
            out.add(new Policy(name, memory(rule, "local_memory", where), memory(rule, "remote_memory", where),
                    priority(rule, where), size(rule, "min_size", 0, where), size(rule, "max_size", Long.MAX_VALUE, where),
                    rule.has("same_host") ? rule.get("same_host").asBoolean() : null, List.copyOf(transports),
                    devices == null ? null : Set.copyOf(devices), order));
        }
        return List.copyOf(out);
    }

    private static MemoryKind memory(JsonNode rule, String field, String where) {
        String v = rule.path(field).asText("*");
        if (v.equals("*")) {
            return null;
        }
        try {
            return MemoryKind.fromPrefix(v);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(KEY, where + ": " + field + ": " + e.getMessage());
        }
    }

    private static Priority priority(JsonNode rule, String where) {
        if (!rule.has("priority")) {
            return null;
        }
        JsonNode p = rule.get("priority");
        if (p.isInt() && p.asInt() >= 0 && p.asInt() < 3) {
            return Priority.values()[p.asInt()];
        }
        try {
            return Priority.valueOf(p.asText().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new ConfigException(KEY, where + ": priority must be high, medium, low or 0..2, got " + p);
        }
    }

    private static long size(JsonNode rule, String field, long dflt, String where) {
        if (!rule.has(field)) {
            return dflt;
        }
        JsonNode v = rule.get(field);
        return v.isNumber() ? v.asLong() : ConfigValues.parseSize(KEY + "." + where + "." + field, v.asText());
    }

    static Map<String, Policy> byName(List<Policy> policies) {
        Map<String, Policy> m = new java.util.HashMap<>();
        policies.forEach(p -> m.put(p.name, p));
        return m;
    }
}
