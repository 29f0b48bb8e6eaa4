package org.tent4j.samples.transport;

import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.platform.engine.discovery.DiscoverySelectors;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Slice;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.Availability;
import org.tent4j.testkit.conformance.TransportConformance;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A conformance suite that cannot fail proves nothing. Here it runs against the uds transport with one bug planted
 * at a time, and each bug must fail the case meant to catch it, with a message that tells the vendor what is wrong.
 */
class ConformanceKitCatchesBrokenTransportsTest {

    @Test
    void aSliceSettledTwiceIsCaught() {
        String message = failureOf(SettlesTwice.class, "everySliceSettlesExactlyOnce");
        assertTrue(message.contains("settled 2 times"), message);
    }

    @Test
    void aCorruptedByteIsCaughtWithItsOffset() {
        String message = failureOf(FlipsAByteOnRead.class, "bytesArriveIntactAtUnalignedOffsets",
                TransportConformance.Route.class.getName() + "," + Opcode.class.getName() + ","
                        + TransportConformance.SizeClass.class.getName());
        assertTrue(message.contains("bytes differ at offset"), message);
    }

    @Test
    void aFailureThatIsNeverReportedIsCaught() {
        String message = failureOf(SwallowsFailures.class, "rangePastTheEndOfARemoteBufferFailsAndTouchesNothing");
        assertTrue(message.contains("did not settle within"), message);
    }

    /** Runs one case of {@code suite} and returns the message of its first failure; fails if nothing failed. */
    private static String failureOf(Class<?> suite, String method, String... parameterTypes) {
        EngineExecutionResults results = EngineTestKit.engine("junit-jupiter")
                .selectors(parameterTypes.length == 0 ? DiscoverySelectors.selectMethod(suite, method)
                        : DiscoverySelectors.selectMethod(suite.getName(), method, parameterTypes[0]))
                .execute();
        List<Event> failed = results.testEvents().failed().list();
        assertTrue(failed.size() > 0, () -> suite.getSimpleName() + "." + method + " passed against a broken transport");
        Throwable t = failed.getFirst().getPayload(org.junit.platform.engine.TestExecutionResult.class)
                .flatMap(org.junit.platform.engine.TestExecutionResult::getThrowable).orElseThrow();
        return String.valueOf(t.getMessage());
    }

    // ------------------------------------------------------------------------------------------- broken transports

    /** Reports every completion twice. */
    static final class SettlesTwice extends TransportConformance {
        @Override
        protected TransportProvider provider() {
            return new Broken(slice -> new Wrapped(slice) {
                @Override
                public void complete() {
                    original.complete();
                    original.complete();
                }
            });
        }
    }

    /** Corrupts one byte of what a READ brought in, then says it is done. */
    static final class FlipsAByteOnRead extends TransportConformance {
        @Override
        protected TransportProvider provider() {
            return new Broken(slice -> new Wrapped(slice) {
                @Override
                public void complete() {
                    if (original.opcode() == Opcode.READ && original.length() > 1) {
                        long at = original.localOffset() + original.length() / 2;
                        byte b = original.localBuffer().segment().get(ValueLayout.JAVA_BYTE, at);
                        original.localBuffer().segment().set(ValueLayout.JAVA_BYTE, at, (byte) ~b);
                    }
                    original.complete();
                }
            });
        }
    }

    /** Loses every failure instead of reporting it. */
    static final class SwallowsFailures extends TransportConformance {
        @Override
        protected TransportProvider provider() {
            return new Broken(slice -> new Wrapped(slice) {
                @Override
                public void fail(ErrorCode code, String message) {
                }
            });
        }

        @Override
        protected java.time.Duration transferTimeout() {
            return java.time.Duration.ofMillis(500);
        }
    }

    /** The uds provider with every slice passed through {@code bug} on its way in. */
    private record Broken(java.util.function.Function<Slice, Slice> bug) implements TransportProvider {
        private static final UdsTransportProvider UDS = new UdsTransportProvider();

        @Override public String id() { return UDS.id(); }
        @Override public Availability availability() { return UDS.availability(); }
        @Override public TransportCapabilities capabilities() { return UDS.capabilities(); }
        @Override public List<OptionSpec> options() { return UDS.options(); }

        @Override
        public Transport create(TransportContext context) {
            Transport t = UDS.create(context);
            return new Transport() {
                @Override public String id() { return t.id(); }
                @Override public Map<String, String> segmentAttributes() { return t.segmentAttributes(); }
                @Override public Optional<Map<String, String>> registerBuffer(LocalBuffer b) { return t.registerBuffer(b); }
                @Override public void close() { t.close(); }

                @Override
                public PeerConnection connect(SegmentDescriptor peer) {
                    PeerConnection c = t.connect(peer);
                    return new PeerConnection() {
                        @Override public void post(Slice slice) { c.post(bug.apply(slice)); }
                        @Override public int pathCount() { return c.pathCount(); }
                        @Override public String pathName(int path) { return c.pathName(path); }
                        @Override public boolean isOpen() { return c.isOpen(); }
                        @Override public void close() { c.close(); }
                    };
                }
            };
        }
    }

    /** A slice that forwards everything; a bug overrides what it breaks. */
    private static class Wrapped implements Slice {
        final Slice original;

        Wrapped(Slice original) {
            this.original = original;
        }

        @Override public Opcode opcode() { return original.opcode(); }
        @Override public LocalBuffer localBuffer() { return original.localBuffer(); }
        @Override public long localOffset() { return original.localOffset(); }
        @Override public BufferDescriptor remoteBuffer() { return original.remoteBuffer(); }
        @Override public long remoteAddress() { return original.remoteAddress(); }
        @Override public long length() { return original.length(); }
        @Override public int path() { return original.path(); }
        @Override public long deadlineNanos() { return original.deadlineNanos(); }
        @Override public void complete() { original.complete(); }
        @Override public void fail(ErrorCode code, String message) { original.fail(code, message); }
    }
}
