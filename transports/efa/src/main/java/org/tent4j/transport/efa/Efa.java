package org.tent4j.transport.efa;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.tent4j.spi.Availability;

/**
 * Whether the efa transport can run in this JVM: libfabric loads and {@code fi_getinfo} offers an RDM endpoint with
 * RMA of the default provider ({@code FI_PROVIDER}, else {@code efa}). Netty's {@code Epoll} model: the probe runs
 * once per class loader, the first time one of these methods is called (never at discovery), and its cause is kept as
 * a {@link Throwable}. A provider named in {@code transports.efa.provider} is probed once too, on first use.
 */
public final class Efa {
    /** The largest message of the default provider, once probed; read by capabilities without probing. */
    private static volatile Long probedMaxMsgSize;
    /** Providers other than the default, by name; names come from the engine's configuration, never from peers. */
    private static final Map<String, Availability> OTHER_PROVIDERS = new ConcurrentHashMap<>();

    private Efa() {
    }

    /** Class initialisation runs the probe of the default provider exactly once, thread-safely, when first asked. */
    private static final class DefaultProbe {
        static final String PROVIDER = defaultProvider();
        static final Availability AVAILABILITY = Availability.probe(() -> probedMaxMsgSize = maxMsgSize(PROVIDER));
    }

    public static boolean isAvailable() {
        return DefaultProbe.AVAILABILITY.isAvailable();
    }

    /** @throws org.tent4j.api.TransferException TRANSPORT_UNAVAILABLE with {@link #unavailabilityCause()} unless available */
    public static void ensureAvailability() {
        DefaultProbe.AVAILABILITY.ensureAvailable("efa transport");
    }

    /** Why not, or {@code null} when available. */
    public static Throwable unavailabilityCause() {
        return DefaultProbe.AVAILABILITY.unavailabilityCause();
    }

    /** The provider used when none is configured: {@code FI_PROVIDER} if set, else {@code efa}. */
    static String defaultProvider() {
        String env = System.getenv("FI_PROVIDER");
        return env == null || env.isBlank() ? "efa" : env.strip();
    }

    static Availability availability() {
        return DefaultProbe.AVAILABILITY;
    }

    /** Whether {@code provider} offers an RDM + RMA endpoint; probed once per provider name. */
    static Availability availability(String provider) {
        if (provider.equals(defaultProvider())) {
            return DefaultProbe.AVAILABILITY;
        }
        return OTHER_PROVIDERS.computeIfAbsent(provider, p -> Availability.probe(() -> maxMsgSize(p)));
    }

    /** max_msg_size of the default provider, or {@code null} until {@link #availability()} found it. Loads nothing. */
    static Long probedMaxMsgSize() {
        return probedMaxMsgSize;
    }

    private static long maxMsgSize(String provider) throws Exception {
        LibFabric lib = LibFabric.load();
        try (FabricInfo info = FabricInfo.query(lib, provider)) {
            return info.maxMsgSize;
        }
    }
}
