package org.tent4j.transport.nvmeof;

import java.io.IOException;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;

/**
 * File segments (TENT's io_uring / bufio / gds, TE's nvmeof): host memory ↔ files and block devices of this host
 * through io_uring with O_DIRECT, else positional FileChannel I/O; GPU memory ↔ files through cuFile (GDS) when
 * libcufile loads. Always available (FileChannel needs nothing); {@link #description()} says which engine runs here
 * and why the others do not.
 */
public final class NvmeofTransportProvider implements TransportProvider {
    public static final String ID = "nvmeof";
    static final long MAX_SLICE_SIZE = 64L << 20;
    static final int RANK = 40;
    static final TransportCapabilities CAPABILITIES = TransportCapabilities.builder()
            .memoryPath(MemoryKind.CPU, MemoryKind.FILE).sameHostOnly(true).maxSliceSize(MAX_SLICE_SIZE).rank(RANK).build();

    private static final List<OptionSpec> OPTIONS = List.of(
            OptionSpec.of("engine", OptionSpec.Type.STRING, "auto",
                    "auto (io_uring when it works here, else filechannel), io_uring, or filechannel"),
            OptionSpec.of("rings", OptionSpec.Type.INT, 2, "I/O paths: io_uring instances (or FileChannel threads), one thread each"),
            OptionSpec.of("queue_depth", OptionSpec.Type.INT, 128, "submission entries per io_uring"),
            OptionSpec.of("direct", OptionSpec.Type.BOOLEAN, true, "open files O_DIRECT (bypass the page cache) where the file system allows"),
            OptionSpec.of("alignment", OptionSpec.Type.INT, 4096, "O_DIRECT alignment of memory address, file offset and length"),
            OptionSpec.of("bounce_size", OptionSpec.Type.SIZE, "1m", "size of each aligned bounce buffer for unaligned O_DIRECT reads"),
            OptionSpec.of("bounces", OptionSpec.Type.INT, 8, "bounce buffers per io_uring"),
            OptionSpec.of("peer_roots", OptionSpec.Type.STRING, "",
                    "comma-separated directories under which same-host peers' files may be opened (empty: peers' files are refused)"),
            OptionSpec.of("gds", OptionSpec.Type.BOOLEAN, true, "move GPU memory through cuFile (GPUDirect Storage) when libcufile loads"));

    private static volatile Availability uring;
    private static volatile Availability gdsAvailability;

    @Override
    public String id() {
        return ID;
    }

    @Override
    public String description() {
        Availability u = uringAvailability();
        Availability g = gdsAvailability();
        return "file segments (cpu->file" + (g.isAvailable() ? ", cuda->file" : "") + "): "
                + (u.isAvailable() ? "io_uring + O_DIRECT" : "FileChannel (io_uring unavailable: " + u.reason() + ")")
                + "; GDS " + (g.isAvailable() ? "available" : "unavailable: " + g.reason());
    }

    /** Always available: where io_uring is not, positional FileChannel I/O is. */
    @Override
    public Availability availability() {
        return Availability.available();
    }

    @Override
    public Availability availability(OptionValues options) {
        String engine = options.getString("engine");
        if (engine.equals("io_uring")) {
            Availability u = uringAvailability();
            return u.isAvailable() ? u : Availability.unavailable("transports.nvmeof.engine=io_uring but io_uring is unavailable: " + u.reason());
        }
        return Availability.available();
    }

    /** Whether io_uring with READ/WRITE works here; probed once. */
    static Availability uringAvailability() {
        Availability a = uring;
        if (a == null) {
            if (!LinuxIo.isAvailable()) {
                Throwable t = LinuxIo.unavailabilityCause();
                a = Availability.unavailable("libc calls cannot be bound (" + t + "); run with --enable-native-access=ALL-UNNAMED");
            } else {
                try {
                    IoUring.probe();
                    a = Availability.available();
                } catch (IOException | RuntimeException e) {
                    a = Availability.unavailable(e.getMessage());
                }
            }
            uring = a;
        }
        return a;
    }

    /** Whether libcufile loads and its driver opens; probed once (the driver is closed again after the probe). */
    static Availability gdsAvailability() {
        Availability a = gdsAvailability;
        if (a == null) {
            a = Availability.probe(() -> CuFileIo.open(CuFileIo.candidates()).close());
            gdsAvailability = a;
        }
        return a;
    }

    @Override
    public TransportCapabilities capabilities() {
        return CAPABILITIES;
    }

    @Override
    public List<OptionSpec> options() {
        return OPTIONS;
    }

    @Override
    public Transport create(TransportContext context) {
        OptionValues o = context.options();
        String engine = o.getString("engine");
        boolean useUring = switch (engine) {
            case "auto" -> uringAvailability().isAvailable();
            case "io_uring" -> {
                uringAvailability().ensureAvailable("nvmeof io_uring engine");
                yield true;
            }
            case "filechannel" -> false;
            default -> throw new ConfigException("transports.nvmeof.engine", "must be auto, io_uring or filechannel, got '" + engine + "'");
        };
        int rings = positive(o.getInt("rings"), "rings");
        int depth = positive(o.getInt("queue_depth"), "queue_depth");
        if (depth > 4096) {
            throw new ConfigException("transports.nvmeof.queue_depth", "must be <= 4096, got " + depth);
        }
        int alignment = positive(o.getInt("alignment"), "alignment");
        if (Integer.bitCount(alignment) != 1 || alignment < 512) {
            throw new ConfigException("transports.nvmeof.alignment", "must be a power of two >= 512, got " + alignment);
        }
        long bounceSize = o.getSize("bounce_size");
        if (bounceSize < alignment || bounceSize > (1L << 30) || bounceSize % alignment != 0) {
            throw new ConfigException("transports.nvmeof.bounce_size", "must be a multiple of the alignment " + alignment
                    + " up to 1g, got " + bounceSize);
        }
        int bounces = o.getInt("bounces");
        if (bounces < 0) {
            throw new ConfigException("transports.nvmeof.bounces", "must be >= 0, got " + bounces);
        }
        List<Path> roots = new ArrayList<>();
        for (String r : o.getString("peer_roots").split(",")) {
            if (r.isBlank()) {
                continue;
            }
            try {
                Path p = Path.of(r.strip());
                if (!p.isAbsolute()) {
                    throw new ConfigException("transports.nvmeof.peer_roots", "'" + r.strip() + "' is not an absolute path");
                }
                roots.add(p.normalize());
            } catch (InvalidPathException e) {
                throw new ConfigException("transports.nvmeof.peer_roots", "'" + r.strip() + "' is not a path: " + e.getMessage());
            }
        }
        CuFileIo gds = null;
        if (o.getBoolean("gds") && gdsAvailability().isAvailable()) {
            try {
                gds = CuFileIo.open(CuFileIo.candidates());
            } catch (Availability.UnavailableException e) {
                org.slf4j.LoggerFactory.getLogger(NvmeofTransportProvider.class).warn("nvmeof: GDS not used: {}", e.getMessage());
            }
        }
        try {
            return new NvmeofTransport(context, useUring, rings, depth, o.getBoolean("direct"), alignment, (int) bounceSize,
                    bounces, roots, gds);
        } catch (IOException e) {
            if (gds != null) {
                gds.close();
            }
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "nvmeof could not start: " + e.getMessage(), e);
        }
    }

    private static int positive(int v, String name) {
        if (v < 1) {
            throw new ConfigException("transports.nvmeof." + name, "must be >= 1, got " + v);
        }
        return v;
    }
}
