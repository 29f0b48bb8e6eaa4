package org.tent4j.testkit.servers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** Ports on 127.0.0.1 for servers that tests start. */
public final class LoopbackPorts {
    private LoopbackPorts() {
    }

    /**
     * A port that nothing listens on right now. Another process may take it before the caller binds it, so launchers
     * retry with a fresh port when a bind fails.
     *
     * @return the port
     */
    public static int free() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot find a free port on 127.0.0.1", e);
        }
    }
}
