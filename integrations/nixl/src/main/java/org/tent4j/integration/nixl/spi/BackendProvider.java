package org.tent4j.integration.nixl.spi;

import java.util.List;
import java.util.Set;

import org.tent4j.integration.nixl.MemoryType;

/**
 * A backend kind, found with {@link java.util.ServiceLoader} and described without being instantiated: its one
 * canonical id, capabilities, memory types and options. Capabilities decide which {@link Backend} methods must work:
 * remote ones need {@code connectionInfo}, {@code publicData}, {@code loadRemote*}; notifying ones
 * {@code sendNotification} and {@code drainNotifications}; local ones {@code loadLocal}.
 */
public interface BackendProvider {
    /**
     * The version of this SPI a provider was written for; an agent refuses a provider written for a newer level and
     * admits an older one (the rule the engine applies to its own plugins).
     */
    int SPI_LEVEL = 1;

    /** The order a provider gets when it declares none. */
    int DEFAULT_ORDER = 1000;

    /** The canonical id: lower case, {@code [a-z0-9-]}; the only name the backend is known by. */
    String id();

    default int spiLevel() {
        return SPI_LEVEL;
    }

    /** Position among backends, lower first, then by id: the order the agent lists them and falls back along. */
    default int order() {
        return DEFAULT_ORDER;
    }

    /** Can move data to and from other agents. */
    boolean supportsRemote();

    /** Can move data within this agent (loopback). */
    boolean supportsLocal();

    /** Can deliver notifications (after a transfer's data, or on their own). */
    boolean supportsNotifications();

    Set<MemoryType> memoryTypes();

    /** Every option the backend accepts, with its default. */
    List<OptionSpec> options();

    /** Builds an instance; a failure is thrown to the agent's caller at once, with its cause. */
    Backend create(BackendContext context) throws Exception;
}
