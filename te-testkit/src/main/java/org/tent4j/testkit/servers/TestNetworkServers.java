package org.tent4j.testkit.servers;

import org.tent4j.testkit.net.Host;

/** What the servers need to run inside a test-bed host, where the test JVM itself cannot reach them. */
final class TestNetworkServers {
    private TestNetworkServers() {
    }

    /**
     * Starts a server's process under {@code host}'s prefix with {@code start}; if it does not come up, {@code close}
     * kills it and removes its work dir before the failure is thrown.
     */
    static <S> S startIn(Host host, ServerProcess process, S server, Runnable start, Runnable close) {
        process.runUnder(host.command(java.util.List.of()));
        try {
            start.run();
            return server;
        } catch (RuntimeException e) {
            close.run();
            throw e;
        }
    }

    /**
     * Whether {@code address:port} accepts a TCP connection from inside {@code host} (bash's {@code /dev/tcp}, so no
     * client tool is needed): the readiness check of a server whose address only the test network reaches.
     */
    static boolean accepts(Host host, String address, int port) {
        try {
            host.exec("bash", "-c", "exec 3<>/dev/tcp/" + address + "/" + port);
            return true;
        } catch (RuntimeException notYet) {
            return false;
        }
    }
}
