package org.tent4j.spi;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;

/**
 * Whether a plugin can run on this machine, and if not, precisely why ("libibverbs.so.1 not found",
 * "no RDMA devices: ibv_get_device_list failed with errno 38 (ENOSYS)"). Modelled on Netty's {@code Epoll}: a plugin
 * probes once, keeps the cause, and answers from it.
 */
public final class Availability {
    private static final Availability AVAILABLE = new Availability(null);

    private final Throwable cause;

    private Availability(Throwable cause) {
        this.cause = cause;
    }

    public static Availability available() {
        return AVAILABLE;
    }

    public static Availability unavailable(String cause) {
        return new Availability(new UnavailableException(cause));
    }

    public static Availability unavailable(Throwable cause) {
        return new Availability(cause);
    }

    /** Runs {@code probe}; any exception or error it throws becomes the unavailability cause. */
    public static Availability probe(Probe probe) {
        try {
            probe.run();
            return AVAILABLE;
        } catch (Throwable t) {
            return new Availability(t);
        }
    }

    public boolean isAvailable() {
        return cause == null;
    }

    /** Why not, or {@code null} if available. */
    public Throwable unavailabilityCause() {
        return cause;
    }

    /** One line saying why not, or {@code null} if available. */
    public String reason() {
        if (cause == null) {
            return null;
        }
        String m = cause.getMessage();
        return m == null ? cause.toString() : m;
    }

    /** Throws {@link ErrorCode#TRANSPORT_UNAVAILABLE} naming {@code what} and the cause unless available. */
    public void ensureAvailable(String what) {
        if (cause != null) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, what + " is unavailable: " + reason(), cause);
        }
    }

    @Override
    public String toString() {
        return cause == null ? "available" : "unavailable: " + reason();
    }

    @FunctionalInterface
    public interface Probe {
        void run() throws Throwable;
    }

    /** A cause that is a plain statement rather than an exception from a library. */
    public static final class UnavailableException extends Exception {
        public UnavailableException(String message) {
            super(message, null, false, false);
        }
    }
}
