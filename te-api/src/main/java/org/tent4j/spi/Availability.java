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

    /**
     * The plugin can run here.
     *
     * @return the shared available answer
     */
    public static Availability available() {
        return AVAILABLE;
    }

    /**
     * The plugin cannot run here, for a reason stated in words.
     *
     * @param cause one line naming what is missing, e.g. "libibverbs.so.1 not found"
     * @return the answer
     */
    public static Availability unavailable(String cause) {
        return new Availability(new UnavailableException(cause));
    }

    /**
     * The plugin cannot run here, because of what a probe threw.
     *
     * @param cause the failure, kept for {@link #unavailabilityCause()}
     * @return the answer
     */
    public static Availability unavailable(Throwable cause) {
        return new Availability(cause);
    }

    /**
     * Runs {@code probe}; any exception or error it throws becomes the unavailability cause.
     *
     * @param probe loads libraries, lists devices; throws when the plugin cannot run
     * @return available if it returned normally
     */
    public static Availability probe(Probe probe) {
        try {
            probe.run();
            return AVAILABLE;
        } catch (Throwable t) {
            return new Availability(t);
        }
    }

    /**
     * Whether the plugin can run here.
     *
     * @return {@code true} without a cause
     */
    public boolean isAvailable() {
        return cause == null;
    }

    /**
     * Why not, or {@code null} if available.
     *
     * @return the cause
     */
    public Throwable unavailabilityCause() {
        return cause;
    }

    /**
     * One line saying why not, or {@code null} if available.
     *
     * @return the cause's message, or the cause itself as text when it has none
     */
    public String reason() {
        if (cause == null) {
            return null;
        }
        String m = cause.getMessage();
        return m == null ? cause.toString() : m;
    }

    /**
     * Throws {@link ErrorCode#TRANSPORT_UNAVAILABLE} naming {@code what} and the cause unless available.
     *
     * @param what the plugin, as named in the message
     * @throws TransferException TRANSPORT_UNAVAILABLE when unavailable
     */
    public void ensureAvailable(String what) {
        if (cause != null) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, what + " is unavailable: " + reason(), cause);
        }
    }

    @Override
    public String toString() {
        return cause == null ? "available" : "unavailable: " + reason();
    }

    /** A check that throws when the plugin cannot run. */
    @FunctionalInterface
    public interface Probe {
        /**
         * Runs the check.
         *
         * @throws Throwable anything, which becomes the cause
         */
        void run() throws Throwable;
    }

    /** A cause that is a plain statement rather than an exception from a library. */
    public static final class UnavailableException extends Exception {
        /**
         * A cause without a stack trace.
         *
         * @param message one line naming what is missing
         */
        public UnavailableException(String message) {

            super(message, null, false, false);
        }
    }
}
