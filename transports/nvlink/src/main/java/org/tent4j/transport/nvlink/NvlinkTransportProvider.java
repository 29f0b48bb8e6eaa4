package org.tent4j.transport.nvlink;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.function.Supplier;

import org.tent4j.api.MemoryKind;
import org.tent4j.spi.Availability;
import org.tent4j.spi.MemoryPath;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;
import org.tent4j.spi.platform.DevicePlatformProvider;

/**
 * Same-host copies between device memory of different engines (and host memory of the same process) through the
 * device platforms' IPC handles: CUDA over NVLink or PCIe, ROCm over xGMI or PCIe, Ascend over HCCS. The device
 * platforms are found with {@link ServiceLoader}, so this transport depends on no vendor library itself.
 *
 * <p>Discovery is cheap; {@link #availability()} probes the platforms once and is available when at least one is.
 * The memory paths declared are those of the platforms found: for each device kind K, K→K, K→cpu and cpu→K.
 */
public final class NvlinkTransportProvider implements TransportProvider {
    public static final String ID = "nvlink";
    static final int RANK = 5;
    /** One copy per slice; larger slices only hold a worker longer without moving bytes faster. */
    static final long MAX_SLICE_SIZE = 256L << 20;
    static final List<String> PREFERRED_ORDER = List.of("cuda", "rocm", "ascend");

    static final OptionSpec LANES = OptionSpec.of("lanes", OptionSpec.Type.INT, 4,
            "copies in flight at once; each lane takes one engine worker and one stream per device while it has work");
    static final OptionSpec QUEUE_DEPTH = OptionSpec.of("queue_depth", OptionSpec.Type.INT, 4096,
            "slices waiting for a lane before post fails them with TOO_MANY_REQUESTS");
    static final OptionSpec SAME_PROCESS_DIRECT = OptionSpec.of("same_process_direct", OptionSpec.Type.BOOLEAN, true,
            "copy by address when the peer segment lives in this process instead of opening IPC handles"
                    + " (CUDA cannot open a handle in the process that exported it)");

    private final Supplier<List<DevicePlatformProvider>> discovery;
    private volatile Probe probe;

    /** The platforms found, and which of them can run here. */
    record Probe(List<DevicePlatformProvider> available, Availability availability, TransportCapabilities capabilities) {
    }

    public NvlinkTransportProvider() {
        this(() -> ServiceLoader.load(DevicePlatformProvider.class).stream().map(ServiceLoader.Provider::get).toList());
    }

    /** Uses the given platform providers instead of {@link ServiceLoader} (tests, embedding). */
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
        return probe().availability();
    }

    @Override
    public TransportCapabilities capabilities() {
        return probe().capabilities();
    }

    @Override
    public List<OptionSpec> options() {
        return List.of(LANES, QUEUE_DEPTH, SAME_PROCESS_DIRECT);
    }

    @Override
    public Transport create(TransportContext context) {
        Probe p = probe();
        p.availability().ensureAvailable("nvlink transport");
        return new NvlinkTransport(context, p.available());
    }

    Probe probe() {
        Probe p = probe;
        if (p == null) {
            synchronized (this) {
                if (probe == null) {
                    probe = run(discovery.get());
                }
                p = probe;
            }
        }
        return p;
    }

    static Probe run(List<DevicePlatformProvider> found) {
        List<DevicePlatformProvider> ordered = new ArrayList<>(found);
        ordered.sort(Comparator.comparingInt((DevicePlatformProvider p) -> {
            int i = PREFERRED_ORDER.indexOf(p.id());
            return i < 0 ? PREFERRED_ORDER.size() : i;
        }).thenComparing(DevicePlatformProvider::id));
        List<DevicePlatformProvider> available = new ArrayList<>();
        List<String> causes = new ArrayList<>();
        Set<MemoryKind> kinds = new LinkedHashSet<>();
        for (DevicePlatformProvider p : ordered) {
            Availability a;
            try {
                a = p.availability();
            } catch (RuntimeException | LinkageError e) {
                a = Availability.unavailable(e);
            }
            if (a.isAvailable() && kinds.add(p.memoryKind())) {
                available.add(p);
            } else if (!a.isAvailable()) {
                causes.add(p.id() + ": " + a.reason());
            }
        }
        Set<MemoryPath> paths = new LinkedHashSet<>();
        for (MemoryKind k : kinds) {
            paths.add(MemoryPath.of(k, k));
            paths.add(MemoryPath.of(k, MemoryKind.CPU));
            paths.add(MemoryPath.of(MemoryKind.CPU, k));
        }
        TransportCapabilities caps = TransportCapabilities.builder().memoryPaths(paths).sameHostOnly(true)
                .maxSliceSize(MAX_SLICE_SIZE).rank(RANK).build();
        if (!available.isEmpty()) {
            return new Probe(List.copyOf(available), Availability.available(), caps);
        }
        String cause = ordered.isEmpty()
                ? "no device platform available: no DevicePlatformProvider on the class path"
                + " (add platform-cuda, platform-rocm or platform-ascend)"
                : "no device platform available: " + String.join("; ", causes);
        return new Probe(List.of(), Availability.unavailable(cause), caps);
    }
}
