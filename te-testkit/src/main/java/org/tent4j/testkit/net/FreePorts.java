package org.tent4j.testkit.net;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/**
 * Ports for servers a test must name before they start. A port found free can be taken by another module's test (the
 * suite runs two modules at once) before the server binds it: {@link #startOn} then starts it again on fresh ports,
 * so such a race never fails a test.
 */
public final class FreePorts {
    /** Starts on fresh ports, the first included. */
    public static final int ATTEMPTS = 5;

    private FreePorts() {
    }

    /**
     * A start on the given ports, which may fail because one of them was taken meanwhile ({@link #taken}).
     *
     * @param <T> what the start returns
     */
    @FunctionalInterface
    public interface Start<T> {
        /**
         * Starts on {@code ports}.
         *
         * @param ports the ports picked for this start, all different
         * @return what was started
         * @throws IOException if the start failed
         */
        T on(int[] ports) throws IOException;
    }

    /**
     * Loopback ports free when picked and all different: each is held until the last is picked.
     *
     * @param n how many
     * @return the ports
     * @throws IOException if no socket could be bound
     */
    public static int[] pick(int n) throws IOException {
        ServerSocket[] held = new ServerSocket[n];
        try {
            int[] ports = new int[n];
            for (int i = 0; i < n; i++) {
                held[i] = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                ports[i] = held[i].getLocalPort();
            }
            return ports;
        } finally {
            for (ServerSocket s : held) {
                if (s != null) {
                    s.close();
                }
            }
        }
    }

    /**
     * Whether a start failed on a port taken meanwhile: a {@link java.net.BindException} in the chain, or "Address
     * already in use" in a message (Netty's epoll transport throws its own exception, not a BindException).
     *
     * @param e the start's failure
     * @return true if it was a port taken
     */
    public static boolean taken(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof java.net.BindException || String.valueOf(c.getMessage()).contains("Address already in use")) {
                return true;
            }
        }
        return false;
    }

    /**
     * Runs {@code start} on fresh ports ({@link #pick}), again on fresh ones when it failed because a port was taken,
     * at most {@link #ATTEMPTS} times; any other failure, or the last, is thrown as it was.
     *
     * @param <T> what the start returns
     * @param n how many ports the start needs
     * @param start the start
     * @return what the first start that did not lose a port returned
     * @throws IOException as the start threw it, or if no ports could be picked
     */
    public static <T> T startOn(int n, Start<T> start) throws IOException {
        for (int attempt = 1; ; attempt++) {
            try {
                return start.on(pick(n));
            } catch (IOException | RuntimeException e) {
                if (attempt == ATTEMPTS || !taken(e)) {
                    throw e;
                }
            }
        }
    }
}
