package org.tent4j.transport.shm;

import java.util.Map;

import org.junit.jupiter.api.Nested;
import org.tent4j.spi.TransportProvider;
import org.tent4j.testkit.conformance.TransportConformance;
import org.tent4j.transport.faulty.FaultInjectingTransportProvider;

/** shm against te-testkit's conformance suite, alone and through the fault injector (which must be transparent). */
class ShmConformanceTest extends TransportConformance {

    @Override
    protected TransportProvider provider() {
        return new ShmTransportProvider();
    }

    /**
     * shm is one-sided: the initiator maps the file the peer published and copies, so what the peer published is the
     * only gate. A forged descriptor claiming READ_WRITE for a READ_ONLY buffer maps it writable (file permissions
     * are per user, not per buffer), and a stale one reaches memory the peer still holds. Bounds are still enforced:
     * the mapping is exactly the published range.
     */
    @Override
    protected boolean targetChecksEveryAccess() {
        return false;
    }

    @Override
    protected boolean peerInAnotherJvm() {
        return true;
    }

    /**
     * faulty(wraps=shm) with no faults must pass everything shm passes: this exercises the wrapper's rewriting of
     * buffer attributes (shm's path, size and offset) and its delegation of the allocator.
     */
    @Nested
    class ThroughTheFaultInjector extends TransportConformance {
        @Override
        protected TransportProvider provider() {
            return new FaultInjectingTransportProvider();
        }

        @Override
        protected Map<String, String> options() {
            return Map.of("wraps", ShmTransportProvider.ID);
        }

        @Override
        protected boolean targetChecksEveryAccess() {
            return false;
        }
    }
}
