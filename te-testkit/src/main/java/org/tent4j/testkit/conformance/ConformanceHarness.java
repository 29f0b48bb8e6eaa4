package org.tent4j.testkit.conformance;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.junit.jupiter.api.AfterEach;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.Availability;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.TransportProvider;
import org.tent4j.testkit.conformance.ConformanceSlice.Outcome;
import org.tent4j.testkit.conformance.TransportUnderTest.Region;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * What every case of {@link TransportConformance} stands on: the hooks a vendor overrides, two transports under test
 * ("a" and "b"), the slices posted and their settlement check after each case, and the assertions the cases share.
 * The cases themselves come in one class per concern, each extending the one before: {@link PluginCases},
 * {@link ByteCases}, {@link BadInputCases}, {@link FailureCases}, then the second-JVM cases in
 * {@link TransportConformance}.
 */
abstract class ConformanceHarness {

    static final byte GUARD = (byte) 0x5A;
    static final long KIB = 1024;
    static final long MIB = 1024 * KIB;
    /** Deliberately odd, so nothing lines up with a word, a page or a cache line. */
    static final long LOCAL_OFFSET = 7;
    static final long REMOTE_OFFSET = 13;
    static final long TAIL = 29;
    /** Codes a transport may answer bad input with: none is retryable, so the runtime gives up at once. */
    static final Set<ErrorCode> BAD_INPUT = EnumSet.of(ErrorCode.OUT_OF_BOUNDS, ErrorCode.PERMISSION_DENIED,
            ErrorCode.ADDRESS_NOT_REGISTERED, ErrorCode.PROTOCOL);
    static final Set<ErrorCode> DENIED = EnumSet.of(ErrorCode.PERMISSION_DENIED, ErrorCode.PROTOCOL);
    /** How long a settled slice is watched for a second settlement. */
    static final long GRACE_MILLIS = 200;

    TransportUnderTest a;
    TransportUnderTest b;
    final List<PeerConnection> connections = new CopyOnWriteArrayList<>();
    final List<ConformanceSlice> posted = new CopyOnWriteArrayList<>();
    final Set<ConformanceSlice> canceled = ConcurrentHashMap.newKeySet();

    // ------------------------------------------------------------------------------------------------ hooks

    /**
     * The provider under test (a new instance per call is fine).
     *
     * @return a provider
     */
    protected abstract TransportProvider provider();

    /**
     * Options for {@code transports.<id>.*}; the kit parses them against the provider's specs, as the engine does.
     *
     * @return option name (without the prefix) to value; none by default
     */
    protected Map<String, String> options() {
        return Map.of();
    }

    /**
     * The contexts' transfer timeout, and the deadline of slices in the failure cases: a slice to a dead peer must
     * fail within it. Short, so the suite stays fast.
     *
     * @return 3 s by default
     */
    protected Duration transferTimeout() {
        return Duration.ofSeconds(3);
    }

    /**
     * The machine id both sides report.
     *
     * @return {@code conformance-machine} by default
     */
    protected String machineId() {
        return "conformance-machine";
    }

    /**
     * Whether the transport can reach its own segment; the runtime uses that for transfers inside one engine.
     *
     * @return true by default
     */
    protected boolean supportsLoopback() {
        return true;
    }

    /**
     * Whether the target side checks every access against its live registrations
     * ({@link org.tent4j.spi.LocalMemory#checkRemoteAccess}) rather than trusting the initiator's descriptor. True for
     * two-sided transports (tcp, the uds example) and for RDMA (the NIC checks the memory region). A one-sided
     * transport whose only gate is what the peer published (shm maps the peer's file) returns false, which skips the
     * cases where the initiator holds a forged or stale descriptor.
     *
     * @return true by default
     */
    protected boolean targetChecksEveryAccess() {
        return true;
    }

    /**
     * Whether to also run the peer in a second JVM ({@link ConformancePeer}). Off by default: the kit's control plane
     * reaches only this JVM, so a transport that handshakes over it cannot cross processes here.
     *
     * @return false by default
     */
    protected boolean peerInAnotherJvm() {
        return false;
    }

    /**
     * JVM options of the peer JVM.
     *
     * @return options for the peer's {@code java} command
     */
    protected List<String> peerJvmOptions() {
        return List.of("--enable-native-access=ALL-UNNAMED", "-Xmx128m", "-XX:TieredStopAtLevel=1");
    }

    /**
     * The largest slice the size cases use (further capped by the transport's {@code maxSliceSize}).
     *
     * @return bytes; 16 MiB by default
     */
    protected long largestSliceTested() {
        return 16 * MIB;
    }

    /**
     * Whether the thread-leak case ({@code closeLeavesNoThreadsBehind}) runs.
     *
     * @return true by default
     */
    protected boolean checksThreadLeaks() {
        return true;
    }

