package org.tent4j.platform.common;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.NativeLibrary;

/**
 * A device runtime bound through FFM (libcudart, libamdhip64, libascendcl): where it was loaded from, and how its
 * integer status codes become {@link TransferException}s that name the call and the runtime's own error name. Each
 * runtime's status 0 is success.
 */
public abstract class NativeRuntime {
    protected final NativeLibrary library;

    protected NativeRuntime(NativeLibrary library) {
        this.library = library;
    }

    /** The library file the runtime was loaded from. */
    public final String openedFrom() {
        return library.openedFrom();
    }

    /** {@code 35 cudaErrorInsufficientDriver (CUDA driver version is insufficient ...)}. */
    public abstract String describe(int rc);

    /** The tent4j error a runtime status maps to. */
    protected abstract ErrorCode codeOf(int rc);

    /** Resets the calling thread's sticky last error, for runtimes that keep one; nothing by default. */
    public void clearLastError() {
    }

    /** A failure of {@code call}, naming the runtime's error; clears it from the thread's last-error slot first. */
    public final TransferException error(int rc, String call) {
        clearLastError();
        return new TransferException(codeOf(rc), call + " failed: " + describe(rc));
    }

    public final void check(int rc, String call) {
        if (rc != 0) {
            throw error(rc, call);
        }
    }

    /** A bound function that could not be called at all (a linkage or argument error of the binding itself). */
    protected static TransferException callFailed(String function, Throwable t) {
        if (t instanceof TransferException te) {
            return te;
        }
        return new TransferException(ErrorCode.INTERNAL, function + " could not be called: " + t, t);
    }
}
