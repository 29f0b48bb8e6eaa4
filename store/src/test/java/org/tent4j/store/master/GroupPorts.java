package org.tent4j.store.master;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

/**
 * Ports for masters that must know each other's before any of them starts, so they cannot bind port 0 and say which
 * they got. A port found free can be taken by another module's test (the suite runs two at once) before its master
 * binds it: the group is then started again on fresh ports, never left to fail the test.
 */
final class GroupPorts {
    /** Starts of one group, the first included. */
    static final int ATTEMPTS = 5;

    private GroupPorts() {
    }

    /** {@code n} loopback ports free when picked and all different: each is held until the last is picked. */
    static int[] pick(int n) throws IOException {
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
     */
    static boolean taken(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof java.net.BindException || String.valueOf(c.getMessage()).contains("Address already in use")) {
                return true;
            }
        }
        return false;
    }

    /**
     * Lets a group in this JVM be started again. Ratis ends the JVM when its gRPC server cannot bind (ExitUtils.terminate):
     * the test run would die with it. With System.exit off it throws instead, and {@link DurableLog#open} reports the
     * bind failure.
     */
    static void keepJvmOnRatisBindFailure() {
        org.apache.ratis.util.ExitUtils.disableSystemExit();
    }

    /** Closes the logs of a failed start that did open (the others of a group of three elect without the third). */
    static void closeOpened(List<CompletableFuture<DurableLog>> opening) {
        for (CompletableFuture<DurableLog> f : opening) {
            try {
                f.join().close();
            } catch (RuntimeException | IOException ignored) {
                // this one failed to open, or its close did: the next start is on other ports, in emptied dirs
            }
        }
    }

    /** Empties a failed start's data dirs: their logs name the ports it was on. */
    static void wipe(Path... dirs) throws IOException {
        for (Path d : dirs) {
            if (Files.exists(d)) {
                try (Stream<Path> files = Files.walk(d)) {
                    for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
                        Files.delete(f);
                    }
                }
            }
        }
    }
}
