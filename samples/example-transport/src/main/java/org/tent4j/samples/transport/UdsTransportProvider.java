package org.tent4j.samples.transport;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
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
 * An example transport plugin: same-host transfers over UNIX-domain sockets. It is small on purpose, to show the
 * whole SPI in a few hundred lines; read it together with docs/WRITING_A_TRANSPORT.md.
 *
 * <p>The provider is what {@link java.util.ServiceLoader} finds (see {@code META-INF/services}). It must be cheap to
 * construct: nothing is probed until the runtime asks {@link #availability()}.
 */
public final class UdsTransportProvider implements TransportProvider {
    public static final String ID = "uds";
    /** After shm (10), before tcp (100): a socket on one machine beats TCP loopback, a shared mapping beats both. */
    static final int RANK = 90;
    /** Frames carry the length as a long, but a slice is copied through one ByteBuffer view, which holds < 2 GiB. */
    static final long MAX_SLICE_SIZE = 64L << 20;

    private static final TransportCapabilities CAPABILITIES = TransportCapabilities.builder()
            .sameHostOnly(true).maxSliceSize(MAX_SLICE_SIZE).rank(RANK).build();

    private static final List<OptionSpec> OPTIONS = List.of(
            OptionSpec.of("paths", OptionSpec.Type.INT, 2,
                    "socket connections per peer; each is a path the runtime balances over, with its own thread"),
            OptionSpec.of("dir", OptionSpec.Type.STRING, "",
                    "directory for the listening socket (empty = java.io.tmpdir); keep it short, socket paths are limited to ~100 bytes"));

    // probed once and kept, like Netty's Epoll: availability is asked often and must not redo work
    private volatile Availability platform;

    @Override
    public String id() {
        return ID;
    }

    @Override
    public String description() {
        return "example: same-host transfers over UNIX-domain sockets";
    }

    @Override
    public Availability availability() {
        Availability a = platform;
        if (a == null) {
            a = Availability.probe(() -> SocketChannel.open(StandardProtocolFamily.UNIX).close());
            platform = a;
        }
        return a;
    }

    /** The platform probe, then the configured directory: the cause names exactly what is wrong. */
    @Override
    public Availability availability(OptionValues options) {
        Availability a = availability();
        if (!a.isAvailable()) {
            return a;
        }
        try {
            Path dir = directory(options);
            if (!Files.isDirectory(dir) || !Files.isWritable(dir)) {
                return Availability.unavailable("transports.uds.dir '" + dir + "' is not a writable directory");
            }
            return a;
        } catch (InvalidPathException e) {
            return Availability.unavailable("transports.uds.dir is not a path: " + e.getMessage());
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
        int paths = context.options().getInt("paths");
        if (paths < 1 || paths > 64) {
            throw new ConfigException("transports.uds.paths", "must be in [1, 64], got " + paths);
        }
        availability(context.options()).ensureAvailable("uds transport");
        try {
            return new UdsTransport(context, directory(context.options()), paths);
        } catch (IOException e) {
            throw new ConfigException("transports.uds.dir", "cannot listen on a socket in "
                    + directory(context.options()) + ": " + e, e);
        }
    }

    private static Path directory(OptionValues options) {
        String dir = options.getString("dir");
        return Path.of(dir.isEmpty() ? System.getProperty("java.io.tmpdir") : dir);
    }
}
