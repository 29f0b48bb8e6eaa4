package org.tent4j.transport.mooncake;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Map;

import org.tent4j.api.Permission;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.Transport;
import org.tent4j.testkit.conformance.BytePattern;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestTransportContext;

/** The tent4j side of a test against a Mooncake peer: the transport on an engine-less context, and its memory. */
final class Tent4jSide implements AutoCloseable {
    final Arena arena = Arena.ofShared();
    final TestTransportContext context;
    final Transport transport;

    Tent4jSide(Map<String, String> options, Duration transferTimeout) {
        MooncakeTcpTransportProvider p = new MooncakeTcpTransportProvider();
        context = new TestTransportContext("tent4j-node", "tent4j-machine", p.id(), p.options(), options,
                transferTimeout);
        try {
            transport = p.create(context);
        } catch (RuntimeException e) {
            context.close();
            arena.close();
            throw e;
        }
    }

    TestLocalMemory.Buffer register(MemorySegment memory, Permission permission) {
        TestLocalMemory.Buffer b = context.memory().register(memory, permission);
        if (transport.registerBuffer(b).isEmpty()) {
            throw new AssertionError("mooncake-tcp declined host buffer " + b);
        }
        return b;
    }

    TestLocalMemory.Buffer allocate(long size, Permission permission) {
        return register(arena.allocate(size, 64), permission);
    }

    /** An attribute the transport publishes, as a number (its data or handshake port). */
    int attribute(String name) {
        return Integer.parseInt(transport.segmentAttributes().get(name));
    }

    /** Memory goes last: nothing of the transport may touch it by then. */
    @Override
    public void close() {
        transport.close();
        context.close();
        arena.close();
    }

    /** A byte pattern that differs at every offset of a few KiB, so a misplaced byte shows. */
    static void fill(MemorySegment m, long seed) {
        BytePattern.fill(m, 0, m.byteSize(), seed);
    }

    static long crc(MemorySegment m) {
        return BytePattern.crc32c(m, 0, m.byteSize());
    }

    static long crc(byte[] b, int offset, int length) {
        return crc(MemorySegment.ofArray(b).asSlice(offset, length));
    }

    void unregister(LocalBuffer buffer) {
        context.memory().unregister(buffer);
        transport.unregisterBuffer(buffer);
    }
}
