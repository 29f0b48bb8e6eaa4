package org.tent4j.platform.common;

import java.util.function.Supplier;

/**
 * The outcome of loading a runtime and counting devices, computed on first use and then kept: discovery through
 * {@link java.util.ServiceLoader} must load nothing, and a process probes each library once, not once per question.
 */
public final class LazyProbe<P> {
    private final Supplier<P> probe;
    private volatile P result;

    public LazyProbe(Supplier<P> probe) {
        this.probe = probe;
    }

    public P get() {
        P p = result;
        if (p == null) {
            synchronized (this) {
                if (result == null) {
                    result = probe.get();
                }
                p = result;
            }
        }
        return p;
    }
}
