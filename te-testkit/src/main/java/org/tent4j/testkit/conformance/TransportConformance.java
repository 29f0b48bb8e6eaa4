package org.tent4j.testkit.conformance;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportProvider;
import org.tent4j.testkit.conformance.ConformanceSlice.Outcome;
import org.tent4j.testkit.conformance.TransportUnderTest.Region;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
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
 * <p>Hooks: {@link #options()}, {@link #transferTimeout()}, {@link #supportsLoopback()},
 * {@link #targetChecksEveryAccess()}, {@link #peerInAnotherJvm()}, {@link #isSharedThread(Thread)} and others below.
 * Cases run one at a time (segment names "a" and "b" are shared through the in-JVM control plane).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
public abstract class TransportConformance {
    static final byte GUARD = (byte) 0x5A;
    private static final long KIB = 1024;
    private static final long MIB = 1024 * KIB;
    /** Deliberately odd, so nothing lines up with a word, a page or a cache line. */
    private static final long LOCAL_OFFSET = 7;
    private static final long REMOTE_OFFSET = 13;
    private static final long TAIL = 29;
    /** Codes a transport may answer bad input with: none is retryable, so the runtime gives up at once. */
    private static final Set<ErrorCode> BAD_INPUT = EnumSet.of(ErrorCode.OUT_OF_BOUNDS, ErrorCode.PERMISSION_DENIED,
            ErrorCode.ADDRESS_NOT_REGISTERED, ErrorCode.PROTOCOL);
    private static final Set<ErrorCode> DENIED = EnumSet.of(ErrorCode.PERMISSION_DENIED, ErrorCode.PROTOCOL);
    /** How long a settled slice is watched for a second settlement. */
    private static final long GRACE_MILLIS = 200;

    private TransportUnderTest a;
    private TransportUnderTest b;
    private final List<PeerConnection> connections = new CopyOnWriteArrayList<>();
    private final List<ConformanceSlice> posted = new CopyOnWriteArrayList<>();
    private final Set<ConformanceSlice> canceled = ConcurrentHashMap.newKeySet();

    // ------------------------------------------------------------------------------------------------ hooks

    /** The provider under test (a new instance per call is fine). */
    protected abstract TransportProvider provider();

    /** Options for {@code transports.<id>.*}; the kit parses them against the provider's specs, as the engine does. */
    protected Map<String, String> options() {
        return Map.of();
    }

    /**
     * The contexts' transfer timeout, and the deadline of slices in the failure cases: a slice to a dead peer must
     * fail within it. Short, so the suite stays fast.
     */
    protected Duration transferTimeout() {
        return Duration.ofSeconds(3);
    }

    /** The machine id both sides report. */
    protected String machineId() {
        return "conformance-machine";
    }

    /** Whether the transport can reach its own segment; the runtime uses that for transfers inside one engine. */
    protected boolean supportsLoopback() {
        return true;
    }

    /**
     * Whether the target side checks every access against its live registrations
     * ({@link org.tent4j.spi.LocalMemory#checkRemoteAccess}) rather than trusting the initiator's descriptor. True for
     * two-sided transports (tcp, the uds example) and for RDMA (the NIC checks the memory region). A one-sided
     * transport whose only gate is what the peer published (shm maps the peer's file) returns false, which skips the
     * cases where the initiator holds a forged or stale descriptor.
     */
    protected boolean targetChecksEveryAccess() {
        return true;
    }

    /**
     * Whether to also run the peer in a second JVM ({@link ConformancePeer}). Off by default: the kit's control plane
     * reaches only this JVM, so a transport that handshakes over it cannot cross processes here.
     */
    protected boolean peerInAnotherJvm() {
        return false;
    }

    /** JVM options of the peer JVM. */
    protected List<String> peerJvmOptions() {
        return List.of("--enable-native-access=ALL-UNNAMED", "-Xmx128m", "-XX:TieredStopAtLevel=1");
    }

    /** The largest slice the size cases use (further capped by the transport's {@code maxSliceSize}). */
    protected long largestSliceTested() {
        return 16 * MIB;
    }

    /** Whether {@link #closeLeavesNoThreadsBehind()} runs. */
    protected boolean checksThreadLeaks() {
        return true;
    }

    /**
     * Threads a transport may leave running after {@code close()} because they are shared by the whole JVM (JDK
     * infrastructure; override to add a library's global executor).
     */
    protected boolean isSharedThread(Thread thread) {
        String n = thread.getName();
        return thread.isVirtual() || n.startsWith("ForkJoinPool") || n.startsWith("Common-Cleaner")
                || n.startsWith("process reaper") || n.startsWith("Attach Listener") || n.startsWith("Signal Dispatcher")
                || n.startsWith("Read-Poller") || n.startsWith("Write-Poller") || n.startsWith("VirtualThread-")
                || n.startsWith("InnocuousThread") || n.startsWith("JFR") || n.startsWith("surefire")
                || n.startsWith("conformance-peer-stdout");
    }

    // ------------------------------------------------------------------------------------------------ the plugin

    @Test
    void providerIdIsCanonical() {
        String id = provider().id();
        assertNotNull(id, "provider id is null");
        assertTrue(id.matches("[a-z][a-z0-9_-]*"), () -> "provider id '" + id
                + "' is not canonical: lower case letters, digits, '-' and '_', starting with a letter");
        assertFalse(provider().description() == null || provider().description().isBlank(),
                "description() is blank; tent4j doctor prints it");
    }

    @Test
    void availabilityIsAvailableOrNamesACause() {
        TransportProvider p = provider();
        Availability plain = p.availability();
        assertNotNull(plain, "availability() returned null");
        Availability configured = p.availability(parsedOptions());
        assertNotNull(configured, "availability(OptionValues) returned null");
        for (Availability av : List.of(plain, configured)) {
            if (!av.isAvailable()) {
                assertNotNull(av.unavailabilityCause(), "unavailable without a cause");
                assertFalse(av.reason() == null || av.reason().isBlank(), "unavailable, but the cause says nothing: "
                        + av.unavailabilityCause());
            }
        }
        assertEquals(plain.isAvailable(), p.availability().isAvailable(),
                "availability() changed between two calls; probe once and keep the answer");
    }

    @Test
    void optionsHaveParsableDefaultsAndDescriptions() {
        List<OptionSpec> specs = provider().options();
        assertNotNull(specs, "options() returned null; return List.of() when there are none");
        Set<String> names = new HashSet<>();
        for (OptionSpec s : specs) {
            assertTrue(s.name().matches("[a-z][a-z0-9_.]*"), () -> "option name '" + s.name()
                    + "' is not lower_snake_case");
            assertTrue(names.add(s.name()), () -> "option '" + s.name() + "' is declared twice");
            assertFalse(s.description() == null || s.description().isBlank(), () -> "option '" + s.name()
                    + "' has no description; tent4j doctor and the docs print it");
        }
        String prefix = "transports." + provider().id() + ".";
        OptionValues.parse(prefix, specs, Map.of()); // every default must parse as its declared type
        parsedOptions();
    }

    @Test
    void capabilitiesAreSane() {
        assertSane(provider().capabilities(), "provider capabilities()");
        TransportUnderTest side = a();
        assertEquals(provider().id(), side.transport.id(), "the transport's id() differs from its provider's");
        side.transport.capabilities().ifPresent(c -> assertSane(c, "transport capabilities()"));
    }

    private static void assertSane(TransportCapabilities c, String what) {
        assertNotNull(c, what + " is null");
        assertFalse(c.memoryPaths().isEmpty(), what + " declares no memory path; the runtime would never select it");
        assertTrue(c.maxSliceSize() > 0, what + " maxSliceSize must be > 0");
        assertTrue(c.rank() >= 0, what + " rank must be >= 0");
    }

    // ------------------------------------------------------------------------------------------------ bytes

    /** Where the target buffer lives. */
    public enum Route {
        /** In the initiator's own segment. */
        LOOPBACK,
        /** In the other transport's segment. */
        REMOTE
    }

    /** The slice sizes every transport moves. */
    public enum SizeClass {
        ONE_BYTE(1, "1 B"), PAGE_MINUS_ONE(4095, "4095 B"), SMALL(64 * KIB, "64 KiB"), MEDIUM(MIB, "1 MiB"),
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

    static Stream<Arguments> routesOpcodesAndSizes() {
        List<Arguments> out = new ArrayList<>();
        for (Route r : Route.values()) {
            for (Opcode op : Opcode.values()) {
                for (SizeClass s : SizeClass.values()) {
                    out.add(Arguments.of(r, op, s));
                }
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0} {1} of {2}")
    @MethodSource("org.tent4j.testkit.conformance.TransportConformance#routesOpcodesAndSizes")
    void bytesArriveIntactAtUnalignedOffsets(Route route, Opcode op, SizeClass sizeClass) {
        if (route == Route.LOOPBACK) {
            assumeTrue(supportsLoopback(), "the transport does not support loopback");
        }
        long size = Math.min(sizeClass.bytes, Math.min(largestSliceTested(), maxSliceSize()));
        TransportUnderTest initiator = a();
        TransportUnderTest target = route == Route.LOOPBACK ? a() : b();
        Region local = initiator.allocate(LOCAL_OFFSET + size + TAIL, Permission.READ_WRITE);
        Region remote = target.allocate(REMOTE_OFFSET + size + TAIL, Permission.READ_WRITE);
        PeerConnection c = connect(initiator, target.descriptor());

        MemorySegment source = op == Opcode.WRITE ? local.segment() : remote.segment();
        long sourceOffset = op == Opcode.WRITE ? LOCAL_OFFSET : REMOTE_OFFSET;
        MemorySegment dest = op == Opcode.WRITE ? remote.segment() : local.segment();
        long destOffset = op == Opcode.WRITE ? REMOTE_OFFSET : LOCAL_OFFSET;
        BytePattern.fill(source, sourceOffset, size, size * 31 + op.ordinal());

        ConformanceSlice s = post(c, slice(op, local, LOCAL_OFFSET, remote.descriptor(),
                remote.address() + REMOTE_OFFSET, size, 0, dataDeadline()));
        assertCompleted(s);
        assertSameBytes(source, sourceOffset, dest, destOffset, size, s);
        assertUntouched(dest, 0, destOffset, "before the " + (op == Opcode.WRITE ? "target" : "local") + " range of " + s);
        assertUntouched(dest, destOffset + size, TAIL, "after the " + (op == Opcode.WRITE ? "target" : "local")
                + " range of " + s);
    }

    @Test
    void everySliceSettlesExactlyOnce() throws Exception {
        long[] sizes = {1, 100, 4096, 65537, 300_000};
        long span = 4 * MIB;
        Region local = a().allocate(span, Permission.READ_WRITE);
        Region remote = b().allocate(span, 64 * KIB, Permission.READ_WRITE);
        BytePattern.fill(local.segment(), 0, span, 11);
        PeerConnection c = connect(a(), b().descriptor());
        int paths = Math.max(1, c.pathCount());
        List<ConformanceSlice> good = new ArrayList<>();
        List<ConformanceSlice> bad = new ArrayList<>();
        long at = 0;
        // good and bad slices interleaved on one connection: a rejected slice must not disturb the ones around it
        for (int i = 0; i < 30; i++) {
            if (i % 6 == 5) {
                bad.add(post(c, slice(Opcode.WRITE, local, 0, remote.descriptor(), remote.address() + span - 10, 100,
                        i % paths, failureDeadline())));
                continue;
            }
            long n = sizes[i % sizes.length];
            good.add(post(c, slice(Opcode.WRITE, local, at, remote.descriptor(), remote.address() + at, n, i % paths,
                    dataDeadline())));
            at += n;
        }
        for (ConformanceSlice s : good) {
            assertCompleted(s);
        }
        for (ConformanceSlice s : bad) {
            assertFailedWith(s, BAD_INPUT, "its remote range runs 90 bytes past the end of the buffer");
        }
        Thread.sleep(GRACE_MILLIS);
        for (ConformanceSlice s : posted) {
            assertEquals(1, s.settlements(), () -> "slice settled " + s.settlements() + " times: " + s + ": "
                    + s.settlementHistory());
        }
        assertSameBytes(local.segment(), 0, remote.segment(), 0, at, good.getLast());
        assertUntouched(remote.memory(), span, 64 * KIB, "in the guard zone after the target buffer");
    }

    @Test
    void slicesMoveOnEveryPath() {
        PeerConnection c = connect(a(), b().descriptor());
        int paths = c.pathCount();
        assertTrue(paths >= 1, () -> "pathCount() is " + paths + "; it must be at least 1");
        for (int p = 0; p < paths; p++) {
            String name = c.pathName(p);
            int path = p;
            assertFalse(name == null || name.isBlank(), () -> "pathName(" + path + ") is blank; metrics and logs use it");
        }
        long chunk = 64 * KIB + 3;
        Region local = a().allocate(2 * paths * chunk, Permission.READ_WRITE);
        Region remote = b().allocate(paths * chunk, Permission.READ_WRITE);
        BytePattern.fill(local.segment(), 0, paths * chunk, 21);
        List<ConformanceSlice> writes = new ArrayList<>();
        for (int p = 0; p < paths; p++) {
            writes.add(post(c, slice(Opcode.WRITE, local, p * chunk, remote.descriptor(), remote.address() + p * chunk,
                    chunk, p, dataDeadline())));
        }
        writes.forEach(this::assertCompleted);
        List<ConformanceSlice> reads = new ArrayList<>();
        for (int p = 0; p < paths; p++) {
            reads.add(post(c, slice(Opcode.READ, local, (paths + p) * chunk, remote.descriptor(),
                    remote.address() + p * chunk, chunk, p, dataDeadline())));
        }
        reads.forEach(this::assertCompleted);
        for (int p = 0; p < paths; p++) {
            assertSameBytes(local.segment(), p * chunk, remote.segment(), p * chunk, chunk, writes.get(p));
            assertSameBytes(local.segment(), p * chunk, local.segment(), (paths + p) * chunk, chunk, reads.get(p));
        }
    }

    @Test
    void concurrentSlicesFromFourThreadsLandIntact() throws Exception {
        int threads = 4;
        int perThread = 16;
        long chunk = 64 * KIB + 5;
        long quarter = perThread * chunk;
        long total = threads * quarter;
        Region source = a().allocate(total, Permission.READ_WRITE);
        Region readBack = a().allocate(total, Permission.READ_WRITE);
        Region remote = b().allocate(total, Permission.READ_WRITE);
        BytePattern.fill(source.segment(), 0, total, 31);
        PeerConnection c = connect(a(), b().descriptor());
        int paths = Math.max(1, c.pathCount());
        ExecutorService pool = Executors.newFixedThreadPool(threads, Thread.ofPlatform().name("conformance-poster-", 0).factory());
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long base = t * quarter;
                done.add(pool.submit(() -> {
                    go.await();
                    List<ConformanceSlice> mine = new ArrayList<>();
                    for (int k = 0; k < perThread; k++) {
                        long off = base + k * chunk;
                        mine.add(post(c, slice(Opcode.WRITE, source, off, remote.descriptor(), remote.address() + off,
                                chunk, k % paths, dataDeadline())));
                    }
                    mine.forEach(this::assertCompleted);
                    mine.clear();
                    for (int k = 0; k < perThread; k++) {
                        long off = base + k * chunk;
                        mine.add(post(c, slice(Opcode.READ, readBack, off, remote.descriptor(), remote.address() + off,
                                chunk, (k + 1) % paths, dataDeadline())));
                    }
                    mine.forEach(this::assertCompleted);
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : done) {
                try {
                    f.get(dataLimit().toMillis() * 2, TimeUnit.MILLISECONDS);
                } catch (ExecutionException e) {
                    throw e.getCause() instanceof AssertionError ae ? ae : new AssertionError(e.getCause());
                }
            }
        } finally {
            pool.shutdownNow();
        }
        assertSameBytes(source.segment(), 0, remote.segment(), 0, total, posted.getFirst());
        assertSameBytes(source.segment(), 0, readBack.segment(), 0, total, posted.getLast());
    }

    // ------------------------------------------------------------------------------------------------ bad input

    @Test
    void rangePastTheEndOfARemoteBufferFailsAndTouchesNothing() {
        long size = 64 * KIB;
        Region remote = b().allocate(size, 64 * KIB, Permission.READ_WRITE);
        Region local = a().allocate(2 * size, Permission.READ_WRITE);
        BytePattern.fill(local.segment(), 0, 2 * size, 41);
        PeerConnection c = connect(a(), b().descriptor());
        ConformanceSlice write = post(c, slice(Opcode.WRITE, local, 0, remote.descriptor(),
                remote.address() + size - 100, 4096, 0, failureDeadline()));
        assertFailedWith(write, BAD_INPUT, "it runs past the end of the remote buffer");
        assertUntouched(remote.memory(), 0, size + 64 * KIB, "in or after the target buffer of " + write);
        ConformanceSlice read = post(c, slice(Opcode.READ, local, 0, remote.descriptor(),
                remote.address() + size - 100, 4096, 0, failureDeadline()));
        assertFailedWith(read, BAD_INPUT, "it runs past the end of the remote buffer");
    }

    @Test
    void rangeBeyondWhatTheTargetRegisteredFailsDespiteALargerDescriptor() {
        long size = 64 * KIB;
        Region remote = b().allocate(size, 64 * KIB, Permission.READ_WRITE);
        Region local = a().allocate(size, Permission.READ_WRITE);
        BytePattern.fill(local.segment(), 0, size, 43);
        PeerConnection c = connect(a(), b().descriptor());
        // the initiator believes the buffer is twice as long as what the target registered
        BufferDescriptor forged = remote.forged(2 * size, Permission.READ_WRITE);
        ConformanceSlice write = post(c, slice(Opcode.WRITE, local, 0, forged, remote.address() + size - 8, 4096, 0,
                failureDeadline()));
        assertFailedWith(write, BAD_INPUT, "the target registered only " + size + " bytes (the descriptor claims "
                + 2 * size + "); a transport must bound every access by what the target registered");
        assertUntouched(remote.memory(), 0, size + 64 * KIB, "in or after the target buffer of " + write);
    }

    @Test
    void writeToAReadOnlyBufferFailsWhileReadSucceeds() {
        long size = 64 * KIB;
        Region remote = b().allocate(size, Permission.READ_ONLY);
        BytePattern.fill(remote.segment(), 0, size, 51);
        long before = BytePattern.crc32c(remote.segment(), 0, size);
        Region local = a().allocate(size, Permission.READ_WRITE);
        PeerConnection c = connect(a(), b().descriptor());
        ConformanceSlice read = post(c, slice(Opcode.READ, local, 0, remote.descriptor(), remote.address(), size, 0,
                dataDeadline()));
        assertCompleted(read);
        assertSameBytes(remote.segment(), 0, local.segment(), 0, size, read);
        BytePattern.fill(local.segment(), 0, size, 52);
        ConformanceSlice write = post(c, slice(Opcode.WRITE, local, 0, remote.descriptor(), remote.address(), size, 0,
                failureDeadline()));
        assertFailedWith(write, DENIED, "the target buffer is READ_ONLY");
        assertEquals(before, BytePattern.crc32c(remote.segment(), 0, size),
                "a WRITE to a READ_ONLY buffer failed but changed its bytes");
    }

    @Test
    void targetRefusesWriteToReadOnlyBufferDespiteAForgedDescriptor() {
        assumeTrue(targetChecksEveryAccess(), "the transport trusts the published descriptor (one-sided)");
        long size = 4096;
        Region remote = b().allocate(size, Permission.READ_ONLY);
        BytePattern.fill(remote.segment(), 0, size, 53);
        long before = BytePattern.crc32c(remote.segment(), 0, size);
        Region local = a().allocate(size, Permission.READ_WRITE);
        PeerConnection c = connect(a(), b().descriptor());
        ConformanceSlice write = post(c, slice(Opcode.WRITE, local, 0, remote.forged(size, Permission.READ_WRITE),
                remote.address(), size, 0, failureDeadline()));
        assertFailedWith(write, DENIED, "the target registered the buffer READ_ONLY (the initiator's descriptor says "
                + "READ_WRITE); the target must check with LocalMemory.checkRemoteAccess");
        assertEquals(before, BytePattern.crc32c(remote.segment(), 0, size),
                "a WRITE the target should have refused changed a READ_ONLY buffer");
    }

    @Test
    void targetRefusesABufferItUnregistered() {
        assumeTrue(targetChecksEveryAccess(), "the transport trusts the published descriptor (one-sided)");
        long size = 4096;
        Region remote = b().allocate(size, Permission.READ_WRITE);
        Region local = a().allocate(size, Permission.READ_WRITE);
        BytePattern.fill(local.segment(), 0, size, 61);
        PeerConnection c = connect(a(), b().descriptor());
        assertCompleted(post(c, slice(Opcode.WRITE, local, 0, remote.descriptor(), remote.address(), size, 0,
                dataDeadline())));
        b().unregister(remote);
        long before = BytePattern.crc32c(remote.segment(), 0, size);
        BytePattern.fill(local.segment(), 0, size, 62);
        ConformanceSlice stale = post(c, slice(Opcode.WRITE, local, 0, remote.descriptor(), remote.address(), size, 0,
                failureDeadline()));
        assertFailedWith(stale, BAD_INPUT, "the target unregistered the buffer (the initiator holds a stale descriptor)");
        assertEquals(before, BytePattern.crc32c(remote.segment(), 0, size),
                "a WRITE into an unregistered buffer failed but changed its bytes");
    }

    @Test
    void sliceWhoseDeadlineAlreadyPassedFails() {
        Region remote = b().allocate(4096, Permission.READ_WRITE);
        Region local = a().allocate(4096, Permission.READ_WRITE);
        PeerConnection c = connect(a(), b().descriptor());
        long passed = System.nanoTime() - TimeUnit.SECONDS.toNanos(1);
        for (Opcode op : Opcode.values()) {
            ConformanceSlice s = post(c, slice(op, local, 0, remote.descriptor(), remote.address(), 4096, 0, passed));
            Outcome o = await(s, failureLimit());
            assertFalse(o.completed(), () -> s + " completed although its deadline had passed a second before post(); "
                    + "fail it with TIMEOUT");
            assertMessageSaysSomething(s, o);
        }
    }

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
    private void closeAll() {
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

    private TransportUnderTest a() {
        if (a == null) {
            a = open("a");
        }
        return a;
    }

    private TransportUnderTest b() {
        if (b == null) {
            b = open("b");
        }
        return b;
    }

    private TransportUnderTest open(String segment) {
        Availability av = provider().availability(parsedOptions());
        assumeTrue(av.isAvailable(), () -> "transport '" + provider().id() + "' is unavailable here: " + av.reason());
        return new TransportUnderTest(provider(), segment, machineId(), options(), transferTimeout());
    }

    private OptionValues parsedOptions() {
        return OptionValues.parse("transports." + provider().id() + ".", provider().options(), options());
    }

    // ------------------------------------------------------------------------------------------------ helpers

    private long maxSliceSize() {
        return a().transport.capabilities().orElse(provider().capabilities()).maxSliceSize();
    }

    private PeerConnection connect(TransportUnderTest from, SegmentDescriptor to) {
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

    private static ConformanceSlice slice(Opcode op, Region local, long localOffset, BufferDescriptor remote,
                                          long remoteAddress, long length, int path, long deadlineNanos) {
        return new ConformanceSlice(op, local.buffer(), localOffset, remote, remoteAddress, length, path, deadlineNanos);
    }

    private ConformanceSlice post(PeerConnection c, ConformanceSlice s) {
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
    private void assertEventuallyFails(PeerConnection c, Region local, BufferDescriptor remote, String why)
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

    private Outcome await(ConformanceSlice s, Duration limit) {
        return await(s, limit, null);
    }

    private Outcome await(ConformanceSlice s, Duration limit, String context) {
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

    private void assertCompleted(ConformanceSlice s) {
        Outcome o = await(s, dataLimit());
        if (!o.completed()) {
            fail("slice failed: " + s + ": " + o);
        }
    }

    private void assertFailedWith(ConformanceSlice s, Set<ErrorCode> accepted, String why) {
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

    private static void assertMessageSaysSomething(ConformanceSlice s, Outcome o) {
        assertFalse(o.message() == null || o.message().isBlank(), () -> "slice failed with " + o.code()
                + " but an empty message; name the peer, address, length and what went wrong: " + s);
    }

    private static void assertSameBytes(MemorySegment source, long sourceOffset, MemorySegment dest, long destOffset,
                                        long length, ConformanceSlice s) {
        if (BytePattern.crc32c(source, sourceOffset, length) == BytePattern.crc32c(dest, destOffset, length)) {
            return;
        }
        long at = BytePattern.firstDifference(source, sourceOffset, dest, destOffset, length);
        fail("bytes differ at offset " + at + " of " + length + " (expected 0x"
                + Integer.toHexString(source.get(ValueLayout.JAVA_BYTE, sourceOffset + at) & 0xff) + ", found 0x"
                + Integer.toHexString(dest.get(ValueLayout.JAVA_BYTE, destOffset + at) & 0xff) + ") after " + s);
    }

    private static void assertUntouched(MemorySegment memory, long offset, long length, String where) {
        long at = BytePattern.firstNot(memory, offset, length, GUARD);
        if (at >= 0) {
            fail("guard byte changed at offset " + (offset + at) + " " + where + " (0x"
                    + Integer.toHexString(memory.get(ValueLayout.JAVA_BYTE, offset + at) & 0xff) + " instead of 0x"
                    + Integer.toHexString(GUARD & 0xff) + "): the transport wrote outside the slice's range");
        }
    }

    /** Data cases get a generous deadline: a slow shared machine must not fail them. */
    private long dataDeadline() {
        return System.nanoTime() + dataLimit().toNanos();
    }

    private Duration dataLimit() {
        Duration t = transferTimeout();
        return t.compareTo(Duration.ofSeconds(30)) > 0 ? t : Duration.ofSeconds(30);
    }

    /** Failure cases carry the transfer timeout as their deadline, so even a transport that misses a failure times out. */
    private long failureDeadline() {
        return System.nanoTime() + transferTimeout().toNanos();
    }

    /** The transfer timeout plus room for a slow machine to notice it. */
    private Duration failureLimit() {
        return transferTimeout().plusSeconds(5);
    }
}
