package org.tent4j.runtime.config;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.tent4j.api.ConfigException;
import org.tent4j.api.EngineConfig;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionValues;

/**
 * An {@link EngineConfig} with its layers merged (defaults &lt; file &lt; builder &lt; environment) and every key
 * checked: core keys here, {@code transports.<id>.*} against that transport's options, {@code metadata.<scheme>.*}
 * against that store's options.
 */
public final class ResolvedConfig {
    private static final String ENV_FILE = "TENT4J_CONFIG";

    private final OptionValues core;
    private final Map<String, String> raw;

    private ResolvedConfig(OptionValues core, Map<String, String> raw) {
        this.core = core;
        this.raw = raw;
    }

    /**
     * @param pluginOptions option specs by key prefix, e.g. {@code "transports.tcp." -> [lanes, ...]}
     */
    public static ResolvedConfig resolve(EngineConfig config, Map<String, List<OptionSpec>> pluginOptions) {
        Map<String, String> merged = new LinkedHashMap<>(config.fallbacks());
        Path file = config.file().orElse(null);
        if (file == null && config.environment().containsKey(ENV_FILE)) {
            file = Path.of(config.environment().get(ENV_FILE));
        }
        if (file != null) {
            merged.putAll(readFile(file));
        }
        merged.putAll(config.values());
        Map<String, String> env = config.environment();
        // Only known keys can be overridden from the environment: the mapping key -> variable is one-way.
        for (OptionSpec s : CoreKey.ALL) {
            String v = env.get(EngineConfig.environmentVariable(s.name()));
            if (v != null) {
                merged.put(s.name(), v);
            }
        }
        pluginOptions.forEach((prefix, specs) -> {
            for (OptionSpec s : specs) {
                String v = env.get(EngineConfig.environmentVariable(prefix + s.name()));
                if (v != null) {
                    merged.put(prefix + s.name(), v);
                }
            }
        });

        Map<String, String> coreValues = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : merged.entrySet()) {
            String key = e.getKey();
            if (isCoreKey(key)) {
                coreValues.put(key, e.getValue());
            } else if (pluginPrefix(key, pluginOptions) == null) {
                throw new ConfigException(key, unknownKeyMessage(key, pluginOptions));
            }
        }
        OptionValues core = OptionValues.parse("", CoreKey.ALL, coreValues);
        // Validate plugin options now so a bad value fails the engine at build time, not at first use.
        for (Map.Entry<String, List<OptionSpec>> p : pluginOptions.entrySet()) {
            OptionValues.parse(p.getKey(), p.getValue(), sub(merged, p.getKey()));
        }
        return new ResolvedConfig(core, Map.copyOf(merged));
    }

    private static boolean isCoreKey(String key) {
        for (OptionSpec s : CoreKey.ALL) {
            if (s.name().equals(key)) {
                return true;
            }
        }
        return false;
    }

    private static String pluginPrefix(String key, Map<String, List<OptionSpec>> pluginOptions) {
        for (String prefix : pluginOptions.keySet()) {
            if (key.startsWith(prefix)) {
                return prefix;
            }
        }
        return null;
    }

    private static String unknownKeyMessage(String key, Map<String, List<OptionSpec>> pluginOptions) {
        if (key.startsWith("transports.")) {
            String rest = key.substring("transports.".length());
            int dot = rest.indexOf('.');
            String id = dot < 0 ? rest : rest.substring(0, dot);
            return "unknown key: no transport '" + id + "' on the class path (found: "
                    + pluginOptions.keySet().stream().filter(p -> p.startsWith("transports."))
                    .map(p -> p.substring(11, p.length() - 1)).sorted().toList() + ")";
        }
        return "unknown key; known keys: " + CoreKey.ALL.stream().map(OptionSpec::name).sorted().toList()
                + " and transports.<id>.<option>, metadata.<scheme>.<option>";
    }

    private static Map<String, String> sub(Map<String, String> all, String prefix) {
        Map<String, String> out = new TreeMap<>();
        all.forEach((k, v) -> {
            if (k.startsWith(prefix)) {
                out.put(k.substring(prefix.length()), v);
            }
        });
        return out;
    }

    static Map<String, String> readFile(Path file) {
        if (!Files.isRegularFile(file)) {
            throw new ConfigException("file", "config file " + file + " does not exist");
        }
        try (InputStream in = Files.newInputStream(file)) {
            Map<String, String> out = new LinkedHashMap<>();
            if (file.getFileName().toString().endsWith(".json")) {
                JsonNode root = new ObjectMapper().readTree(in);
                if (root == null || !root.isObject()) {
                    throw new ConfigException("file", "config file " + file + " must hold a JSON object");
                }
                flatten("", root, out);
            } else {
                Properties p = new Properties();
                p.load(in);
                for (String name : p.stringPropertyNames()) {
                    out.put(name, p.getProperty(name));
                }
            }
            return out;
        } catch (IOException e) {
            throw new ConfigException("file", "cannot read config file " + file + ": " + e.getMessage(), e);
        }
    }

    private static void flatten(String prefix, JsonNode node, Map<String, String> out) {
        if (node.isObject()) {
            for (Map.Entry<String, JsonNode> e : node.properties()) {
                flatten(prefix.isEmpty() ? e.getKey() : prefix + "." + e.getKey(), e.getValue(), out);
            }
        } else if (node.isArray() && node.size() > 0 && node.get(0).isContainerNode()) {
            // A list of objects (policy rules) stays JSON text for the key that parses it.
            out.put(prefix, node.toString());
        } else if (node.isArray()) {
            StringBuilder sb = new StringBuilder();
            for (JsonNode n : node) {
                if (!sb.isEmpty()) {
                    sb.append(',');
                }
                sb.append(n.asText());
            }
            out.put(prefix, sb.toString());
        } else {
            out.put(prefix, node.asText());
        }
    }

    /** The engine's own keys, parsed. */
    public OptionValues core() {
        return core;
    }

    /** Options under {@code prefix}, parsed against {@code specs}. */
    public OptionValues plugin(String prefix, List<OptionSpec> specs) {
        return OptionValues.parse(prefix, specs, sub(raw, prefix));
    }

    /** Raw values under {@code prefix} (for plugins that take free-form options). */
    public Map<String, String> rawUnder(String prefix) {
        return sub(raw, prefix);
    }
}
