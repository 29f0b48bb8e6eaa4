package org.tent4j.cli.store;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.store.PrintableId;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.ScrubReport;
import org.tent4j.store.client.StoreClient;

/**
 * A node's control socket: the Unix domain socket {@code DIR/tent4j-store.control} beside its disk file, through which
 * {@code tent4j store scrub --disk-dir DIR} asks the running node for a scrub and gets its report. No port and no
 * token: the socket is the node's user's alone (mode 0600, in the disk directory whose permissions already guard the
 * disk file), as a local daemon's socket is. A request is one line ({@code scrub}); the answer is lines of text,
 * {@code MISMATCH ...} per corrupt replica, then {@code SCRUB ...} (or {@code ERROR ...}), then the node closes.
 */
final class NodeControl implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NodeControl.class);
    static final String SOCKET = "tent4j-store.control";
    /** Longest request line read. */
    private static final int MAX_REQUEST = 64;
    /** How long a connection may take to send its request before the node closes it. */
    private static final long REQUEST_SECONDS = 10;

    private final Path path;
    private final ServerSocketChannel server;
    private final StoreClient node;

    private NodeControl(Path path, ServerSocketChannel server, StoreClient node) {
        this.path = path;
        this.server = server;
        this.node = node;
    }

    /** The socket's path for a node's disk directory. */
    static Path socket(Path diskDir) {
        return diskDir.resolve(SOCKET);
    }

    /**
     * Serves {@code node}'s scrub on {@code DIR/tent4j-store.control}; the node holds DIR's disk file (its lock), so a
     * socket file left there is a dead node's and is replaced. Throws when the socket cannot be bound (a path over
     * the 107 bytes Unix sockets allow, a file system without them).
     */
    static NodeControl open(Path diskDir, StoreClient node) throws IOException {
        Path path = socket(diskDir);
        Files.deleteIfExists(path);
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            server.bind(UnixDomainSocketAddress.of(path));
            // connecting takes write permission on the socket: under the usual umask only the owner has it from the
            // bind on, and from here on nobody else has any
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-------"));
        } catch (IOException | RuntimeException e) {
            server.close();
            throw e;
        }
        NodeControl control = new NodeControl(path, server, node);
        Thread.ofPlatform().daemon().name("store-node-control").start(control::accept);
        return control;
    }

    private void accept() {
        while (server.isOpen()) {
            try {
                SocketChannel ch = server.accept();
                Thread.ofVirtual().name("store-node-control-request").start(() -> serve(ch));
            } catch (ClosedChannelException e) {
                return;
            } catch (IOException e) {
                LOG.warn("control socket {}: accepting failed: {}", path, e.getMessage());
            }
        }
    }

    private void serve(SocketChannel ch) {
        AtomicBoolean asked = new AtomicBoolean();
        CompletableFuture.delayedExecutor(REQUEST_SECONDS, TimeUnit.SECONDS).execute(() -> {
            if (!asked.get()) {
                closeQuietly(ch); // a silent connection ends in bounded time
            }
        });
        try (ch) {
            String request = readLine(ch);
            asked.set(true);
            write(ch, answer(request));
        } catch (IOException e) {
            LOG.debug("control socket {}: a request ended early: {}", path, e.getMessage());
        }
    }

    private String answer(String request) {
        if (request == null) {
            return "ERROR a request is one line of at most " + MAX_REQUEST + " bytes: 'scrub'\n";
        }
        if (!request.strip().toLowerCase(Locale.ROOT).equals("scrub")) {
            return "ERROR unknown request '" + PrintableId.forLog(request) + "': this node serves 'scrub'\n";
        }
        LOG.info("scrub asked for through {}", path);
        try {
            return report(node.scrubDisk(), node.diskSegment().map(s -> s.file()).orElse("(no disk)"));
        } catch (StoreException e) {
            return "ERROR " + e.getMessage().replace('\n', ' ') + "\n";
        }
    }

    /** The report as the scrub command prints it: one line per corrupt replica, then the summary. */
    static String report(ScrubReport r, String file) {
        StringBuilder sb = new StringBuilder();
        for (ScrubReport.Mismatch m : r.mismatches()) {
            sb.append("MISMATCH key '").append(PrintableId.forLog(m.key())).append("' file ").append(m.file())
                    .append(" offset ").append(m.offset()).append(" length ").append(m.length()).append(": ")
                    .append(m.reason().replace('\n', ' ')).append('\n');
        }
        return sb.append("SCRUB ").append(file).append(": ").append(r.checked()).append(" disk replicas checked, ")
                .append(r.mismatches().size()).append(" corrupt, ").append(r.dropped()).append(" dropped\n").toString();
    }

    /** The request line, or null when the peer sent more than {@link #MAX_REQUEST} bytes without a newline. */
    private static String readLine(SocketChannel ch) throws IOException {
        ByteBuffer buf = ByteBuffer.allocate(MAX_REQUEST);
        while (buf.hasRemaining()) {
            int before = buf.position();
            if (ch.read(buf) < 0) {
                break;
            }
            for (int i = before; i < buf.position(); i++) {
                if (buf.get(i) == '\n') {
                    return new String(buf.array(), 0, i, StandardCharsets.UTF_8);
                }
            }
        }
        return buf.hasRemaining() ? new String(buf.array(), 0, buf.position(), StandardCharsets.UTF_8) : null;
    }

    private static void write(SocketChannel ch, String text) throws IOException {
        ByteBuffer out = ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
        while (out.hasRemaining()) {
            ch.write(out);
        }
    }

    private static void closeQuietly(SocketChannel ch) {
        try {
            ch.close();
        } catch (IOException ignored) {
            // closing to end a silent connection: nothing more to do
        }
    }

    @Override
    public void close() {
        try {
            server.close();
            Files.deleteIfExists(path);
        } catch (IOException e) {
            LOG.warn("control socket {}: closing failed: {}", path, e.getMessage());
        }
    }
}
