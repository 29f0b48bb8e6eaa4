package org.tent4j.integration.nixl;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

import org.tent4j.api.EngineConfig;

/**
 * What an agent is built from.
 *
 * @param name              the agent's name, unique among the agents that exchange metadata ({@code [A-Za-z0-9._-]}, 1 to 48)
 * @param engine            the agent's engine: its control plane is the agent's direct metadata listener, its
 *                          metadata stores ({@code metadata.uri}) the agent's central metadata exchange
 * @param backendPreference backend ids tried first, in order, when a request names none
 * @param namespace         the metadata-store namespace agents publish under
 */
public record AgentConfig(String name, EngineConfig engine, List<String> backendPreference, String namespace) {
    public static final String DEFAULT_NAMESPACE = "nixl";

    public AgentConfig {
        Objects.requireNonNull(name, "agent name");
        Objects.requireNonNull(engine, "engine config");
        backendPreference = List.copyOf(backendPreference);
        Objects.requireNonNull(namespace, "namespace");
    }

    public static AgentConfig of(String name, EngineConfig engine) {
        return new AgentConfig(name, engine, List.of(), DEFAULT_NAMESPACE);
    }

    public AgentConfig withBackendPreference(String... ids) {
        return new AgentConfig(name, engine, List.of(ids), namespace);
    }

    public AgentConfig withNamespace(String ns) {
        return new AgentConfig(name, engine, backendPreference, ns);
    }

    /** How long a store fetch waits for a peer's metadata to appear when the caller gives no timeout. */
    public static final Duration DEFAULT_FETCH_TIMEOUT = Duration.ofSeconds(5);
}
