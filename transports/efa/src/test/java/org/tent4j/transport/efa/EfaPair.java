package org.tent4j.transport.efa;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.zip.CRC32;

import org.junit.jupiter.api.Assumptions;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Transport;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;
import org.tent4j.testkit.transport.TestTransportContext;

/**
 * Two efa transports in one JVM ({@code a} initiates, {@code b} is the target) over one libfabric provider, with
 * helpers to register memory, describe it as a peer would see it, and move slices.
 */
final class EfaPair implements AutoCloseable {
    static final EfaTransportProvider PROVIDER = new EfaTransportProvider();
    static final String MACHINE = "machine-efa-test";

    final String provider;
    final TestTransportContext ctxA;
    final TestTransportContext ctxB;
    final Transport a;
    final Transport b;
    final Arena arena = Arena.ofShared();
    private PeerConnection toB;

    EfaPair(String provider) {
        this(provider, Map.of());
    }

    EfaPair(String provider, Map<String, String> extraOptions) {
        this(provider, extraOptions, 0);
    }

    /** With {@code maxOpBytes > 0}, single operations are capped at that size, so longer slices move in chunks. */
    EfaPair(String provider, Map<String, String> extraOptions, long maxOpBytes) {
        this.provider = provider;
        Map<String, String> opts = new java.util.HashMap<>(extraOptions);
        opts.put(EfaTransportProvider.OPT_PROVIDER, provider);
        ctxA = new TestTransportContext("a", MACHINE, EfaTransportProvider.ID, PROVIDER.options(), opts,
                Duration.ofSeconds(20));
        ctxB = new TestTransportContext("b", MACHINE, EfaTransportProvider.ID, PROVIDER.options(), opts,
                Duration.ofSeconds(20));
        Transport ta = null;
        Transport tb = null;
        try {
            ta = create(ctxA, maxOpBytes);
            tb = create(ctxB, maxOpBytes);
        } catch (RuntimeException e) {
            if (ta != null) {
                ta.close();
            }
            ctxA.close();
            ctxB.close();
            arena.close();
            throw e;
        }
        a = ta;
        b = tb;
    }

    private static Transport create(TestTransportContext ctx, long maxOpBytes) {
        if (maxOpBytes <= 0) {
            return PROVIDER.create(ctx);
        }
        try {
            LibFabric lib = LibFabric.load();
            var o = ctx.options();
            return new EfaTransport(ctx.segmentName(), lib, FabricInfo.query(lib, o.getString("provider")),
                    o.getInt("endpoint_count"), o.getInt("cq_size"), o.getDuration("progress_interval"), maxOpBytes,
                    ctx.clock());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Skips the calling test unless {@code provider} offers RDM + RMA endpoints here. */
    static void assumeProvider(String provider) {
        var availability = Efa.availability(provider);
        Assumptions.assumeTrue(availability.isAvailable(), () -> "provider " + provider + ": "
                + availability.reason());
    }

    /** Memory registered with transport {@code t} (a or b) under {@code permission}; returns it and its key map. */
    Registered register(Transport t, long size, Permission permission) {
        TestTransportContext ctx = t == a ? ctxA : ctxB;
        MemorySegment mem = arena.allocate(size, 4096);
        TestLocalMemory.Buffer buffer = ctx.memory().register(mem, permission);
        Map<String, String> attrs = t.registerBuffer(buffer).orElseThrow();
        return new Registered(buffer, attrs, buffer.describe(EfaTransportProvider.ID, attrs));
    }

    record Registered(TestLocalMemory.Buffer buffer, Map<String, String> attrs, BufferDescriptor descriptor) {
        MemorySegment segment() {
            return buffer.segment();
        }
    }

    SegmentDescriptor descriptorOfB(BufferDescriptor... buffers) {
        return SegmentDescriptor.builder().name("b").machineId(MACHINE).host("127.0.0.1").controlPort(0)
                .transports(List.of(EfaTransportProvider.ID))
                .transportAttributes(Map.of(EfaTransportProvider.ID, b.segmentAttributes())).buffers(List.of(buffers))
                .version(1).build();
    }

    PeerConnection connectToB(BufferDescriptor... buffers) {
        if (toB == null) {
            toB = a.connect(descriptorOfB(buffers));
        }
        return toB;
    }

    static TestSlice slice(Opcode op, Registered local, long localOffset, BufferDescriptor remote, long remoteOffset,
                           long length) {
        return slice(op, local, localOffset, remote, remoteOffset, length, 30_000);
    }

    static TestSlice slice(Opcode op, Registered local, long localOffset, BufferDescriptor remote, long remoteOffset,
                           long length, long deadlineMillis) {
        return new TestSlice(op, local.buffer(), localOffset, remote, remote.address() + remoteOffset, length,
                System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(deadlineMillis));
    }

    /** Waits for a slice and asserts it completed exactly once. */
    static void awaitDone(TestSlice s) {
        try {
            s.result().get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new AssertionError("slice failed: " + e.getCause(), e.getCause());
        } catch (InterruptedException | TimeoutException e) {
            throw new AssertionError("slice did not finish: " + e, e);
        }
        assertEquals(1, s.completions(), "completed exactly once");
    }

    /** Waits for a slice: true if it completed, false if it failed with PEER_FAILED; any other outcome fails the test. */
    static boolean completesOrPeerFails(TestSlice s) {
        try {
            s.result().get(60, TimeUnit.SECONDS);
            assertEquals(1, s.completions(), "completed exactly once");
            return true;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof TransferException t && t.code() == ErrorCode.PEER_FAILED) {
                assertEquals(1, s.completions(), "failed exactly once");
                return false;
            }
            throw new AssertionError("slice failed: " + e.getCause(), e.getCause());
        } catch (InterruptedException | TimeoutException e) {
            throw new AssertionError("slice did not finish: " + e, e);
        }
    }

    /** Waits for a slice that must fail and returns its code. */
    static ErrorCode awaitFailure(TestSlice s) {
        try {
            s.result().get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            assertTrue(e.getCause() instanceof TransferException, () -> "unexpected " + e.getCause());
            assertEquals(1, s.completions(), "failed exactly once");
            return ((TransferException) e.getCause()).code();
        } catch (InterruptedException | TimeoutException e) {
            throw new AssertionError("slice did not finish: " + e, e);
        }
        throw new AssertionError("slice completed but was expected to fail");
    }

    static String failureMessage(TestSlice s) {
        try {
            s.result().get(60, TimeUnit.SECONDS);
            return null;
        } catch (ExecutionException e) {
            return e.getCause().getMessage();
        } catch (InterruptedException | TimeoutException e) {
            throw new AssertionError(e);
        }
    }

    /** Deterministic pseudo-random bytes (xorshift), written as longs plus a tail. */
    static void fill(MemorySegment seg, long seed) {
        long x = seed * 0x9E3779B97F4A7C15L + 1;
        long n = seg.byteSize();
        long i = 0;
        for (; i + 8 <= n; i += 8) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            seg.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, i, x);
        }
        for (; i < n; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            seg.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) x);
        }
    }

    static long crc(MemorySegment seg) {
        CRC32 crc = new CRC32();
        ByteBuffer bb = seg.asByteBuffer();
        crc.update(bb);
        return crc.getValue();
    }

    @Override
    public void close() {
        if (toB != null) {
            toB.close();
        }
        a.close();
        b.close();
        ctxA.close();
        ctxB.close();
        arena.close();
    }
}
