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
