package org.tent4j.transport.rdma;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/** errno values as messages name them: "errno 38 (Function not implemented)", text from libc's strerror. */
final class Errno {
    private static final MethodHandle STRERROR = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("strerror").orElseThrow(),
            FunctionDescriptor.of(ADDRESS, JAVA_INT));

    private Errno() {
    }

    static String describe(int errno) {
        return "errno " + errno + " (" + text(errno) + ")";
    }

    /** strerror's text; synchronized because glibc may reuse one buffer for unknown values. */
    static synchronized String text(int errno) {
        try {
            MemorySegment s = (MemorySegment) STRERROR.invokeExact(errno);
            return s.equals(MemorySegment.NULL) ? "unknown error" : s.reinterpret(Long.MAX_VALUE).getString(0);
        } catch (Throwable t) {
            return "strerror failed: " + t;
        }
    }
}
