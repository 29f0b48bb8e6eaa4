package org.tent4j.transport.efa;

import java.time.Duration;
import java.util.List;

import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;

/**
 * The {@code efa} transport: one-sided READ/WRITE over a libfabric {@code FI_EP_RDM} endpoint with {@code FI_RMA},
 * bound through java.lang.foreign. In production the provider is {@code efa}; any RDM provider with RMA works the
 * same way ({@code tcp;ofi_rxm}, {@code sockets}, {@code shm}), which is how it is tested on machines without EFA.
 *
 * <p>Options ({@code transports.efa.*}): {@code provider} (default: the {@code FI_PROVIDER} environment variable, else
 * {@code efa}), {@code endpoint_count}, {@code cq_size} (also the number of operations in flight), {@code
 * progress_interval} (longest pause of the idle progress thread).
 */
public final class EfaTransportProvider implements TransportProvider {
    public static final String ID = "efa";
    /** Largest slice the runtime hands over; larger provider limits gain nothing, smaller ones are chunked. */
    static final long MAX_SLICE = 64L << 20;
    static final int RANK = 25;

    private static final String PREFIX = "transports." + ID + ".";
    static final String OPT_PROVIDER = "provider";
    static final String OPT_ENDPOINT_COUNT = "endpoint_count";
    static final String OPT_CQ_SIZE = "cq_size";
    static final String OPT_PROGRESS_INTERVAL = "progress_interval";

    @Override
    public String id() {
        return ID;
    }

    @Override
    public String description() {
        return "libfabric RDM one-sided READ/WRITE (AWS EFA; any RDM provider with FI_RMA) through FFM";
    }

    /** The default provider, probed once per class loader; see {@link Efa}. */
    @Override
    public Availability availability() {
        return Efa.availability();
    }

    /**
     * Probes the configured provider (once per class loader), so {@code transports.efa.provider=tcp;ofi_rxm} works
     * without FI_PROVIDER.
     */
    @Override
    public Availability availability(OptionValues options) {
        return Efa.availability(options.getString(OPT_PROVIDER).strip());
    }

    @Override
    public TransportCapabilities capabilities() {
        Long max = Efa.probedMaxMsgSize(); // known only once availability() probed; capabilities never probe
        long slice = max == null ? MAX_SLICE : Math.min(maxOpBytes(max), MAX_SLICE);
        return TransportCapabilities.builder().maxSliceSize(slice).rank(RANK).build();
    }

    /** The provider's max_msg_size (an unsigned size_t) as the largest single operation. */
    static long maxOpBytes(long maxMsgSize) {
        return maxMsgSize < 0 ? Long.MAX_VALUE : Math.max(1, maxMsgSize);
    }

    @Override
    public List<OptionSpec> options() {
        return List.of(
                OptionSpec.of(OPT_PROVIDER, OptionSpec.Type.STRING, Efa.defaultProvider(),
                        "libfabric provider: efa in production; tcp;ofi_rxm, sockets or shm without EFA hardware"),
                OptionSpec.of(OPT_ENDPOINT_COUNT, OptionSpec.Type.INT, 1,
                        "RDM endpoints per engine; slices are spread over them round-robin"),
                OptionSpec.of(OPT_CQ_SIZE, OptionSpec.Type.INT, 1024,
                        "completion queue size, which is also the most operations in flight per engine"),
                OptionSpec.of(OPT_PROGRESS_INTERVAL, OptionSpec.Type.DURATION, "200us",
                        "longest pause of the idle progress thread between completion-queue polls (also paces "
                                + "target-side progress for manual-progress providers)"));
    }

    @Override
    public Transport create(TransportContext context) {
        OptionValues o = context.options();
        String provider = o.getString(OPT_PROVIDER).strip();
        int endpoints = o.getInt(OPT_ENDPOINT_COUNT);
        int cqSize = o.getInt(OPT_CQ_SIZE);
        Duration interval = o.getDuration(OPT_PROGRESS_INTERVAL);
        if (provider.isEmpty()) {
            throw new ConfigException(PREFIX + OPT_PROVIDER, "must name a libfabric provider (efa, tcp;ofi_rxm, ...)");
        }
        if (endpoints < 1 || endpoints > 64) {
            throw new ConfigException(PREFIX + OPT_ENDPOINT_COUNT, "must be 1..64, got " + endpoints);
        }
        if (cqSize < 1 || cqSize > 1 << 20) {
            throw new ConfigException(PREFIX + OPT_CQ_SIZE, "must be 1..1048576, got " + cqSize);
        }
        if (interval.isNegative() || interval.compareTo(Duration.ofSeconds(1)) > 0) {
            throw new ConfigException(PREFIX + OPT_PROGRESS_INTERVAL, "must be 0..1s, got " + interval);
        }
        LibFabric lib;
        try {
            lib = LibFabric.load();
        } catch (LibFabric.LibraryMissingException e) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "efa transport: " + e.getMessage(), e);
        }
        FabricInfo info;
        try {
            info = FabricInfo.query(lib, provider);
        } catch (FabricInfo.NoEndpointException e) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "efa transport: " + e.getMessage(), e);
        }
        return new EfaTransport(context.segmentName(), lib, info, endpoints, cqSize, interval,
                maxOpBytes(info.maxMsgSize), context.clock());
    }
}
