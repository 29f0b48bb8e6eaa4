package org.tent4j.testkit.net;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/** Builds a two-host network, prints {@code UP <namespace>...} and waits on stdin: a test JVM to stop mid-test. */
public final class NetworkHolder {
    public static void main(String[] args) throws Exception {
        TestNetwork net = TestNetwork.create();
        net.addLink("l0", net.addHost("a"), net.addHost("b"));
        System.out.println("UP " + String.join(" ", net.namespaces()));
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        net.close();
    }
}
