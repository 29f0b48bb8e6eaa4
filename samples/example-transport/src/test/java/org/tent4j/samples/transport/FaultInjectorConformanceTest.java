package org.tent4j.samples.transport;

import java.util.Map;

import org.tent4j.spi.TransportProvider;
import org.tent4j.testkit.conformance.TransportConformance;
import org.tent4j.transport.faulty.FaultInjectingTransportProvider;

/**
 * The fault injector with no fault configured must be invisible: faulty(wraps=uds) passes everything uds passes,
 * including a peer in another JVM (which proves descriptors published under "faulty" reach the delegate as "uds").
 */
class FaultInjectorConformanceTest extends TransportConformance {

    @Override
    protected TransportProvider provider() {
        return new FaultInjectingTransportProvider();
    }

    @Override
    protected Map<String, String> options() {
        return Map.of("wraps", UdsTransportProvider.ID);
    }

    @Override
    protected boolean peerInAnotherJvm() {
        return true;
    }
}
