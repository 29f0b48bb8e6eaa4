package org.tent4j.store.master;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy in front of a master that can lose the master's answers: with {@link #loseAnswers} on, bytes from the
 * master are dropped (what the client sent still arrives and is applied), and {@link #cut} then closes every
 * connection, so the client sees its stream break with the answer lost, as when a master dies after committing.
 */
final class AnswerLosingProxy implements AutoCloseable {
    private final ServerSocket listener;
    private final int target;
    private final List<Socket> open = new CopyOnWriteArrayList<>();
    private volatile boolean losing;

    AnswerLosingProxy(int targetPort) throws IOException {
        this.target = targetPort;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread.ofVirtual().start(this::accept);
    }

    String address() {
        return "127.0.0.1:" + listener.getLocalPort();
    }

    void loseAnswers() {
        losing = true;
    }

    /** Closes every connection (a client's next call connects again) and forwards answers again. */
    void cut() {
        for (Socket s : open) {
            closeQuietly(s);
        }
        open.clear();
        losing = false;
    }

    private void accept() {
        while (!listener.isClosed()) {
            try {
                Socket client = listener.accept();
                Socket master = new Socket();
                master.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), target));
                open.add(client);
                open.add(master);
                Thread.ofVirtual().start(() -> pump(client, master, false));
                Thread.ofVirtual().start(() -> pump(master, client, true));
            } catch (IOException closed) {
                return;
            }
        }
    }

    private void pump(Socket from, Socket to, boolean answers) {
        byte[] buf = new byte[64 << 10];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            for (int n; (n = in.read(buf)) >= 0; ) {
                if (!(answers && losing)) {
                    out.write(buf, 0, n);
                    out.flush();
                }
            }
        } catch (IOException closed) {
            // either side went away: the other one goes too
        } finally {
            closeQuietly(from);
            closeQuietly(to);
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing
        }
    }

    @Override
    public void close() {
        try {
            listener.close();
        } catch (IOException ignored) {
            // closing
        }
        cut();
    }
}
