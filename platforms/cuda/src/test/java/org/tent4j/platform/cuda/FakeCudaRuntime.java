package org.tent4j.platform.cuda;

import org.tent4j.testkit.nativecode.CProgram;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Builds {@code fake-cudart.c} (a libcudart stand-in whose "device" memory is shared host memory) into a shared
 * library with gcc, so the CUDA platform and the transports above it run end to end without a GPU. Public for the
 * nvlink transport's tests, which use it through this module's test jar.
 */
public final class FakeCudaRuntime {
    private static Path built;

    private FakeCudaRuntime() {
    }

    public static boolean buildable() {
        return CProgram.gccAvailable();
    }

    /** The fake library, built once per JVM under {@code dir}. */
    public static synchronized Path library(Path dir) throws IOException, InterruptedException {
        if (built == null || !Files.exists(built)) {
            String source;
            try (InputStream in = FakeCudaRuntime.class.getResourceAsStream("fake-cudart.c")) {
                source = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
            built = CProgram.sharedLibrary(dir, "libfakecudart", source, List.of());
        }
        return built;
    }

    private static final Map<Path, CudaPlatformProvider> PROVIDERS = new ConcurrentHashMap<>();

    /** The CUDA provider bound to the fake library only; one per library, so its platforms share one runtime. */
    public static CudaPlatformProvider provider(Path library) {
        return PROVIDERS.computeIfAbsent(library, l -> new CudaPlatformProvider(List.of(l.toString())));
    }

    /** IPC mappings the fake runtime has open in this process. */
    public static int openMappings(Path library) {
        SymbolLookup lookup = SymbolLookup.libraryLookup(library, Arena.global());
        MethodHandle h = Linker.nativeLinker().downcallHandle(lookup.find("fakeCudaOpenMappings").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT));
        try {
            return (int) h.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
