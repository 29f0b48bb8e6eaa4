package org.tent4j.samples.transport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.ControlPlane;
import org.tent4j.spi.LocalMemory;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;
import org.tent4j.testkit.conformance.BytePattern;
import org.tent4j.testkit.conformance.ConformanceSlice;
import org.tent4j.testkit.conformance.ConformanceSlice.Outcome;
import org.tent4j.transport.faulty.FaultInjectingTransportProvider;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestTransportContext;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each fault of te-testkit's fault injector, with the uds example as the real transport underneath ("a" initiates
 * through faulty with faults, "b" runs faulty with none). Time-dependent faults are checked through what they schedule
 * on the context's scheduler, or through deadlines the delegate enforces, never by measuring elapsed time.
 */
class FaultInjectionTest {
    private static final String MACHINE = "fault-machine";
    private static final long SLICE = 64 * 1024 + 3;

    private final FaultInjectingTransportProvider provider = new FaultInjectingTransportProvider();
    private final List<Side> sides = new ArrayList<>();

    @AfterEach
    void closeSides() {
        for (Side s : sides.reversed()) {
            s.close();
        }
    }

    // ------------------------------------------------------------------------------------------- plumbing

    @Test
    void isFoundThroughServiceLoaderButUnavailableAndUncreatableWhileInert() {
        assertTrue(ServiceLoader.load(TransportProvider.class).stream().anyMatch(p -> p.get().id().equals("faulty")));
        assertEquals(FaultInjectingTransportProvider.RANK, provider.capabilities().rank());
        // opt-in by name: an engine that only has it on the class path must neither run nor list it
        for (Availability inert : List.of(provider.availability(), provider.availability(parse(Map.of())))) {
            assertFalse(inert.isAvailable());
            assertTrue(inert.reason().contains("transports.faulty.wraps"), inert.reason());
        }
        assertTrue(provider.availability(parse(Map.of("wraps", UdsTransportProvider.ID))).isAvailable());
        ConfigException e = assertThrows(ConfigException.class, () -> side("a", Map.of()));
        assertEquals("transports.faulty.wraps", e.key());
    }

    @Test
    void wrappingWhatIsNotThereIsUnavailableWithTheReason() {
        Availability unknown = provider.availability(parse(Map.of("wraps", "nope")));
        assertFalse(unknown.isAvailable());
        assertTrue(unknown.reason().contains("no transport 'nope'") && unknown.reason().contains("uds"), unknown.reason());
        Availability self = provider.availability(parse(Map.of("wraps", "faulty")));
        assertFalse(self.isAvailable());
        assertTrue(self.reason().contains("cannot wrap itself"), self.reason());
        assertTrue(provider.availability(parse(Map.of("wraps", "uds"))).isAvailable());
    }

    @Test
    void reportsTheDelegatesCapabilitiesButNeverItsRank() {
        TransportCapabilities c = side("a", Map.of("wraps", "uds")).transport.capabilities().orElseThrow();
        TransportCapabilities uds = new UdsTransportProvider().capabilities();
        assertEquals(uds.memoryPaths(), c.memoryPaths());
        assertEquals(uds.sameHostOnly(), c.sameHostOnly());
        assertEquals(uds.maxSliceSize(), c.maxSliceSize());
        assertEquals(FaultInjectingTransportProvider.RANK, c.rank());
    }

    @Test
    void badFaultOptionsAreRejectedWithTheKey() {
        TransferException e = assertThrows(TransferException.class, () -> side("a", Map.of("wraps", "uds",
                "fail_percent", "101")));
        assertEquals(ErrorCode.CONFIG, e.code());
        assertTrue(e.getMessage().contains("transports.faulty.fail_percent"), e.getMessage());
        e = assertThrows(TransferException.class, () -> side("a", Map.of("wraps", "uds", "slow_path", "1")));
        assertTrue(e.getMessage().contains("transports.faulty.slow_rate"), e.getMessage());
    }

