package org.tent4j.integration.nixl;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.regex.Pattern;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.integration.nixl.spi.BackendProvider;

/**
 * Finds the backend providers on the class path and admits them by the rule the engine's own plugin loader applies
 * (te-api's {@code org.tent4j.spi.PluginAdmission}: a provider written for a newer backend SPI level is refused naming
 * both levels, an older one is admitted; {@code order()}, then id). An integration uses the public API only, never
 * the SPI package nor the runtime (BoundariesTest), so the rule is mirrored here, and BackendLoaderTest holds the mirror
 * to the original. The one place the agent logs what it loaded and what it refused.
 */
final class BackendLoader {
    private static final Logger log = LoggerFactory.getLogger(BackendLoader.class);
    private static final Pattern BACKEND_ID = Pattern.compile("[a-z0-9-]{1,32}");

    static final Comparator<BackendProvider> ORDER = Comparator.comparingInt(BackendProvider::order).thenComparing(BackendProvider::id);

    private BackendLoader() {
    }

    /** Why a provider written for {@code level} is refused by an agent speaking {@code agentLevel}, or empty. */
    static Optional<String> refusal(int level, int agentLevel) {
        if (level >= 1 && level <= agentLevel) {
            return Optional.empty();
        }
        return Optional.of("built for backend SPI version " + level + ", this runtime supports 1 to " + agentLevel);
    }

    /** The admitted providers on the class path by id, in order. */
    static Map<String, BackendProvider> load() {
        List<BackendProvider> found = new ArrayList<>();
        ServiceLoader.load(BackendProvider.class).forEach(found::add);
        return admit(found, BackendProvider.SPI_LEVEL);
    }

    /**
     * @param agentLevel the newest backend SPI level this agent speaks
     * @throws NixlException BACKEND for an id that is not canonical or is claimed by two providers
     */
    static Map<String, BackendProvider> admit(List<BackendProvider> found, int agentLevel) {
        List<BackendProvider> admitted = new ArrayList<>();
        for (BackendProvider p : found) {
            if (!BACKEND_ID.matcher(p.id()).matches()) {
                throw new NixlException(NixlStatus.BACKEND, "backend provider " + p.getClass().getName() + " has id '" + p.id()
                        + "'; an id is 1 to 32 characters of [a-z0-9-]");
            }
            Optional<String> refusal = refusal(p.spiLevel(), agentLevel);
            if (refusal.isPresent()) {
                log.warn("backend '{}' ({}) refused: {}", p.id(), p.getClass().getName(), refusal.get());
                continue;
            }
            admitted.add(p);
        }
        admitted.sort(ORDER);
        Map<String, BackendProvider> byId = new LinkedHashMap<>();
        for (BackendProvider p : admitted) {
            BackendProvider prior = byId.putIfAbsent(p.id(), p);
            if (prior != null) {
                throw new NixlException(NixlStatus.BACKEND, "backend id '" + p.id() + "' is claimed by both " + prior.getClass().getName()
                        + " and " + p.getClass().getName());
            }
        }
        log.debug("backends loaded, in order: {}", byId.keySet());
        return Collections.unmodifiableMap(byId);
    }
}
