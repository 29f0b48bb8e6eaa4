package org.tent4j.testkit.servers;

import org.tent4j.testkit.net.Host;

/** What the servers need to run inside a test-bed host, where the test JVM itself cannot reach them. */
final class TestNetworkServers {
    private TestNetworkServers() {
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
