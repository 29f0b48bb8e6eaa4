package org.tent4j.samples.transport;

import org.tent4j.spi.TransportProvider;
import org.tent4j.testkit.conformance.TransportConformance;

/**
 * All a plugin needs to run te-testkit's conformance suite: extend it and name the provider. The uds transport checks
 * every access on the target and needs no control-plane handshake, so it also runs the cases with a peer in a second
 * JVM.
 */
class UdsConformanceTest extends TransportConformance {

    @Override
    protected TransportProvider provider() {
        return new UdsTransportProvider();
    }

    @Override
    protected boolean peerInAnotherJvm() {
        return true;
    }
}
