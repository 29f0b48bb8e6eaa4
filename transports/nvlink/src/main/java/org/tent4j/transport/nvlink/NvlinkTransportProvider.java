package org.tent4j.transport.nvlink;

import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.function.Supplier;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.MemoryPath;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.PluginAdmission;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;
import org.tent4j.spi.platform.DevicePlatform;
import org.tent4j.spi.platform.DevicePlatformProvider;

/**
 * Same-host copies between device memory of different engines (and host memory of the same process) through the
 * device platforms' IPC handles: CUDA over NVLink or PCIe, ROCm over xGMI or PCIe, Ascend over HCCS. The device
 * platforms are found with {@link ServiceLoader}, so this transport depends on no vendor library itself.
 *
 * <p>Discovery and {@link #capabilities()} load no native library: the memory paths declared are those of the platform
 * modules present (for each device kind K, K→K, K→cpu and cpu→K), read from their providers' {@code memoryKind()}; a
 * running transport narrows them to the platforms the engine opened for it ({@link TransportContext#devicePlatforms()};
 * nvlink opens none itself). {@link #availability()} asks each platform (each probes its library once per class
 * loader) and is available when at least one is; with the default discovery that answer too is kept once per class
 * loader, like Netty's {@code Epoll}.
 */
public final class NvlinkTransportProvider implements TransportProvider {
    public static final String ID = "nvlink";
    static final int RANK = 5;
    /** One copy per slice; larger slices only hold a worker longer without moving bytes faster. */
    static final long MAX_SLICE_SIZE = 256L << 20;

    static final OptionSpec LANES = OptionSpec.of("lanes", OptionSpec.Type.INT, 4,
            "copies in flight at once; each lane takes one engine worker and one stream per device while it has work");
    static final OptionSpec QUEUE_DEPTH = OptionSpec.of("queue_depth", OptionSpec.Type.INT, 4096,
            "slices waiting for a lane before post fails them with TOO_MANY_REQUESTS");
    static final OptionSpec SAME_PROCESS_DIRECT = OptionSpec.of("same_process_direct", OptionSpec.Type.BOOLEAN, true,
            "copy by address when the peer segment lives in this process instead of opening IPC handles"
                    + " (CUDA cannot open a handle in the process that exported it)");

    /** {@code null}: the class loader's platforms, discovered and probed once per class loader. */
    private final Supplier<List<DevicePlatformProvider>> discovery;
    private volatile List<DevicePlatformProvider> discovered;
    private volatile Availability probe;

    /** The class loader's platform providers: constructing them is cheap by contract (no native library). */
    private static final class DefaultDiscovery {
        static final List<DevicePlatformProvider> PLATFORMS = ordered(ServiceLoader.load(DevicePlatformProvider.class)
                .stream().map(ServiceLoader.Provider::get).toList());
    }

    /** Asked once per class loader, the first time availability is needed. */
    private static final class DefaultProbe {
        static final Availability PROBE = run(DefaultDiscovery.PLATFORMS);
    }

    public NvlinkTransportProvider() {
        this.discovery = null;
    }

    /** Uses the given platform providers instead of {@link ServiceLoader} (tests, embedding); probes on its own. */
    NvlinkTransportProvider(Supplier<List<DevicePlatformProvider>> discovery) {
        this.discovery = discovery;
    }

    @Override
    public String id() {
        return ID;
    }

    @Override
    public String description() {
        return "same-host device memory copies through device IPC handles (CUDA, ROCm, Ascend platforms)";
    }

    @Override
    public Availability availability() {
        return probe();
    }

    /** The paths of every platform module present; never probes a platform (that loads its native library). */
    @Override
    public TransportCapabilities capabilities() {
        return capabilities(platforms().stream().map(DevicePlatformProvider::memoryKind).toList());
    }

    @Override
    public List<OptionSpec> options() {
        return List.of(LANES, QUEUE_DEPTH, SAME_PROCESS_DIRECT);
    }

