package org.tent4j.transport.efa;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.tent4j.spi.Availability;

/**
 * Whether the efa transport can run in this JVM: for the efa provider a device bound to the efa driver is listed in
 * sysfs, libfabric loads and {@code fi_getinfo} offers an RDM endpoint with RMA of the default provider
 * ({@code FI_PROVIDER}, else {@code efa}). Netty's {@code Epoll} model: the probe runs
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

    /** Where the kernel lists RDMA devices, EFA's among them; libibverbs (and so libfabric's efa provider) reads it. */
    static final Path SYS_CLASS_INFINIBAND = Path.of("/sys/class/infiniband");

    static boolean isEfaProvider(String provider) {
        return provider.toLowerCase(Locale.ROOT).startsWith("efa");
    }

    /**
     * Null if a device under {@code sysClass} is bound to the kernel's efa driver, else why not. Checked before
     * libfabric is loaded: loading it and asking every provider for an endpoint took half a second of each engine's
     * start on a machine without EFA (the longest of the transports' probes), and the efa provider finds its devices
     * in this directory too.
     */
    static String noEfaDevice(Path sysClass) {
        if (!Files.isDirectory(sysClass)) {
            return sysClass + " does not exist (no RDMA device; libfabric not loaded)";
        }
        List<String> others = new ArrayList<>();
        try (DirectoryStream<Path> devices = Files.newDirectoryStream(sysClass)) {
            for (Path device : devices) {
                Path driver = device.resolve("device/driver");
                String name;
                try {
                    name = Files.readSymbolicLink(driver).getFileName().toString();
                } catch (IOException | UnsupportedOperationException e) {
                    name = "?";
                }
                if (name.equals("efa")) {
                    return null;
                }
                others.add(device.getFileName() + " (driver " + name + ")");
            }
        } catch (IOException e) {
            return "cannot list " + sysClass + ": " + e.getMessage() + " (libfabric not loaded)";
        }
        return others.isEmpty() ? sysClass + " lists no device (libfabric not loaded)"
                : "no device under " + sysClass + " is bound to the efa driver: " + String.join(", ", others)
                        + " (libfabric not loaded)";
    }

    /** max_msg_size of the default provider, or {@code null} until {@link #availability()} found it. Loads nothing. */
    static Long probedMaxMsgSize() {
        return probedMaxMsgSize;
    }

    private static long maxMsgSize(String provider) throws Exception {
        if (isEfaProvider(provider)) {
            String none = noEfaDevice(SYS_CLASS_INFINIBAND);
            if (none != null) {
                throw new IllegalStateException("no EFA device: " + none);
            }
        }
        LibFabric lib = LibFabric.load();
        try (FabricInfo info = FabricInfo.query(lib, provider)) {
            return info.maxMsgSize;
        }
    }
}
