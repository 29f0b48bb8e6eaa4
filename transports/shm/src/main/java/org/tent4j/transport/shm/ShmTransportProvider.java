package org.tent4j.transport.shm;

import java.io.IOException;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.List;

import org.tent4j.api.ConfigException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;

/**
 * Same-host, cross-process transfers through shared memory: engine-allocated memory lives in files of a tmpfs
 * directory that peers on the machine map with FFM, and a transfer is a plain memory copy.
 */
public final class ShmTransportProvider implements TransportProvider {
    public static final String ID = "shm";
    public static final String DEFAULT_DIR = "/dev/shm";
    /**
     * 64 KiB: a copy this size takes a few microseconds (L2-resident, about 10 GB/s), about what it costs to hand it
     * to a worker and wake it; above it, the posting thread (the engine's scheduler) would be held long enough to
     * delay other slices, and a worker copy overlaps with posting.
     */
    public static final String DEFAULT_COPY_THRESHOLD = "64k";

    static final long MAX_SLICE_SIZE = 1L << 30;
    static final int RANK = 10;

    // concurrentPosts: a post reads immutable mappings and copies (workers already copy side by side), so submitters
    // may each post their own slices
    private static final TransportCapabilities CAPABILITIES = TransportCapabilities.builder()
            .sameHostOnly(true).maxSliceSize(MAX_SLICE_SIZE).rank(RANK).concurrentPosts(true).build();

    private static final List<OptionSpec> OPTIONS = List.of(
            OptionSpec.of("dir", OptionSpec.Type.STRING, DEFAULT_DIR,
                    "directory for shared-memory files (a tmpfs; every engine on the machine must be able to read it)"),
            OptionSpec.of("copy_threshold", OptionSpec.Type.SIZE, DEFAULT_COPY_THRESHOLD,
                    "slices up to this size are copied on the posting thread, larger ones on engine workers"),
            OptionSpec.of("copy_parallelism", OptionSpec.Type.INT, 2,
                    "most engine workers copying for one peer at once"),
            OptionSpec.of("prefault_limit", OptionSpec.Type.SIZE, "4g",
                    "most bytes of live mappings (peers' buffers and this engine's own, in a tmpfs dir) whose page "
                            + "tables are populated in the background ahead of first use; 0 turns it off"));

    private volatile Availability availability;

    @Override
    public String id() {
        return ID;
    }

    @Override
    public String description() {
        return "same-host shared memory: files in " + DEFAULT_DIR + " mapped by every process (FFM)";
    }

    @Override
    public Availability availability() {
        Availability a = availability;
        if (a == null) {
            a = availability(Path.of(DEFAULT_DIR));
            availability = a;
        }
        return a;
    }

    @Override
    public Availability availability(OptionValues options) {
        String dir = options.getString("dir");
        if (dir.equals(DEFAULT_DIR)) {
            return availability();
        }
        try {
            return availability(Path.of(dir));
        } catch (InvalidPathException e) {
            return Availability.unavailable("transports.shm.dir '" + dir + "' is not a path: " + e.getMessage());
        }
    }

    /** Whether shm can work with files in {@code dir}, with the precise reason if not. */
    static Availability availability(Path dir) {
        try {
            ShmDirectory.probe(dir);
            return Availability.available();
        } catch (IOException | RuntimeException e) {
            return Availability.unavailable(e.getMessage());
        }
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
        OptionValues options = context.options();
        String dirText = options.getString("dir");
        Path dir;
        try {
            dir = Path.of(dirText);
        } catch (InvalidPathException e) {
            throw new ConfigException("transports.shm.dir", "'" + dirText + "' is not a path: " + e.getMessage(), e);
        }
        availability(dir).ensureAvailable("shm transport (transports.shm.dir = " + dirText + ")");
        long threshold = options.getSize("copy_threshold");
        if (threshold < 0) {
            throw new ConfigException("transports.shm.copy_threshold", "must be >= 0, got " + threshold);
        }
        int parallelism = options.getInt("copy_parallelism");
        if (parallelism < 1) {
            throw new ConfigException("transports.shm.copy_parallelism", "must be >= 1, got " + parallelism);
        }
        long prefaultLimit = options.getSize("prefault_limit");
        if (prefaultLimit < 0) {
            throw new ConfigException("transports.shm.prefault_limit", "must be >= 0, got " + prefaultLimit);
        }
        return new ShmTransport(context, new ShmDirectory(dir), threshold, parallelism, prefaultLimit);
    }
}
