package org.tent4j.platform.rocm;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.platform.common.LazyProbe;
import org.tent4j.api.MemoryKind;
import org.tent4j.spi.Availability;
import org.tent4j.spi.NativeLibrary;
import org.tent4j.spi.platform.DevicePlatform;
import org.tent4j.spi.platform.DevicePlatformProvider;

/**
 * ROCm through libamdhip64, found by {@link java.util.ServiceLoader}. Discovery loads nothing; the first
 * {@link #availability()} or {@link #create()} opens the library and counts devices, once per JVM.
 *
 * <p>Library search: the system property {@value #LIBRARY_PROPERTY} (comma-separated names or paths), then
 * {@code libamdhip64.so.6} and {@code .5} through the dynamic linker, then under {@code $ROCM_PATH/lib} and
 * {@code /opt/rocm/lib}, then the unversioned development symlink {@code libamdhip64.so}.
 */
public final class RocmPlatformProvider implements DevicePlatformProvider {
    private static final Logger LOG = LoggerFactory.getLogger(RocmPlatformProvider.class);

    public static final String ID = "rocm";
    /** Extra library names or paths to try first, comma-separated. */
    public static final String LIBRARY_PROPERTY = "tent4j.rocm.library";
    static final List<String> LIBRARY_NAMES = List.of("libamdhip64.so.6", "libamdhip64.so.5");
    static final String LIBRARY_DISPLAY = "libamdhip64.so.6/.5";

    private static final LazyProbe<Probe> DEFAULT_PROBE = new LazyProbe<>(() -> run(defaultCandidates()));

    private final LazyProbe<Probe> probe;

    /** The outcome of opening the runtime and counting devices. */
    record Probe(HipRuntime runtime, int deviceCount, int runtimeVersion, Availability availability) {
    }

    public RocmPlatformProvider() {
        this.probe = DEFAULT_PROBE;
    }

    /** A provider that searches only {@code candidates} and probes on its own (tests, custom installs). */
    public RocmPlatformProvider(List<String> candidates) {
        List<String> only = List.copyOf(candidates);
        this.probe = new LazyProbe<>(() -> run(only));
    }

    static List<String> defaultCandidates() {
        List<String> out = new ArrayList<>(NativeLibrary.fromProperty(LIBRARY_PROPERTY));
        String rocmPath = System.getenv("ROCM_PATH");
        out.addAll(NativeLibrary.candidates(LIBRARY_NAMES, Arrays.asList(
                rocmPath == null || rocmPath.isBlank() ? null : rocmPath + "/lib", "/opt/rocm/lib")));
        out.add("libamdhip64.so");
        return out;
    }

    @Override
    public String id() {
        return ID;
    }

    /** after CUDA, before Ascend: the order nvlink reports their causes in. */
    @Override
    public int order() {
        return 20;
    }

    @Override
    public MemoryKind memoryKind() {
        return MemoryKind.ROCM;
    }

    @Override
    public String description() {
        return "ROCm device memory through libamdhip64 (FFM): hipMalloc, hipMemcpy, HIP IPC handles";
    }

    @Override
    public Availability availability() {
        return probe().availability();
    }

    @Override
    public DevicePlatform create() {
        Probe p = probe();
        p.availability().ensureAvailable("rocm platform");
        return new RocmPlatform(p.runtime(), p.deviceCount(), p.runtimeVersion());
    }

    Probe probe() {
        return probe.get();
    }

    private static Probe run(List<String> candidates) {
        HipRuntime hip;
        try {
            hip = HipRuntime.load(LIBRARY_DISPLAY, candidates);
        } catch (Availability.UnavailableException e) {
            LOG.debug("rocm unavailable: {}", e.getMessage());
            return new Probe(null, 0, 0, Availability.unavailable(e));
        } catch (RuntimeException | LinkageError e) {
            LOG.debug("rocm unavailable", e);
            return new Probe(null, 0, 0, Availability.unavailable(e));
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment version = arena.allocate(JAVA_INT);
            int runtimeVersion = hip.runtimeGetVersion(version) == HipRuntime.SUCCESS ? version.get(JAVA_INT, 0) : 0;
            MemorySegment count = arena.allocate(JAVA_INT);
            int rc = hip.getDeviceCount(count);
            if (rc != HipRuntime.SUCCESS) {
                String cause = "hipGetDeviceCount failed: " + hip.describe(rc);
                hip.clearLastError();
                LOG.debug("rocm unavailable ({}): {}", hip.openedFrom(), cause);
                return new Probe(hip, 0, runtimeVersion, Availability.unavailable(cause));
            }
            int devices = count.get(JAVA_INT, 0);
            if (devices < 1) {
                return new Probe(hip, 0, runtimeVersion,
                        Availability.unavailable("no ROCm device: hipGetDeviceCount returned " + devices));
            }
            LOG.info("rocm available: {} device(s), HIP runtime {} from {}", devices, runtimeVersion, hip.openedFrom());
            return new Probe(hip, devices, runtimeVersion, Availability.available());
        }
    }
}
