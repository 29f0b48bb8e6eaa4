package org.tent4j.transport.shm;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.MemoryAllocator.Allocation;
import org.tent4j.spi.PeerConnection;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;
import org.tent4j.testkit.transport.TestTransportContext;

/**
 * A few seconds of WRITEs through the transport, for a rough GB/s figure; not a unit test. Run with the test class
 * path: {@code java --enable-native-access=ALL-UNNAMED -cp ... org.tent4j.transport.shm.ShmCopyThroughput [sliceBytes...]}.
 */
public final class ShmCopyThroughput {
    private ShmCopyThroughput() {
    }

    public static void main(String[] args) throws Exception {
        long total = 256L << 20;
        long[] sliceSizes = args.length == 0 ? new long[]{64 << 10, 1 << 20, 16 << 20}
                : java.util.Arrays.stream(args).mapToLong(Long::parseLong).toArray();
        ShmTransportProvider provider = new ShmTransportProvider();
        try (TestTransportContext ca = ShmTransportTest.context("a", Map.of());
             TestTransportContext cb = ShmTransportTest.context("b", Map.of());
             Arena arena = Arena.ofShared()) {
            ShmTransport a = (ShmTransport) provider.create(ca);
            ShmTransport b = (ShmTransport) provider.create(cb);
            Allocation alloc = b.allocator().orElseThrow().allocate(total, Location.CPU);
            TestLocalMemory.Buffer rb = cb.memory().register(alloc.segment(), Permission.READ_WRITE, alloc.backing());
            BufferDescriptor remote = rb.describe("shm", b.registerBuffer(rb).orElseThrow());
            TestLocalMemory.Buffer local = ca.memory().register(arena.allocate(total, 4096), Permission.READ_WRITE);
            local.segment().fill((byte) 1);
            PeerConnection conn = a.connect(ShmTransportTest.segmentB(remote));
            for (long slice : sliceSizes) {
                for (int round = 0; round < 4; round++) {
                    long start = System.nanoTime();
                    List<TestSlice> slices = new ArrayList<>();
                    for (long at = 0; at + slice <= total; at += slice) {
                        TestSlice s = new TestSlice(Opcode.WRITE, local, at, remote, remote.address() + at, slice,
                                System.nanoTime() + TimeUnit.SECONDS.toNanos(60));
                        conn.post(s);
                        slices.add(s);
                    }
                    for (TestSlice s : slices) {
                        s.result().get(60, TimeUnit.SECONDS);
                    }
                    double seconds = (System.nanoTime() - start) / 1e9;
                    if (round > 0) {
                        System.out.printf("slice %,d B: %.2f GB/s (%d slices, %.1f ms)%n", slice,
                                slices.size() * (double) slice / seconds / 1e9, slices.size(), seconds * 1e3);
                    }
                }
            }
            a.close();
            b.close();
        }
    }
}
