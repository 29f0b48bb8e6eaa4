package org.tent4j.platform.common;

/**
 * The device current on the calling thread, switched for one native call and put back after it: the current device is
 * per-thread state that the application's own CUDA or HIP code on the same thread relies on.
 *
 * <pre>{@code
 * int previous = device.switchTo(d);
 * try { ...native call on d... } finally { device.restore(previous, d); }
 * }</pre>
 */
public abstract class CurrentDevice {
    /** The thread's current device, or -1 when the runtime cannot say. */
    protected abstract int current();

    /** Makes {@code device} current; throws naming the runtime call and its error. */
    protected abstract void select(int device);

    /** Makes {@code device} current again, ignoring failure (clearing the runtime's sticky last error). */
    protected abstract void selectQuietly(int device);

    /** Makes {@code device} current and returns the device that was (-1 if unknown), for {@link #restore}. */
    public final int switchTo(int device) {
        int previous = current();
        if (previous != device) {
            select(device);
        }
        return previous;
    }

    /** Puts back what {@link #switchTo} replaced; nothing when it was unknown or already {@code device}. */
    public final void restore(int previous, int device) {
        if (previous >= 0 && previous != device) {
            selectQuietly(previous);
        }
    }
}
