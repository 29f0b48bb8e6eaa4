package org.tent4j.transport.tcp;

import java.util.Map;

import org.junit.jupiter.api.Nested;

import org.tent4j.spi.TransportProvider;
import org.tent4j.testkit.conformance.TransportConformance;
import org.tent4j.transport.faulty.FaultInjectingTransportProvider;

/** tcp against te-testkit's conformance suite, alone (in this JVM and with a peer JVM) and through the fault injector. */
class TcpConformanceTest extends TransportConformance {

    @Override
    protected TransportProvider provider() {
        return new TcpTransportProvider();
    }

    @Override
    protected boolean peerInAnotherJvm() {
        return true;
    }

    /** faulty(wraps=tcp) without faults must pass everything tcp passes: the wrapper is transparent. */
    @Nested
    class ThroughTheFaultInjector extends TransportConformance {
        @Override
        protected TransportProvider provider() {
            return new FaultInjectingTransportProvider();
        }

        @Override
        protected Map<String, String> options() {
            return Map.of("wraps", "tcp");
        }
    }
}
