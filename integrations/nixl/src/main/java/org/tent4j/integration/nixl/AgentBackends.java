package org.tent4j.integration.nixl;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.TransferEngine;
import org.tent4j.integration.nixl.spi.Backend;
import org.tent4j.integration.nixl.spi.BackendContext;
import org.tent4j.integration.nixl.spi.BackendOptions;
import org.tent4j.integration.nixl.spi.BackendProvider;

/** An agent's backends: the kinds found, the instances created (one per kind), and the default order among them. */
final class AgentBackends {
    private static final Logger log = LoggerFactory.getLogger(AgentBackends.class);

    /** A created backend. */
    record Slot(String id, BackendProvider provider, Backend backend, BackendOptions options) {
    }

    private final String agent;
    private final List<String> preference;
    private final Map<String, BackendProvider> providers;
    private final Map<String, Slot> backends = Collections.synchronizedMap(new LinkedHashMap<>());
    private volatile List<String> defaultOrder;

    AgentBackends(String agent, List<String> preference, Map<String, BackendProvider> providers) {
        this.agent = agent;
        this.preference = preference;
        this.providers = providers;
    }

    /** Ids of every backend kind found, in their providers' {@code order()}, then by id. */
    List<String> available() {
        return List.copyOf(providers.keySet());
    }

    BackendDescription describe(String id) {
        BackendProvider p = provider(id);
        return new BackendDescription(p.id(), p.spiLevel(), p.supportsRemote(), p.supportsLocal(), p.supportsNotifications(),
                Set.copyOf(p.memoryTypes()), List.copyOf(p.options()));
    }

    BackendProvider provider(String id) {
        BackendProvider p = id == null ? null : providers.get(id);
        if (p == null) {
            throw new NixlException(NixlStatus.NOT_FOUND, "no backend '" + id + "' (available: " + providers.keySet() + ")");
        }
        return p;
    }

    /** See {@link Agent#createBackend}. */
    BackendHandle create(String id, Map<String, String> options, TransferEngine engine) {
        BackendProvider p = provider(id);
        if (p.supportsRemote() && !p.supportsNotifications()) {
            throw new NixlException(NixlStatus.BACKEND, "backend '" + id + "' supports remote transfers but not notifications; NIXL's contract needs both");
        }
        BackendOptions opts;
        try {
            opts = BackendOptions.resolve(id, p.options(), options);
        } catch (IllegalArgumentException e) {
            throw new NixlException(NixlStatus.INVALID_PARAM, e.getMessage(), e);
        }
        synchronized (backends) {
            if (backends.containsKey(id)) {
                throw new NixlException(NixlStatus.NOT_ALLOWED, "agent '" + agent + "' already has backend '" + id + "'");
            }
            Backend b;
            try {
                b = p.create(new BackendContext() {
                    @Override public String agentName() { return agent; }
                    @Override public BackendOptions options() { return opts; }
                    @Override public TransferEngine engine() { return engine; }
                });
            } catch (IllegalArgumentException e) {
                throw new NixlException(NixlStatus.INVALID_PARAM, "backend '" + id + "': " + e.getMessage(), e);
            } catch (Exception e) {
                throw new NixlException(NixlStatus.BACKEND, "backend '" + id + "' failed to start: " + e, e);
            }
            backends.put(id, new Slot(id, p, b, opts));
            defaultOrder = null;
        }
        log.info("agent '{}': backend '{}' created with {}", agent, id, opts.values());
        return new BackendHandle(id, opts.values());
    }

    /** The created backend {@code id}, or NOT_FOUND naming what was created. */
    Slot slot(String id) {
        Slot s = backends.get(id);
        if (s == null) {
            throw new NixlException(NixlStatus.NOT_FOUND, "agent '" + agent + "' has no backend '" + id + "' (created: " + ids() + ")");
        }
        return s;
    }

    /** The created backend {@code id}, or null. */
    Slot find(String id) {
        return backends.get(id);
    }

    List<String> ids() {
        synchronized (backends) {
            return List.copyOf(backends.keySet());
        }
    }

    List<Slot> slots() {
        synchronized (backends) {
            return List.copyOf(backends.values());
        }
    }

    /** Agent preference, then every other created backend in provider order; recomputed when a backend is created. */
    List<String> defaultOrder() {
        List<String> order = defaultOrder;
        if (order == null) {
            List<String> o = new ArrayList<>();
            synchronized (backends) {
                for (String id : preference) {
                    if (backends.containsKey(id)) {
                        o.add(id);
                    }
                }
                for (String id : providers.keySet()) {
                    if (backends.containsKey(id) && !o.contains(id)) {
                        o.add(id);
                    }
                }
            }
            defaultOrder = order = List.copyOf(o);
        }
        return order;
    }

    /** Closes every backend, the last created first. */
    void closeAll() {
        List<Slot> all = slots();
        for (int i = all.size() - 1; i >= 0; i--) {
            try {
                all.get(i).backend().close();
            } catch (RuntimeException e) {
                log.warn("agent '{}': backend '{}' failed to close: {}", agent, all.get(i).id(), e.toString());
            }
        }
    }
}
