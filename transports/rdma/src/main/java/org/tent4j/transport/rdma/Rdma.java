package org.tent4j.transport.rdma;

import org.tent4j.spi.Availability;

/**
 * Whether the rdma transport can run in this JVM: libibverbs loads and some device has an ACTIVE port. Netty's
 * {@code Epoll} model: the probe runs once per class loader, the first time one of these methods is called (never at
 * discovery), and its cause is kept as a {@link Throwable}.
 */
public final class Rdma {
    private Rdma() {
    }

    /** Class initialisation runs the probe exactly once, thread-safely, when first asked. */
    private static final class Probe {
        static final Availability AVAILABILITY = Availability.probe(() -> {
            String cause = DeviceProbe.unavailability(VerbsLibrary.load());
            if (cause != null) {
                throw new Availability.UnavailableException(cause);
            }
        });
    }

    public static boolean isAvailable() {
        return Probe.AVAILABILITY.isAvailable();
    }

    /** @throws org.tent4j.api.TransferException TRANSPORT_UNAVAILABLE with {@link #unavailabilityCause()} unless available */
    public static void ensureAvailability() {
        Probe.AVAILABILITY.ensureAvailable("rdma transport");
    }

    /** Why not, or {@code null} when available. */
    public static Throwable unavailabilityCause() {
        return Probe.AVAILABILITY.unavailabilityCause();
    }

    static Availability availability() {
        return Probe.AVAILABILITY;
    }
}
