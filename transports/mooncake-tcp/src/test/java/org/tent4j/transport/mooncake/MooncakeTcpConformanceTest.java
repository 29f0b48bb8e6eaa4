package org.tent4j.transport.mooncake;

import org.tent4j.spi.TransportProvider;
import org.tent4j.testkit.conformance.TransportConformance;

/**
 * te-testkit's conformance suite over the Mooncake wire in v2 framing (both sides are tent4j targets, which publish
 * tcp_proto_version 2). Every case applies, with these readings:
 * <ul>
 * <li>bad input: a Mooncake target answers a refused range with status 1 (OUT_OF_BOUNDS here) and a tent4j target
 *     refuses a WRITE into a READ_ONLY buffer with status 2 (PERMISSION_DENIED); both then close the connection as
 *     Mooncake does, and the lane reconnects for its next slice.</li>
 * <li>cancellation: not declared; a request on this wire cannot be withdrawn once its header left.</li>
 * <li>peer in another JVM: runs; the wire needs no control-plane handshake.</li>
 * </ul>
 * Not here: notifications, which are engine-level in tent4j and do not exist on Mooncake's TCP wire; and v1 framing,
 * whose refusals are a closed connection that no initiator can tell from a crash (PEER_FAILED, not a bad-input code),
 * so the bad-input cases cannot hold for it. {@code MooncakePeerTest} covers v1 against a Mooncake peer.
 */
class MooncakeTcpConformanceTest extends TransportConformance {

    @Override
    protected TransportProvider provider() {
        return new MooncakeTcpTransportProvider();
    }

    @Override
    protected boolean peerInAnotherJvm() {
        return true;
    }
}
