package org.tent4j.testkit.conformance;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.TransportProvider;
import org.tent4j.testkit.conformance.TransportUnderTest.Region;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The conformance suite every {@link TransportProvider} runs. Extend it, return the provider, and run it with JUnit 5:
 * <pre>{@code
 * class MyTransportConformanceTest extends TransportConformance {
 *     @Override protected TransportProvider provider() { return new MyTransportProvider(); }
 * }
 * }</pre>
 * It drives the transport the way the runtime does, without a runtime: two engines' worth of the transport ("a" and
 * "b", one machine id) over {@link org.tent4j.testkit.transport.TestTransportContext}s, memory allocated the engine's
 * way (the transport's own allocator when it has one, else a shared arena), buffers registered through
 * {@code registerBuffer}, and the peer's {@link SegmentDescriptor} built from what the transport published. Slices are
 * {@link ConformanceSlice}s that record every settlement.
 *
 * <p>What it checks: availability and capabilities make sense; bytes arrive intact for READ and WRITE, loopback and
 * remote, from 1 byte to 16 MiB (capped at the transport's {@code maxSliceSize}) at unaligned offsets; every path
 * moves slices; four threads can post at once; bad input (out of bounds, read-only target, unregistered buffer,
 * passed deadline) fails with the right codes and touches nothing; a peer that closes or dies makes slices fail instead
 * of hang; {@code close()} settles what is in flight and leaves no threads behind; every slice posted in any case
 * settled exactly once (checked after each case, after {@code close()}).
 *
 * <p>The cases are grouped by concern in the classes this one extends ({@link PluginCases}, {@link ByteCases},
 * {@link BadInputCases}, {@link FailureCases}); the second-JVM cases are here.
 *
 * <p>Hooks: {@link #options()}, {@link #transferTimeout()}, {@link #supportsLoopback()},
 * {@link #targetChecksEveryAccess()}, {@link #peerInAnotherJvm()}, {@link #isSharedThread(Thread)} and others below.
 * Cases run one at a time (segment names "a" and "b" are shared through the in-JVM control plane).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
public abstract class TransportConformance extends FailureCases {
    /** Where the target buffer lives. */
    public enum Route {
        /** In the initiator's own segment. */
        LOOPBACK,
        /** In the other transport's segment. */
        REMOTE
    }

    /** The slice sizes every transport moves. */
    public enum SizeClass {
        /** One byte: the smallest slice. */
        ONE_BYTE(1, "1 B"),
        /** One byte short of a page: unaligned ends. */
        PAGE_MINUS_ONE(4095, "4095 B"),
        /** 64 KiB. */
        SMALL(64 * KIB, "64 KiB"),
        /** 1 MiB. */
        MEDIUM(MIB, "1 MiB"),
        /** 16 MiB, capped at the transport's {@code maxSliceSize} and {@link #largestSliceTested()}. */
        LARGE(16 * MIB, "16 MiB");

        final long bytes;
        private final String label;

        SizeClass(long bytes, String label) {
            this.bytes = bytes;
            this.label = label;
        }

        @Override
        public String toString() {
            return label;
        }
    }

    /** For a subclass that names the provider under test. */
    public TransportConformance() {
    }

    // ------------------------------------------------------------------------------------------------ a second JVM


    @Test
    void peerInAnotherJvmServesReadsAndWrites() throws Exception {
        assumeTrue(peerInAnotherJvm(), "cross-process cases not enabled (override peerInAnotherJvm())");
        long size = 4 * MIB + 123;
        try (PeerProcess peer = startPeer(size)) {
            PeerConnection c = connect(a(), peer.descriptor);
            Region local = a().allocate(size + 64, Permission.READ_WRITE);
            long readOffset = 1001;
            long readLength = 2 * MIB + 7;
            ConformanceSlice read = post(c, slice(Opcode.READ, local, 3, peer.buffer, peer.buffer.address() + readOffset,
                    readLength, 0, dataDeadline()));
            assertCompleted(read);
            assertEquals(peer.crc32c(readOffset, readLength), BytePattern.crc32c(local.segment(), 3, readLength),
                    () -> "bytes read from the peer JVM differ from what it holds: " + read);
            int paths = Math.max(1, c.pathCount());
            long chunk = MIB + 1;
            BytePattern.fill(local.segment(), 0, paths * chunk, 71);
            for (int p = 0; p < paths; p++) {
                long off = 5 + p * chunk;
                ConformanceSlice write = post(c, slice(Opcode.WRITE, local, p * chunk, peer.buffer,
                        peer.buffer.address() + off, chunk, p, dataDeadline()));
                assertCompleted(write);
                assertEquals(BytePattern.crc32c(local.segment(), p * chunk, chunk), peer.crc32c(off, chunk),
                        () -> "bytes written into the peer JVM differ from what was sent: " + write);
            }
        }
    }

    @Test
    void killedPeerJvmFailsSlicesInsteadOfHanging() throws Exception {
        assumeTrue(peerInAnotherJvm(), "cross-process cases not enabled (override peerInAnotherJvm())");
        try (PeerProcess peer = startPeer(MIB)) {
            PeerConnection c = connect(a(), peer.descriptor);
            Region local = a().allocate(MIB, Permission.READ_WRITE);
            assertCompleted(post(c, slice(Opcode.WRITE, local, 0, peer.buffer, peer.buffer.address(), 64 * KIB, 0,
                    dataDeadline())));
            peer.kill();
            assertEventuallyFails(c, local, peer.buffer, "the peer JVM was killed");
        }
    }

    private PeerProcess startPeer(long size) throws Exception {
        Path dir = Files.createTempDirectory("tent4j-conformance");
        try {
            return PeerProcess.start(provider().getClass().getName(), provider().id(), machineId(), size,
                    transferTimeout(), options(), peerJvmOptions(), dir);
        } finally {
            dir.toFile().deleteOnExit();
        }
    }
}
