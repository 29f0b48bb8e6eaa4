package org.tent4j.transport.tcp;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Listens at {@code at:port} and relays each connection to {@code 127.0.0.1:port}: a second rail to a target that
 * listens on one loopback address only, which a test can bring up after a connection left it out.
 */
final class LoopbackRelay implements AutoCloseable {
    private final ServerSocket server;
    private final int port;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    /** Bytes relayed from the initiator to the target: what the rail carried. */
    final AtomicLong forwarded = new AtomicLong();

    LoopbackRelay(InetAddress at, int port) throws IOException {
        this.port = port;
        this.server = new ServerSocket(port, 50, at);
        Thread.ofVirtual().name("relay-accept").start(this::accept);
    }

    private void accept() {
        try {
            for (;;) {
                Socket in = server.accept();
                Socket out = new Socket(InetAddress.getLoopbackAddress(), port);
                sockets.add(in);
                sockets.add(out);
                Thread.ofVirtual().start(() -> pipe(in, out, forwarded));
                Thread.ofVirtual().start(() -> pipe(out, in, new AtomicLong()));
            }
        } catch (IOException e) {
            // closed
        }
    }

    private static void pipe(Socket from, Socket to, AtomicLong count) {
        byte[] buf = new byte[64 << 10];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            int n;
            while ((n = in.read(buf)) > 0) {
                count.addAndGet(n); // before passing them on: the answer may come back before a count after would
                out.write(buf, 0, n);
            }
        } catch (IOException e) {
            // either side closed
        } finally {
            close(from);
            close(to);
        }
    }

    private static void close(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // already closed
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
        sockets.forEach(LoopbackRelay::close);
    }
}
