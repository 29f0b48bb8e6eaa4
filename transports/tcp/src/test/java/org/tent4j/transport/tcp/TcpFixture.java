package org.tent4j.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.zip.CRC32;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SecuritySettings;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.TimeSource;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;
import org.tent4j.testkit.transport.TestTransportContext;

/**
 * Two tcp transports in one JVM: "a" initiates, "b" is the target. Memory comes from one shared arena that the
 * fixture frees last, after both transports are closed.
 */
final class TcpFixture implements AutoCloseable {
    static final TcpTransportProvider PROVIDER = new TcpTransportProvider();
    /** Hang guard for awaiting one slice; far beyond any honest transfer here. */
    static final long AWAIT_SECONDS = 30;

    final Arena arena = Arena.ofShared();
    final TestTransportContext contextA;
    final TestTransportContext contextB;
    final TcpTransport a;
    final TcpTransport b;

    TcpFixture() {
        this(Map.of(), Map.of());
    }

    TcpFixture(Map<String, String> optionsA, Map<String, String> optionsB) {
        this(optionsA, optionsB, Duration.ofSeconds(10));
    }

    TcpFixture(Map<String, String> optionsA, Map<String, String> optionsB, Duration targetTransferTimeout) {
        this(optionsA, optionsB, targetTransferTimeout, SecuritySettings.NONE, SecuritySettings.NONE);
    }

    /** With the security settings engine "a" and engine "b" would hand their transports. */
    TcpFixture(Map<String, String> optionsA, Map<String, String> optionsB, Duration targetTransferTimeout,
               SecuritySettings securityA, SecuritySettings securityB) {
        this(optionsA, optionsB, targetTransferTimeout, securityA, securityB, TimeSource.SYSTEM);
    }

    /** With the clock engine "a" would hand its transport, so the initiator's deadlines follow a test's time. */
    TcpFixture(Map<String, String> optionsA, TimeSource clockA) {
        this(optionsA, Map.of(), Duration.ofSeconds(10), SecuritySettings.NONE, SecuritySettings.NONE, clockA);
    }

    private TcpFixture(Map<String, String> optionsA, Map<String, String> optionsB, Duration targetTransferTimeout,
                       SecuritySettings securityA, SecuritySettings securityB, TimeSource clockA) {
        contextA = context("a", optionsA).clock(clockA);
        contextB = new TestTransportContext("b", "machine-b", "tcp", PROVIDER.options(), optionsB,
                targetTransferTimeout);
        a = (TcpTransport) PROVIDER.create(new SecuredContext(contextA, securityA));
        try {
            b = (TcpTransport) PROVIDER.create(new SecuredContext(contextB, securityB));
        } catch (RuntimeException e) {
            a.close();
            throw e;
        }
    }

    static TestTransportContext context(String name, Map<String, String> options) {
        return new TestTransportContext(name, "machine-" + name, "tcp", PROVIDER.options(), options,
                Duration.ofSeconds(10));
    }

    /** Registers all of {@code memory} with the target's engine. */
    TestLocalMemory.Buffer registerAtTarget(MemorySegment memory, Permission permission) {
        return contextB.memory().register(memory, permission);
    }

    TestLocalMemory.Buffer registerAtInitiator(MemorySegment memory) {
        return contextA.memory().register(memory, Permission.READ_WRITE);
    }

    SegmentDescriptor targetDescriptor(TestLocalMemory.Buffer... buffers) {
        return descriptor("b", b.segmentAttributes(), buffers);
    }

    static SegmentDescriptor descriptor(String name, Map<String, String> tcpAttributes,
                                        TestLocalMemory.Buffer... buffers) {
        List<BufferDescriptor> described = java.util.Arrays.stream(buffers)
                .map(buf -> buf.describe("tcp", Map.of())).toList();
        return SegmentDescriptor.builder().name(name).machineId("machine-" + name).host("127.0.0.1").controlPort(0)
                .transports(List.of("tcp")).transportAttributes(Map.of("tcp", tcpAttributes)).buffers(described)
                .version(1).build();
    }