    /**
     * Runs on the engine's device platforms ({@link TransportContext#devicePlatforms()}), which the engine opens once
     * for every transport and closes itself; nvlink opens none of its own.
     *
     * @throws TransferException TRANSPORT_UNAVAILABLE when no platform is available or the engine opened none
     */
    @Override
    public Transport create(TransportContext context) {
        probe().ensureAvailable("nvlink transport");
        List<DevicePlatform> opened = context.devicePlatforms();
        if (opened.isEmpty()) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "nvlink transport: the engine of segment '"
                    + context.segmentName() + "' opened no device platform, although "
                    + platforms().stream().map(DevicePlatformProvider::id).toList() + " reported one available");
        }
        Map<MemoryKind, String> ids = new EnumMap<>(MemoryKind.class);
        for (DevicePlatformProvider p : platforms()) {
            ids.putIfAbsent(p.memoryKind(), p.id());
        }
        return new NvlinkTransport(context, opened, ids);
    }

    /** Same-host, no cancellation; for each device kind K: K→K, K→cpu and cpu→K. */
    static TransportCapabilities capabilities(Collection<MemoryKind> deviceKinds) {
        Set<MemoryPath> paths = new LinkedHashSet<>();
        for (MemoryKind k : deviceKinds) {
            paths.add(MemoryPath.of(k, k));
            paths.add(MemoryPath.of(k, MemoryKind.CPU));
            paths.add(MemoryPath.of(MemoryKind.CPU, k));
        }
        return TransportCapabilities.builder().memoryPaths(paths).sameHostOnly(true)
                .maxSliceSize(MAX_SLICE_SIZE).rank(RANK).build();
    }

    private List<DevicePlatformProvider> platforms() {
        if (discovery == null) {
            return DefaultDiscovery.PLATFORMS;
        }
        List<DevicePlatformProvider> d = discovered;
        if (d == null) {
            synchronized (this) {
                if (discovered == null) {
                    discovered = ordered(discovery.get());
                }
                d = discovered;
            }
        }
        return d;
    }

    private Availability probe() {
        if (discovery == null) {
            return DefaultProbe.PROBE;
        }
        Availability p = probe;
        if (p == null) {
            synchronized (this) {
                if (probe == null) {
                    probe = run(platforms());
                }
                p = probe;
            }
        }
        return p;
    }

    /**
     * The platforms the engine would load, in the order it loads them (cuda, rocm, ascend declare theirs), by the rule
     * of every plugin loader: this transport cannot reach the runtime's loader, so it applies the rule itself.
     */
    private static List<DevicePlatformProvider> ordered(List<DevicePlatformProvider> found) {
        List<DevicePlatformProvider> ordered = new ArrayList<>();
        for (DevicePlatformProvider p : found) {
            if (PluginAdmission.refusal("device platform", p.spiVersion(), DevicePlatformProvider.SPI_VERSION).isEmpty()) {
                ordered.add(p);
            }
        }
        ordered.sort(PluginAdmission.order(DevicePlatformProvider::order, DevicePlatformProvider::id));
        return List.copyOf(ordered);
    }

    /** Available when any platform is; otherwise every platform's own cause, cuda, rocm, ascend first. */
    private static Availability run(List<DevicePlatformProvider> ordered) {
        List<String> causes = new ArrayList<>();
        for (DevicePlatformProvider p : ordered) {
            Availability a;
            try {
                a = p.availability();
            } catch (RuntimeException | LinkageError e) {
                a = Availability.unavailable(e);
            }
            if (a.isAvailable()) {
                return Availability.available();
            }
            causes.add(p.id() + ": " + a.reason());
        }
        String cause = ordered.isEmpty()
                ? "no device platform available: no DevicePlatformProvider on the class path"
                + " (add platform-cuda, platform-rocm or platform-ascend)"
                : "no device platform available: " + String.join("; ", causes);
        return Availability.unavailable(cause);
    }
}