    /**
     * Threads a transport may leave running after {@code close()} because they are shared by the whole JVM (JDK
     * infrastructure; override to add a library's global executor).
     *
     * @param thread a thread still alive after {@code close()}
     * @return whether it may stay
     */
    protected boolean isSharedThread(Thread thread) {
        String n = thread.getName();
        return thread.isVirtual() || n.startsWith("ForkJoinPool") || n.startsWith("Common-Cleaner")
                || n.startsWith("process reaper") || n.startsWith("Attach Listener") || n.startsWith("Signal Dispatcher")
                || n.startsWith("Read-Poller") || n.startsWith("Write-Poller") || n.startsWith("VirtualThread-")
                || n.startsWith("InnocuousThread") || n.startsWith("JFR") || n.startsWith("surefire")
                || n.startsWith("conformance-peer-stdout");
    }

    // ------------------------------------------------------------------------------------------------ lifecycle

    @AfterEach
    final void closeEverythingAndCheckSettlements() throws InterruptedException {
        List<Throwable> problems = new ArrayList<>();
        try {
            closeAll();
        } catch (AssertionError e) {
            problems.add(e);
        }
        // close() fails whatever was still in flight, so from here every slice must have settled exactly once
        long until = System.nanoTime() + failureLimit().toNanos();
        for (ConformanceSlice s : posted) {
            if (canceled.contains(s)) {
                continue;
            }
            try {
                s.result().get(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                problems.add(new AssertionError("slice never settled, not even by close(): " + s));
            } catch (ExecutionException e) {
                problems.add(e.getCause());
            }
        }
        if (!posted.isEmpty()) {
            Thread.sleep(GRACE_MILLIS);
        }
        for (ConformanceSlice s : posted) {
            if (s.settlements() > 1) {
                problems.add(new AssertionError("slice settled " + s.settlements() + " times (the contract is exactly "
                        + "once, and the runtime may reuse a slice as soon as it settles): " + s + ": "
                        + s.settlementHistory()));
            }
        }
        posted.clear();
        canceled.clear();
        if (!problems.isEmpty()) {
            AssertionError first = problems.getFirst() instanceof AssertionError ae ? ae : new AssertionError(problems.getFirst());
            problems.stream().skip(1).forEach(first::addSuppressed);
            throw first;
        }
    }

    /** Connections, then transports, then contexts and memory: the engine's order. */
    void closeAll() {
        AssertionError problem = null;
        for (PeerConnection c : connections) {
            try {
                c.close();
            } catch (RuntimeException e) {
                problem = problem != null ? problem : new AssertionError("PeerConnection.close() threw " + e, e);
            }
        }
        connections.clear();
        for (TransportUnderTest side : new TransportUnderTest[]{a, b}) {
            if (side != null) {
                side.closeTransport();
            }
        }
        for (TransportUnderTest side : new TransportUnderTest[]{a, b}) {
            if (side != null) {
                try {
                    side.close();
                } catch (AssertionError e) {
                    problem = problem != null ? problem : e;
                }
            }
        }
        a = null;
        b = null;
        if (problem != null) {
            throw problem;
        }
    }

    TransportUnderTest a() {
        if (a == null) {
            a = open("a");
        }
        return a;
    }

    TransportUnderTest b() {
        if (b == null) {
            b = open("b");
        }
        return b;
    }

    TransportUnderTest open(String segment) {
        Availability av = provider().availability(parsedOptions());
        assumeTrue(av.isAvailable(), () -> "transport '" + provider().id() + "' is unavailable here: " + av.reason());
        return new TransportUnderTest(provider(), segment, machineId(), options(), transferTimeout());
    }

    OptionValues parsedOptions() {
        return OptionValues.parse("transports." + provider().id() + ".", provider().options(), options());
    }

    // ------------------------------------------------------------------------------------------------ helpers

    long maxSliceSize() {
        return a().transport.capabilities().orElse(provider().capabilities()).maxSliceSize();
    }

    PeerConnection connect(TransportUnderTest from, SegmentDescriptor to) {
        PeerConnection c;
        try {
            c = from.transport.connect(to);
        } catch (RuntimeException e) {
            throw new AssertionError("segment '" + from.segment + "' could not connect to segment '" + to.name()
                    + "' through '" + from.transportId + "': " + e, e);
        }
        assertNotNull(c, "connect() returned null");
        assertTrue(c.isOpen(), "a connection is not open right after connect()");
        connections.add(c);
        return c;
    }

    static ConformanceSlice slice(Opcode op, Region local, long localOffset, BufferDescriptor remote,
                                          long remoteAddress, long length, int path, long deadlineNanos) {
        return new ConformanceSlice(op, local.buffer(), localOffset, remote, remoteAddress, length, path, deadlineNanos);
    }

    ConformanceSlice post(PeerConnection c, ConformanceSlice s) {
        posted.add(s);
        try {
            c.post(s);
        } catch (RuntimeException e) {
            throw new AssertionError("post() threw " + e + " for " + s + "; a slice that cannot be started must be "
                    + "failed through the slice, never thrown", e);
        }
        return s;
    }

    /** Posts small WRITEs until one fails; a transport must notice a dead or closed peer within the timeout. */
    void assertEventuallyFails(PeerConnection c, Region local, BufferDescriptor remote, String why)
            throws InterruptedException {
        long until = System.nanoTime() + failureLimit().toNanos();
        int tries = 0;
        do {
            tries++;
            ConformanceSlice s = post(c, slice(Opcode.WRITE, local, 0, remote, remote.address(), 4096, 0,
                    failureDeadline()));
            Outcome o = await(s, failureLimit(), why);
            if (!o.completed()) {
                assertMessageSaysSomething(s, o);
                return;
            }
            Thread.sleep(100);
        } while (System.nanoTime() - until < 0);
        fail(tries + " slices posted after " + why + " all completed over " + failureLimit().toSeconds()
                + " s; a transport must notice that its peer is gone and fail slices (PEER_FAILED)");
    }

    Outcome await(ConformanceSlice s, Duration limit) {
        return await(s, limit, null);
    }

    Outcome await(ConformanceSlice s, Duration limit, String context) {
        try {
            return s.result().get(limit.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError("slice did not settle within " + limit.toMillis() + " ms: " + s
                    + (context == null ? "" : " (" + context + ")") + "; a transport must complete or fail every "
                    + "posted slice, and fail it with TIMEOUT once its deadline passes", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted waiting for " + s, e);
        } catch (ExecutionException e) {
            throw new AssertionError(e.getCause());
        }
    }

    void assertCompleted(ConformanceSlice s) {
        Outcome o = await(s, dataLimit());
        if (!o.completed()) {
            fail("slice failed: " + s + ": " + o);
        }
    }

    void assertFailedWith(ConformanceSlice s, Set<ErrorCode> accepted, String why) {
        Outcome o = await(s, failureLimit());
        if (o.completed()) {
            fail("slice completed but must fail (" + why + "): " + s);
        }
        if (!accepted.contains(o.code())) {
            fail("slice failed with " + o.code() + " but must fail with one of " + accepted + " (" + why + "): " + s
                    + ": " + o.message());
        }
        assertMessageSaysSomething(s, o);
    }

    static void assertMessageSaysSomething(ConformanceSlice s, Outcome o) {
        assertFalse(o.message() == null || o.message().isBlank(), () -> "slice failed with " + o.code()
                + " but an empty message; name the peer, address, length and what went wrong: " + s);
    }

    static void assertSameBytes(MemorySegment source, long sourceOffset, MemorySegment dest, long destOffset,
                                        long length, ConformanceSlice s) {
        if (BytePattern.crc32c(source, sourceOffset, length) == BytePattern.crc32c(dest, destOffset, length)) {
            return;
        }
        long at = BytePattern.firstDifference(source, sourceOffset, dest, destOffset, length);
        fail("bytes differ at offset " + at + " of " + length + " (expected 0x"
                + Integer.toHexString(source.get(ValueLayout.JAVA_BYTE, sourceOffset + at) & 0xff) + ", found 0x"
                + Integer.toHexString(dest.get(ValueLayout.JAVA_BYTE, destOffset + at) & 0xff) + ") after " + s);
    }

    static void assertUntouched(MemorySegment memory, long offset, long length, String where) {
        long at = BytePattern.firstNot(memory, offset, length, GUARD);
        if (at >= 0) {
            fail("guard byte changed at offset " + (offset + at) + " " + where + " (0x"
                    + Integer.toHexString(memory.get(ValueLayout.JAVA_BYTE, offset + at) & 0xff) + " instead of 0x"
                    + Integer.toHexString(GUARD & 0xff) + "): the transport wrote outside the slice's range");
        }
    }

    /** Data cases get a generous deadline: a slow shared machine must not fail them. */
    long dataDeadline() {
        return System.nanoTime() + dataLimit().toNanos();
    }

    Duration dataLimit() {
        Duration t = transferTimeout();
        return t.compareTo(Duration.ofSeconds(30)) > 0 ? t : Duration.ofSeconds(30);
    }

    /** Failure cases carry the transfer timeout as their deadline, so even a transport that misses a failure times out. */
    long failureDeadline() {
        return System.nanoTime() + transferTimeout().toNanos();
    }

    /** The transfer timeout plus room for a slow machine to notice it. */
    Duration failureLimit() {
        return transferTimeout().plusSeconds(5);
    }
}
