package org.tent4j.transport.rdma;

import java.util.List;

import org.tent4j.spi.Availability;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;

/**
 * The {@code rdma} transport: RC one-sided RDMA READ/WRITE over libibverbs, bound through the FFM API (no JNI, no C
 * shim). Discovery and {@link #capabilities()} load nothing; {@link #availability()} asks {@link Rdma}, which loads
 * {@code libibverbs.so.1} and looks for a device with an ACTIVE port once per class loader, keeping the precise cause
 * when there is none.
 */
public final class RdmaTransportProvider implements TransportProvider {
    /** Above tcp, below same-host transports. */
    static final int RANK = 20;
    /** An RDMA message can be 2 GiB; ports commonly advertise 1 GiB (max_msg_sz), which slices stay within. */
    static final long MAX_SLICE_SIZE = 1L << 30;

    @Override
    public String id() {
        return RdmaTransport.ID;
    }

    @Override
    public String description() {
        return "RDMA RC one-sided READ/WRITE over libibverbs (InfiniBand, RoCE)";
    }

    /** Probed once per class loader; see {@link Rdma}. */
    @Override
    public Availability availability() {
        return Rdma.availability();
    }

    @Override
    public TransportCapabilities capabilities() {
        // Host memory is what every NIC can register; an instance with gpu_direct on declares device memory too.
        return TransportCapabilities.builder().maxSliceSize(MAX_SLICE_SIZE).rank(RANK).build();
    }

    @Override
    public List<OptionSpec> options() {
        return RdmaOptions.SPECS;
    }

    /**
     * @throws org.tent4j.api.TransferException TRANSPORT_UNAVAILABLE with the cause of {@link #availability()}, or
     *                                          naming why none of the allowed devices could be opened
     */
    @Override
    public Transport create(TransportContext context) {
        Rdma.ensureAvailability();
        RdmaOptions options = RdmaOptions.from(context.options());
        return RdmaTransport.open(context, options, VerbsLibrary.load());
    }
}
