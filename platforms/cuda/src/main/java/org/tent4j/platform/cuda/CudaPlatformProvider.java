package org.tent4j.platform.cuda;

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
 * CUDA through libcudart, found by {@link java.util.ServiceLoader}. Discovery loads nothing; the first
 * {@link #availability()} or {@link #create()} opens the library and counts devices, once per JVM.
 *
 * <p>Library search: the system property {@value #LIBRARY_PROPERTY} (comma-separated names or paths), then
 * {@code libcudart.so.13}, {@code .12}, {@code .11} through the dynamic linker, then the same names under
 * {@code $CUDA_HOME/lib64}, {@code $CUDA_PATH/lib64} and {@code /usr/local/cuda/lib64}.
 */
public final class CudaPlatformProvider implements DevicePlatformProvider {
    private static final Logger LOG = LoggerFactory.getLogger(CudaPlatformProvider.class);

    public static final String ID = "cuda";
    /** Extra library names or paths to try first, comma-separated. */
    public static final String LIBRARY_PROPERTY = "tent4j.cuda.library";
    static final List<String> LIBRARY_NAMES = List.of("libcudart.so.13", "libcudart.so.12", "libcudart.so.11");
    static final String LIBRARY_DISPLAY = "libcudart.so.13/.12/.11";

    private static final LazyProbe<Probe> DEFAULT_PROBE = new LazyProbe<>(() -> run(defaultCandidates()));

    private final LazyProbe<Probe> probe;

    /** The outcome of opening the runtime and counting devices. */
    record Probe(CudaRuntime runtime, int deviceCount, Availability availability) {
    }

    public CudaPlatformProvider() {
        this.probe = DEFAULT_PROBE;
    }

    /** A provider that searches only {@code candidates} and probes on its own (tests, custom installs). */
    public CudaPlatformProvider(List<String> candidates) {
        List<String> only = List.copyOf(candidates);
        this.probe = new LazyProbe<>(() -> run(only));
    }

    static List<String> defaultCandidates() {
        List<String> out = new ArrayList<>(NativeLibrary.fromProperty(LIBRARY_PROPERTY));
        out.addAll(NativeLibrary.candidates(LIBRARY_NAMES, Arrays.asList(
                dir(System.getenv("CUDA_HOME")), dir(System.getenv("CUDA_PATH")), "/usr/local/cuda/lib64")));
        return out;
    }

    private static String dir(String home) {
        return home == null || home.isBlank() ? null : home + "/lib64";
    }

    @Override
    public String id() {
        return ID;
    }

    /** CUDA is probed first: where several vendors' libraries are installed, it is the likeliest to drive the devices. */
    @Override
    public int order() {
        return 10;
    }

    @Override
    public MemoryKind memoryKind() {
        return MemoryKind.CUDA;
    }

    @Override
    public String description() {
        return "CUDA device memory through libcudart (FFM): cudaMalloc, cudaMemcpy, CUDA IPC handles";
    }

    @Override
    public Availability availability() {
        return probe().availability();
    }

    @Override
    public DevicePlatform create() {
        Probe p = probe();
        p.availability().ensureAvailable("cuda platform");
        return new CudaPlatform(p.runtime(), p.deviceCount());
    }

    Probe probe() {
        return probe.get();
    }

    private static Probe run(List<String> candidates) {
        CudaRuntime cuda;
        try {
            cuda = CudaRuntime.load(LIBRARY_DISPLAY, candidates);
        } catch (Availability.UnavailableException e) {
            LOG.debug("cuda unavailable: {}", e.getMessage());
            return new Probe(null, 0, Availability.unavailable(e));
        } catch (RuntimeException | LinkageError e) {
            LOG.debug("cuda unavailable", e);
            return new Probe(null, 0, Availability.unavailable(e));
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_INT);
            MemorySegment version = arena.allocate(JAVA_INT);
            int rc = cuda.getDeviceCount(count);
            if (rc != CudaRuntime.SUCCESS) {
                String cause = "cudaGetDeviceCount failed: " + cuda.describe(rc);
                cuda.clearLastError();
                LOG.debug("cuda unavailable ({}): {}", cuda.openedFrom(), cause);
                return new Probe(cuda, 0, Availability.unavailable(cause));
            }
            int devices = count.get(JAVA_INT, 0);
            if (devices < 1) {
                return new Probe(cuda, 0, Availability.unavailable(
                        "no CUDA device: cudaGetDeviceCount returned " + devices));
            }
            int runtimeVersion = cuda.runtimeGetVersion(version) == CudaRuntime.SUCCESS ? version.get(JAVA_INT, 0) : -1;
            LOG.info("cuda available: {} device(s), runtime {} from {}", devices, runtimeVersion, cuda.openedFrom());
            return new Probe(cuda, devices, Availability.available());
        }
    }
}
