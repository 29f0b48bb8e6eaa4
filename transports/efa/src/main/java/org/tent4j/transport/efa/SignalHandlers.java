package org.tent4j.transport.efa;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * Keeps the JVM's signal handlers across loading a native library that installs its own.
 *
 * <p>Why: Debian's (and many distributions') {@code libfabric.so.1} links {@code libpsm2.so.2}, whose constructor
 * installs backtrace handlers for SIGSEGV, SIGBUS, SIGILL and SIGABRT the moment the library is mapped. HotSpot uses
 * SIGSEGV for implicit null checks and other traps, so after a plain dlopen the first NullPointerException in compiled
 * code kills the JVM ("java: terminated with signal 11 ... Backtrace:"). The handlers are saved as {@code struct
 * sigaction} bytes before the load and written back for every signal whose handler changed.
 *
 * <p>Putting them back is not enough on its own: between the constructor and the restore, a trap in any other thread
 * (a JIT-compiled null check, a safepoint poll) reaches libpsm2's handler, which prints its backtrace and kills the
 * process. With the engine probing its transports side by side, that window met other threads running Java code (a
 * child JVM died so in CI). So before the load PSM and PSM2 are told not to install them at all, through the
 * variables Open MPI sets for the same reason ({@code HFI_NO_BACKTRACE}, {@code IPATH_NO_BACKTRACE}; a value the
 * user set is kept), and the restore stays for libraries that ignore them.
 */
final class SignalHandlers {
    private static final int MAX_SIGNAL = 64;
    /** Larger than glibc's struct sigaction (152 bytes on x86-64 and aarch64); only the handler is interpreted. */
    private static final long SIGACTION_BYTES = 512;

    private SignalHandlers() {
    }

    /** The signals whose handlers {@code load} replaced and that were put back. */
    record Restored<T>(T value, List<Integer> signals) {
    }

    static <T> Restored<T> preserving(Supplier<T> load) {
        Linker linker = Linker.nativeLinker();
        MethodHandle sigaction = linker.defaultLookup().find("sigaction")
                .map(s -> linker.downcallHandle(s, FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS)))
                .orElse(null);
        noBacktraceHandlers(linker);
        if (sigaction == null) {
            return new Restored<>(load.get(), List.of());
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment[] saved = new MemorySegment[MAX_SIGNAL + 1];
            for (int sig = 1; sig <= MAX_SIGNAL; sig++) {
                MemorySegment s = arena.allocate(SIGACTION_BYTES, 16);
                if (call(sigaction, sig, MemorySegment.NULL, s) == 0) {
                    saved[sig] = s;
                }
            }
            T value = load.get();
            List<Integer> restored = new ArrayList<>();
            MemorySegment now = arena.allocate(SIGACTION_BYTES, 16);
            for (int sig = 1; sig <= MAX_SIGNAL; sig++) {
                if (saved[sig] == null) {
                    continue;
                }
                now.fill((byte) 0);
                if (call(sigaction, sig, MemorySegment.NULL, now) == 0 && handler(now) != handler(saved[sig])
                        && call(sigaction, sig, saved[sig], MemorySegment.NULL) == 0) {
                    restored.add(sig);
                }
            }
            return new Restored<>(value, List.copyOf(restored));
        }
    }

    /** Sets PSM's and PSM2's "no backtrace handlers" variables in this process's environment, unless already set. */
    private static void noBacktraceHandlers(Linker linker) {
        MethodHandle setenv = linker.defaultLookup().find("setenv")
                .map(s -> linker.downcallHandle(s, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT)))
                .orElse(null);
        if (setenv == null) {
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            for (String name : List.of("HFI_NO_BACKTRACE", "IPATH_NO_BACKTRACE")) {
                int rc = (int) setenv.invokeExact(arena.allocateFrom(name), arena.allocateFrom("1"), 0);
                assert rc == 0 : name;
            }
        } catch (Throwable t) {
            // the restore below still puts the JVM's handlers back
        }
    }

    /**
     * {@code sa_handler}/{@code sa_sigaction}, the first member of glibc's struct sigaction on Linux x86-64 and
     * aarch64. Only the handler is compared: glibc copies only part of {@code sa_mask} out of the kernel and leaves
     * the rest of the 128-byte mask as it found it on its stack, so whole-struct bytes differ between two reads.
     */
    private static long handler(MemorySegment sigaction) {
        return sigaction.get(JAVA_LONG, 0);
    }

    private static int call(MethodHandle sigaction, int sig, MemorySegment act, MemorySegment old) {
        try {
            return (int) sigaction.invokeExact(sig, act, old);
        } catch (Throwable t) {
            return -1;
        }
    }
}