    @Test
    void wrappedOptionsReachTheDelegateUnderItsOwnKeys() {
        Link link = link(Map.of("wrapped_options", "paths=3"));
        assertEquals(3, link.connection.pathCount(), "uds was not given paths=3");
        TransferException unknown = assertThrows(TransferException.class, () -> side("a", Map.of("wraps", "uds",
                "wrapped_options", "paths=2,lanes=4")));
        assertEquals(ErrorCode.CONFIG, unknown.code());
        assertTrue(unknown.getMessage().contains("transports.uds.lanes"), unknown.getMessage());
        TransferException malformed = assertThrows(TransferException.class, () -> side("a", Map.of("wraps", "uds",
                "wrapped_options", "paths")));
        assertTrue(malformed.getMessage().contains("transports.faulty.wrapped_options"), malformed.getMessage());
        // available, so that create fails the engine's start with the key instead of the engine skipping faulty
        assertTrue(provider.availability(parse(Map.of("wraps", "uds", "wrapped_options", "paths=x"))).isAvailable());
        ConfigException bad = assertThrows(ConfigException.class, () -> side("a", Map.of("wraps", "uds",
                "wrapped_options", "paths=x")));
        assertEquals("transports.uds.paths", bad.key());
    }

    @Test
    void delegateKeysReachTheWrappedTransportsOptions() {
        assertTrue(provider.options().stream().anyMatch(o -> o.name().equals("delegate.paths")),
                "every option of the transports on the class path has a delegate.<name> key");
        Link link = link(Map.of("delegate.paths", "3"));
        assertEquals(3, link.connection.pathCount(), "transports.faulty.delegate.paths=3 did not reach uds");
        ConfigException twice = assertThrows(ConfigException.class, () -> side("a", Map.of("wraps", "uds",
                "delegate.paths", "3", "wrapped_options", "paths=2")));
        assertEquals("transports.faulty.delegate.paths", twice.key());
        ConfigException typo = assertThrows(ConfigException.class, () -> side("a", Map.of("wraps", "uds",
                "delegate.lanes", "4")));
        assertEquals("transports.faulty.delegate.lanes", typo.key(), "no transport here declares lanes");
        ConfigException bad = assertThrows(ConfigException.class, () -> side("a", Map.of("wraps", "uds",
                "delegate.paths", "x")));
        assertEquals("transports.uds.paths", bad.key(), "parsed against the wrapped transport's own spec");
    }

    @Test
    void virtualPathsMapRoundRobinOntoTheDelegatesAndFaultsHitOnlyTheirOwn() throws Exception {
        Link link = link(Map.of("paths", "4", "fail_path", "3", "fail_path_after", "0"));
        assertEquals(4, link.connection.pathCount());
        assertEquals(List.of("v0@lane-0", "v1@lane-1", "v2@lane-0", "v3@lane-1"),
                List.of(link.connection.pathName(0), link.connection.pathName(1), link.connection.pathName(2),
                        link.connection.pathName(3)));
        for (int i = 0; i < 3; i++) {
            assertTrue(link.write(i, i).result().get(30, TimeUnit.SECONDS).completed(), "virtual path " + i);
        }
        assertInjectedFailure(link.write(3, 3), "path killed");
        link.assertLanded(0, 3);
    }

    // ------------------------------------------------------------------------------------------- faults

    @Test
    void failPercentHundredFailsEverySliceAndZeroFailsNone() throws Exception {
        Link all = link(Map.of("fail_percent", "100"));
        for (int i = 0; i < 10; i++) {
            assertInjectedFailure(all.write(i, 0), "random failure");
        }
        Link none = link(Map.of("fail_percent", "0"));
        for (int i = 0; i < 10; i++) {
            assertTrue(none.write(i, 0).result().get(30, TimeUnit.SECONDS).completed());
        }
        none.assertLanded(0, 10);
    }

    @Test
    void failPercentFiftyFailsSomeAndDeliversTheRest() throws Exception {
        Link link = link(Map.of("fail_percent", "50", "seed", "42"));
        int failed = 0;
        for (int i = 0; i < 40; i++) {
            Outcome o = link.write(i, 0).result().get(30, TimeUnit.SECONDS);
            if (o.completed()) {
                link.assertLanded(i, 1);
            } else {
                assertInjectedFailure(o, "random failure");
                failed++;
            }
        }
        assertTrue(failed > 0 && failed < 40, "fail_percent=50 failed " + failed + " of 40 slices");
    }