    static Map<String, String> portOnly(int port) {
        return Map.of("port", Integer.toString(port));
    }

    PeerConnection connect(TestLocalMemory.Buffer... targetBuffers) {
        return a.connect(targetDescriptor(targetBuffers));
    }

    static TestSlice slice(Opcode op, TestLocalMemory.Buffer local, long localOffset, TestLocalMemory.Buffer remote,
                           long remoteOffset, long length) {
        return sliceAt(op, local, localOffset, remote, remote.address() + remoteOffset, length,
                System.nanoTime() + TimeUnit.SECONDS.toNanos(60));
    }

    static TestSlice sliceAt(Opcode op, TestLocalMemory.Buffer local, long localOffset, TestLocalMemory.Buffer remote,
                             long remoteAddress, long length, long deadline) {
        return new TestSlice(op, local, localOffset, remote == null ? null : remote.describe("tcp", Map.of()),
                remoteAddress, length, deadline);
    }

    /** Waits for success; fails the test with the slice's error otherwise. */
    static void awaitDone(TestSlice s) {
        try {
            s.result().get(AWAIT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            fail("slice failed: " + e.getCause(), e.getCause());
        } catch (InterruptedException | TimeoutException e) {
            fail("slice did not finish: " + e);
        }
        assertEquals(1, s.completions(), "completed exactly once");
    }

    /** Waits for failure and returns it. */
    static TransferException awaitFailure(TestSlice s) {
        try {
            s.result().get(AWAIT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            assertEquals(1, s.completions(), "failed exactly once");
            return assertInstanceOf(TransferException.class, e.getCause());
        } catch (InterruptedException | TimeoutException e) {
            fail("slice did not finish: " + e);
        }
        return fail("slice succeeded but should have failed");
    }

    /** Waits for the slice to finish either way; whether it failed. */
    static boolean finishedWithFailure(TestSlice s) {
        try {
            s.result().get(AWAIT_SECONDS, TimeUnit.SECONDS);
            return false;
        } catch (ExecutionException e) {
            return true;
        } catch (InterruptedException | TimeoutException e) {
            return fail("slice did not finish: " + e);
        }
    }

    static ErrorCode awaitCode(TestSlice s) {
        return awaitFailure(s).code();
    }

    static void fillRandom(MemorySegment m, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        long n = m.byteSize();
        long i = 0;
        for (; i + 8 <= n; i += 8) {
            m.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        }
        for (; i < n; i++) {
            m.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
    }

    static long crc(MemorySegment m) {
        CRC32 c = new CRC32();
        c.update(m.asByteBuffer());
        return c.getValue();
    }

    /** A segment of {@code guard + size + guard} bytes whose guards hold a known pattern. */
    static final class Guarded {
        final MemorySegment whole;
        final MemorySegment middle;
        final long guard;
        private final long guardCrc;

        Guarded(Arena arena, long size, long guard) {
            this.guard = guard;
            whole = arena.allocate(guard + size + guard, 64);
            fillRandom(whole, 0x6A4D ^ size);
            middle = whole.asSlice(guard, size);
            guardCrc = guardsCrc();
        }

        private long guardsCrc() {
            CRC32 c = new CRC32();
            c.update(whole.asSlice(0, guard).asByteBuffer());
            c.update(whole.asSlice(whole.byteSize() - guard, guard).asByteBuffer());
            return c.getValue();
        }

        void assertGuardsIntact() {
            assertEquals(guardCrc, guardsCrc(), "bytes outside the registered buffer changed");
        }

        long beforeAddress() {
            return whole.address() + 8;
        }

        long afterAddress() {
            return whole.address() + guard + middle.byteSize() + 8;
        }
    }

    @Override
    public void close() {
        try {
            a.close();
        } finally {
            try {
                b.close();
            } finally {
                contextA.close();
                contextB.close();
                arena.close();
            }
        }
    }
}
