package org.tent4j.testkit.conformance;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.testkit.conformance.ConformanceSlice.Outcome;
import org.tent4j.testkit.conformance.TransportUnderTest.Region;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** A peer that closes or dies, a transport that closes: slices fail instead of hang, threads go. */
abstract class FailureCases extends BadInputCases {
    // ------------------------------------------------------------------------------------------------ failures

    @Test
    void peerClosingSettlesInFlightSlicesInsteadOfHanging() {
        int n = 8;
        Region remote = b().allocate(n * MIB, Permission.READ_WRITE);
        Region local = a().allocate(n * MIB, Permission.READ_WRITE);
        PeerConnection c = connect(a(), b().descriptor());
        int paths = Math.max(1, c.pathCount());
        List<ConformanceSlice> inFlight = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            inFlight.add(post(c, slice(Opcode.WRITE, local, i * MIB, remote.descriptor(), remote.address() + i * MIB,
                    MIB, i % paths, failureDeadline())));
        }
        b().closeTransport();
        for (ConformanceSlice s : inFlight) {
            Outcome o = await(s, failureLimit(), "its peer's transport was closed while it was in flight; fail it "
                    + "(PEER_FAILED) when the peer goes, or at the latest at its deadline (TIMEOUT)");
            if (!o.completed()) {
                assertMessageSaysSomething(s, o);
            }
        }
    }

    @Test
    void slicesToAClosedPeerFail() throws InterruptedException {
        Region remote = b().allocate(64 * KIB, Permission.READ_WRITE);
        Region local = a().allocate(64 * KIB, Permission.READ_WRITE);
        SegmentDescriptor published = b().descriptor();
        PeerConnection c = connect(a(), published);
        assertCompleted(post(c, slice(Opcode.WRITE, local, 0, remote.descriptor(), remote.address(), 64 * KIB, 0,
                dataDeadline())));
        b().closeTransport();
        assertEventuallyFails(c, local, remote.descriptor(), "the peer's transport was closed");
        // a fresh connection to the dead peer: connect() may refuse, or its slices fail
        PeerConnection again;
        try {
            again = a().transport.connect(published);
        } catch (TransferException e) {
            assertFalse(e.getMessage() == null || e.getMessage().isBlank(), "connect() to a closed peer threw "
                    + e.code() + " without a message");
            return;
        }
        connections.add(again);
        assertEventuallyFails(again, local, remote.descriptor(), "a new connection was made to a closed peer");
    }

    @Test
    void closeSettlesInFlightSlicesAndRefusesNewOnes() {
        int n = 8;
        Region remote = b().allocate(n * MIB, Permission.READ_WRITE);
        Region local = a().allocate(n * MIB, Permission.READ_WRITE);
        PeerConnection c = connect(a(), b().descriptor());
        int paths = Math.max(1, c.pathCount());
        List<ConformanceSlice> inFlight = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            inFlight.add(post(c, slice(i % 2 == 0 ? Opcode.WRITE : Opcode.READ, local, i * MIB, remote.descriptor(),
                    remote.address() + i * MIB, MIB, i % paths, failureDeadline())));
        }
        a().closeTransport();
        for (ConformanceSlice s : inFlight) {
            await(s, failureLimit(), "Transport.close() must fail every slice still in flight");
        }
        assertFalse(c.isOpen(), "a connection is still open after its transport closed");
        ConformanceSlice late = post(c, slice(Opcode.WRITE, local, 0, remote.descriptor(), remote.address(), 4096, 0,
                failureDeadline()));
        Outcome o = await(late, failureLimit(), "it was posted on a connection of a closed transport");
        assertFalse(o.completed(), () -> late + " completed on a connection of a closed transport");
    }

    @Test
    void cancelReturnsSensibly() throws InterruptedException {
        TransportCapabilities caps = a().transport.capabilities().orElse(provider().capabilities());
        assumeTrue(caps.cancellation(), "the transport declares no cancellation");
        int n = 16;
        Region remote = b().allocate(n * MIB, Permission.READ_WRITE);
        Region local = a().allocate(n * MIB, Permission.READ_WRITE);
        PeerConnection c = connect(a(), b().descriptor());
        List<ConformanceSlice> slices = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            slices.add(post(c, slice(Opcode.WRITE, local, i * MIB, remote.descriptor(), remote.address() + i * MIB,
                    MIB, 0, dataDeadline())));
        }
        for (ConformanceSlice s : slices.reversed()) {
            if (c.cancel(s)) {
                canceled.add(s);
            }
        }
        for (ConformanceSlice s : slices) {
            if (!canceled.contains(s)) {
                await(s, dataLimit(), "cancel() returned false for it, so the transport still owns it");
            }
        }
        Thread.sleep(GRACE_MILLIS);
        for (ConformanceSlice s : canceled) {
            assertEquals(0, s.settlements(), () -> "cancel() returned true, yet the transport settled " + s + ": "
                    + s.settlementHistory());
        }
    }

    @Test
    void closeLeavesNoThreadsBehind() throws InterruptedException {
        assumeTrue(checksThreadLeaks(), "thread-leak check disabled by the test");
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        Region remote = b().allocate(64 * KIB, Permission.READ_WRITE);
        Region local = a().allocate(64 * KIB, Permission.READ_WRITE);
        PeerConnection c = connect(a(), b().descriptor());
        PeerConnection back = connect(b(), a().descriptor());
        for (int p = 0; p < Math.max(1, c.pathCount()); p++) {
            assertCompleted(post(c, slice(Opcode.WRITE, local, 0, remote.descriptor(), remote.address(), 4096, p,
                    dataDeadline())));
        }
        assertCompleted(post(back, slice(Opcode.READ, remote, 0, local.descriptor(), local.address(), 4096, 0,
                dataDeadline())));
        closeAll();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        List<String> leaked;
        do {
            leaked = new ArrayList<>();
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (t.isAlive() && !before.contains(t) && !isSharedThread(t)) {
                    leaked.add("'" + t.getName() + "'" + (t.isDaemon() ? " (daemon)" : ""));
                }
            }
            if (leaked.isEmpty()) {
                return;
            }
            Thread.sleep(50);
        } while (System.nanoTime() - until < 0);
        fail("threads still running 5 s after both transports and their contexts closed: " + leaked
                + " (override isSharedThread(Thread) for a JVM-wide executor of a library)");
    }

    @Test
    void sameHostOnlyTransportRefusesAPeerOnAnotherMachine() throws InterruptedException {
        TransportCapabilities caps = a().transport.capabilities().orElse(provider().capabilities());
        assumeTrue(caps.sameHostOnly(), "the transport is not same-host-only");
        Region remote = b().allocate(4096, Permission.READ_WRITE);
        Region local = a().allocate(4096, Permission.READ_WRITE);
        SegmentDescriptor elsewhere = b().descriptorOnMachine("another-" + machineId());
        PeerConnection c;
        try {
            c = a().transport.connect(elsewhere);
        } catch (TransferException e) {
            return; // refused up front: the best answer
        }
        connections.add(c);
        ConformanceSlice s = post(c, slice(Opcode.WRITE, local, 0, remote.descriptor(), remote.address(), 4096, 0,
                failureDeadline()));
        Outcome o = await(s, failureLimit());
        assertFalse(o.completed(), "a same-host-only transport connected to and wrote into a peer that reports "
                + "another machine id; refuse it in connect() (TRANSPORT_UNAVAILABLE)");
    }
}
