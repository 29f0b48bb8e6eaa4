package org.tent4j.store.master;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

/**
 * What a group of masters started again on fresh ports ({@link org.tent4j.testkit.net.FreePorts}: they must know each
 * other's ports before any of them starts) needs beyond the ports: Ratis kept from ending the JVM, the logs of a failed
 * start closed and its data dirs emptied.
 */
final class GroupPorts {
    private GroupPorts() {
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

    /** Empties data dirs a start that lost a port left (none before a first start): their logs name its ports. */
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