    @Test
    void failAfterFailsEverySliceAfterTheNth() throws Exception {
        Link link = link(Map.of("fail_after", "3"));
        for (int i = 0; i < 6; i++) {
            Outcome o = link.write(i, 0).result().get(30, TimeUnit.SECONDS);
            if (i < 3) {
                assertTrue(o.completed(), "slice " + (i + 1) + ": " + o);
            } else {
                assertInjectedFailure(o, "fail_after=3");
            }
        }
        link.assertLanded(0, 3);
    }

    @Test
    void delayIsScheduledBeforeEverySliceAndBytesStillLand() throws Exception {
        Link link = link(Map.of("delay", "40ms"));
        List<ConformanceSlice> slices = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            slices.add(link.write(i, i % 2));
        }
        for (ConformanceSlice s : slices) {
            assertTrue(s.result().get(30, TimeUnit.SECONDS).completed());
        }
        link.assertLanded(0, 4);
        assertEquals(List.of(40L, 40L, 40L, 40L), link.a.scheduler.delaysMillis());
    }

    @Test
    void delayPastTheDeadlineEndsInTimeout() throws Exception {
        Link link = link(Map.of("delay", "1s"));
        ConformanceSlice s = link.write(0, 0, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200));
        Outcome o = s.result().get(30, TimeUnit.SECONDS);
        assertEquals(ErrorCode.TIMEOUT, o.code(), o.toString());
    }

    @Test
    void closeFailsSlicesStillWaitingOutADelay() throws Exception {
        Link link = link(Map.of("delay", "10s"));
        List<ConformanceSlice> slices = List.of(link.write(0, 0), link.write(1, 1));
        link.connection.close();
        for (ConformanceSlice s : slices) {
            Outcome o = s.result().get(30, TimeUnit.SECONDS);
            assertEquals(ErrorCode.PEER_FAILED, o.code(), o.toString());
        }
        // the delays' own timers are still due in 10 s; fire them now, as if the delay had run out after the close
        assertEquals(2, link.a.scheduler.firePending(), "the delays were not scheduled on the context's scheduler");
        link.a.transport.close();
        slices.forEach(s -> assertEquals(1, s.settlements(), s.settlementHistory()));
    }

    @Test
    void corruptStatusReportsFailureAlthoughTheBytesLanded() throws Exception {
        Link link = link(Map.of("corrupt_status", "true"));
        Outcome o = link.write(0, 0).result().get(30, TimeUnit.SECONDS);
        assertInjectedFailure(o, "corrupted status");
        link.assertLanded(0, 1);
    }

    @Test
    void dropPeerAfterClosesTheConnectionAndFailsFromThenOn() throws Exception {
        Link link = link(Map.of("drop_peer_after", "2"));
        assertTrue(link.write(0, 0).result().get(30, TimeUnit.SECONDS).completed());
        assertTrue(link.write(1, 1).result().get(30, TimeUnit.SECONDS).completed());
        assertTrue(link.connection.isOpen());
        assertInjectedFailure(link.write(2, 0), "dropped after 2 slices");
        assertFalse(link.connection.isOpen(), "the dropped connection still says it is open");
        Outcome after = link.write(3, 1).result().get(30, TimeUnit.SECONDS);
        assertFalse(after.completed());
        link.assertLanded(0, 2);
    }

    @Test
    void slowPathHoldsBackOnlyItsOwnCompletions() throws Exception {
        // 1 MiB/s: a slice needs 64 ms of link time, far more than uds takes to move it even on a loaded machine (at
        // 16 MiB/s, 4 ms, a slow write had used up the link time and nothing was held back: a flaky run)
        Link link = link(Map.of("slow_path", "1", "slow_rate", "1m"));
        assertEquals(2, link.connection.pathCount(), "uds runs two paths by default");
        for (int i = 0; i < 3; i++) {
            assertTrue(link.write(i, 0).result().get(30, TimeUnit.SECONDS).completed());
        }
        assertEquals(List.of(), link.a.scheduler.delaysNanos(), "completions on the fast path were held back");
        for (int i = 3; i < 6; i++) {
            assertTrue(link.write(i, 1).result().get(30, TimeUnit.SECONDS).completed());
        }
        List<Long> held = link.a.scheduler.delaysNanos();
        assertEquals(3, held.size(), "every completion on the slow path is held back: " + held);
        held.forEach(d -> assertTrue(d > 0, "held back by " + d + " ns"));
        link.assertLanded(0, 6);
    }

    @Test
    void slowPathCarriesItsSlicesOneAfterAnotherAtItsRate() throws Exception {
        Link link = link(Map.of("slow_path", "1", "slow_rate", "8m"));
        long start = System.nanoTime();
        List<ConformanceSlice> posted = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            posted.add(link.write(i, 1));
        }
        for (ConformanceSlice s : posted) {
            assertTrue(s.result().get(30, TimeUnit.SECONDS).completed());
        }
        long took = System.nanoTime() - start;
        long linkTime = (long) (4 * SLICE * 1e9 / (8 << 20));
        assertTrue(took >= linkTime, "4 slices posted together on a link of 8 MiB/s completed in " + took
                + " ns; the link needs " + linkTime + " ns to carry them one after another");
        link.assertLanded(0, 4);
    }

    @Test
    void slowPathThatMissesTheDeadlineTimesOut() throws Exception {
        Link link = link(Map.of("slow_path", "0", "slow_rate", "1k"));
        // 64 KiB at 1 KiB/s take a minute
        ConformanceSlice s = link.write(0, 0, System.nanoTime() + TimeUnit.SECONDS.toNanos(2));
        Outcome o = s.result().get(30, TimeUnit.SECONDS);
        assertEquals(ErrorCode.TIMEOUT, o.code(), o.toString());
        assertTrue(o.message().contains("missed the deadline"), o.message());
    }

    @Test
    void failPathKillsOnlyThatPathAfterItsAllowance() throws Exception {
        Link link = link(Map.of("fail_path", "0", "fail_path_after", "2"));
        assertTrue(link.write(0, 0).result().get(30, TimeUnit.SECONDS).completed());
        assertTrue(link.write(1, 0).result().get(30, TimeUnit.SECONDS).completed());
        assertInjectedFailure(link.write(2, 0), "path killed");
        assertInjectedFailure(link.write(3, 0), "path killed");
        assertTrue(link.write(4, 1).result().get(30, TimeUnit.SECONDS).completed(), "the other path died too");
        link.assertLanded(0, 2);
        link.assertLanded(4, 1);
    }

    // ------------------------------------------------------------------------------------------- fixture

    private static void assertInjectedFailure(ConformanceSlice s, String what) throws Exception {
        assertInjectedFailure(s.result().get(30, TimeUnit.SECONDS), what);
    }

    private static void assertInjectedFailure(Outcome o, String what) {
        assertEquals(ErrorCode.PEER_FAILED, o.code(), o.toString());
        assertTrue(o.message().startsWith("injected: ") && o.message().contains(what), o.message());
    }

    private OptionValues parse(Map<String, String> options) {
        return OptionValues.parse("transports.faulty.", provider.options(), options);
    }

    private Side side(String name, Map<String, String> options) {
        Side s = new Side(name, options);
        sides.add(s);
        return s;
    }

    /** "a" through faulty with {@code faults} over uds to "b" (faulty without faults), with a buffer on each side. */
    private Link link(Map<String, String> faults) {
        Map<String, String> options = new HashMap<>(faults);
        options.put("wraps", UdsTransportProvider.ID);
        Side a = side("a", options);
        Side b = side("b", Map.of("wraps", UdsTransportProvider.ID));
        return new Link(a, b, 48 * SLICE);
    }

    /** Writes slice {@code i} of the source into slot {@code i} of the target. */
    private static final class Link {
        final Side a;
        final Side b;
        final TestLocalMemory.Buffer source;
        final TestLocalMemory.Buffer target;
        final BufferDescriptor remote;
        final PeerConnection connection;

        Link(Side a, Side b, long size) {
            this.a = a;
            this.b = b;
            this.source = a.register(size);
            this.target = b.register(size);
            this.remote = b.describe(target);
            BytePattern.fill(source.segment(), 0, size, 99);
            this.connection = a.transport.connect(b.descriptor());
            a.scheduler.clear();
        }

        ConformanceSlice write(int i, int path) {
            return write(i, path, System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
        }

        ConformanceSlice write(int i, int path, long deadline) {
            ConformanceSlice s = new ConformanceSlice(Opcode.WRITE, source, i * SLICE, remote,
                    target.address() + i * SLICE, SLICE, path, deadline);
            connection.post(s);
            return s;
        }

        void assertLanded(int first, int count) {
            assertEquals(BytePattern.crc32c(source.segment(), first * SLICE, count * SLICE),
                    BytePattern.crc32c(target.segment(), first * SLICE, count * SLICE),
                    "slices " + first + ".." + (first + count - 1) + " did not land intact");
        }
    }

    /** One engine's faulty transport over a test context whose scheduler records what faulty schedules. */
    private final class Side implements AutoCloseable {
        final TestTransportContext context;
        final RecordingScheduler scheduler = new RecordingScheduler();
        final Arena arena = Arena.ofShared();
        final Transport transport;
        private final List<BufferDescriptor> buffers = new CopyOnWriteArrayList<>();

        Side(String name, Map<String, String> options) {
            context = new TestTransportContext(name, MACHINE, FaultInjectingTransportProvider.ID, provider.options(),
                    options, Duration.ofSeconds(3));
            try {
                transport = provider.create(new Forwarding(context, scheduler));
            } catch (RuntimeException e) {
                close();
                throw e;
            }
        }

        TestLocalMemory.Buffer register(long size) {
            MemorySegment memory = arena.allocate(size, 64);
            TestLocalMemory.Buffer b = context.memory().register(memory, Permission.READ_WRITE);
            buffers.add(b.describe(FaultInjectingTransportProvider.ID, transport.registerBuffer(b).orElseThrow()));
            return b;
        }

        BufferDescriptor describe(TestLocalMemory.Buffer b) {
            return buffers.stream().filter(d -> d.address() == b.address()).findFirst().orElseThrow();
        }

        SegmentDescriptor descriptor() {
            return SegmentDescriptor.builder().name(context.segmentName()).machineId(MACHINE).host("127.0.0.1")
                    .controlPort(0).transports(List.of(FaultInjectingTransportProvider.ID))
                    .transportAttributes(Map.of(FaultInjectingTransportProvider.ID, transport == null ? Map.of() : transport.segmentAttributes()))
                    .buffers(buffers).version(1).build();
        }

        @Override
        public void close() {
            if (transport != null) {
                transport.close();
            }
            context.close();
            scheduler.shutdownNow();
            arena.close();
        }
    }

    /** Records the delays of one-shot schedules (faulty's); periodic ones (a transport's watchdog) pass through. */
    static final class RecordingScheduler extends ScheduledThreadPoolExecutor {
        private final List<Long> delays = new CopyOnWriteArrayList<>();
        private final List<Pending> pending = new CopyOnWriteArrayList<>();

        private record Pending(Runnable command, ScheduledFuture<?> future) {
        }

        RecordingScheduler() {
            super(1, Thread.ofPlatform().daemon().name("recording-timer").factory());
        }

        @Override
        public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
            delays.add(unit.toNanos(delay));
            ScheduledFuture<?> f = super.schedule(command, delay, unit);
            pending.add(new Pending(command, f));
            return f;
        }

        /**
         * Runs now, on the caller, every one-shot task still waiting for its time (taking it off the timer), as if its
         * delay had passed; returns how many ran. Virtual time for what faulty schedules, without waiting it out.
         */
        int firePending() {
            int ran = 0;
            for (Pending p : pending) {
                pending.remove(p);
                if (p.future().cancel(false)) {
                    p.command().run();
                    ran++;
                }
            }
            return ran;
        }

        List<Long> delaysNanos() {
            return List.copyOf(delays);
        }

        List<Long> delaysMillis() {
            return delays.stream().map(TimeUnit.NANOSECONDS::toMillis).toList();
        }

        void clear() {
            delays.clear();
            pending.clear();
        }
    }

    /** The test context with the recording scheduler in place of its own. */
    private record Forwarding(TestTransportContext context, ScheduledExecutorService scheduler) implements TransportContext {
        @Override public String segmentName() { return context.segmentName(); }
        @Override public String host() { return context.host(); }
        @Override public String machineId() { return context.machineId(); }
        @Override public OptionValues options() { return context.options(); }
        @Override public LocalMemory localMemory() { return context.localMemory(); }
        @Override public Executor workers() { return context.workers(); }
        @Override public ControlPlane controlPlane() { return context.controlPlane(); }
        @Override public Duration transferTimeout() { return context.transferTimeout(); }
    }
}
