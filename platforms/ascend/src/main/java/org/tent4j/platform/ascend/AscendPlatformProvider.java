package org.tent4j.platform.ascend;

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
 * Ascend NPUs through AscendCL ({@code libascendcl.so}), found by {@link java.util.ServiceLoader}. Discovery loads
 * nothing; the first {@link #availability()} or {@link #create()} opens the library, calls {@code aclInit} and counts
 * devices, once per JVM.
 *
 * <p>Library search: the system property {@value #LIBRARY_PROPERTY}, then {@code libascendcl.so} through the dynamic
 * linker, then under {@code $ASCEND_HOME_PATH/lib64}, {@code $ASCEND_TOOLKIT_HOME/lib64} and
 * {@code /usr/local/Ascend/ascend-toolkit/latest/lib64}.
 */
public final class AscendPlatformProvider implements DevicePlatformProvider {
    private static final Logger LOG = LoggerFactory.getLogger(AscendPlatformProvider.class);

    public static final String ID = "ascend";
    public static final String LIBRARY_PROPERTY = "tent4j.ascend.library";
    static final List<String> LIBRARY_NAMES = List.of("libascendcl.so");
    static final String LIBRARY_DISPLAY = "libascendcl.so";

    private static final LazyProbe<Probe> DEFAULT_PROBE = new LazyProbe<>(() -> run(defaultCandidates()));

    private final LazyProbe<Probe> probe;

    record Probe(AclRuntime runtime, int deviceCount, Availability availability) {
    }

    public AscendPlatformProvider() {
        this.probe = DEFAULT_PROBE;
    }

    /** A provider that searches only {@code candidates} and probes on its own (tests, custom installs). */
    public AscendPlatformProvider(List<String> candidates) {
        List<String> only = List.copyOf(candidates);
        this.probe = new LazyProbe<>(() -> run(only));
    }

    static List<String> defaultCandidates() {
        List<String> out = new ArrayList<>(NativeLibrary.fromProperty(LIBRARY_PROPERTY));
        out.addAll(NativeLibrary.candidates(LIBRARY_NAMES, Arrays.asList(lib64(System.getenv("ASCEND_HOME_PATH")),
                lib64(System.getenv("ASCEND_TOOLKIT_HOME")), "/usr/local/Ascend/ascend-toolkit/latest/lib64")));
        return out;
    }

    private static String lib64(String home) {
        return home == null || home.isBlank() ? null : home + "/lib64";
    }

    @Override
    public String id() {
        return ID;
    }

    /** after CUDA and ROCm, before any platform that declares no order. */
    @Override
    public int order() {
        return 30;
    }

    @Override
    public MemoryKind memoryKind() {
        return MemoryKind.NPU;
    }

    @Override
    public String description() {
        return "Ascend NPU memory through AscendCL (FFM): aclrtMalloc, aclrtMemcpy, aclrtIpcMem export keys";
    }

    @Override
    public Availability availability() {
        return probe().availability();
    }

    @Override
    public DevicePlatform create() {
        Probe p = probe();
        p.availability().ensureAvailable("ascend platform");
        return new AscendPlatform(p.runtime(), p.deviceCount());
    }

    Probe probe() {
        return probe.get();
    }

    private static Probe run(List<String> candidates) {
        AclRuntime acl;
        try {
            acl = AclRuntime.load(LIBRARY_DISPLAY, candidates);
        } catch (Availability.UnavailableException e) {
            LOG.debug("ascend unavailable: {}", e.getMessage());
            return new Probe(null, 0, Availability.unavailable(e));
        } catch (RuntimeException | LinkageError e) {
            LOG.debug("ascend unavailable", e);
            return new Probe(null, 0, Availability.unavailable(e));
        }
        int rc = acl.init(MemorySegment.NULL);
        if (rc != AclRuntime.SUCCESS && rc != AclRuntime.ERROR_REPEAT_INITIALIZE) {
            return new Probe(acl, 0, Availability.unavailable("aclInit failed: " + acl.describe(rc)));
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_INT);
            rc = acl.getDeviceCount(count);
            if (rc != AclRuntime.SUCCESS) {
                return new Probe(acl, 0, Availability.unavailable("aclrtGetDeviceCount failed: " + acl.describe(rc)));
            }
            int devices = count.get(JAVA_INT, 0);
            if (devices < 1) {
                return new Probe(acl, 0, Availability.unavailable("no Ascend NPU: aclrtGetDeviceCount returned " + devices));
            }
            LOG.info("ascend available: {} NPU(s) from {}{}", devices, acl.openedFrom(),
                    acl.hasIpc() ? "" : " (no aclrtIpcMem* functions: IPC unavailable)");
            return new Probe(acl, devices, Availability.available());
        }
    }
}
